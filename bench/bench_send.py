"""What one durable send costs through a warm handle, alone and with 30 threads at once.

The server benches (``bench_rest.py``, ``bench_mcp.py``) add HTTP, JSON-RPC and
auth on top of this; here is the handle's own share: ``dc.send(Message(...))``
(two durable appends: the message into the recipient's box, then the sender's
``sent`` record, each fsynced), first one after another, then from 30 threads
that each send to the next agent (group commit lets their fsyncs overlap).
Reference in the same run: one raw append + fsync. ``--profile`` prints where
the sequential sends spend their CPU (cProfile, top functions by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import tempfile
import threading
import time
from pathlib import Path

from _load import agents_home, pct, raw_fsync_rate
from dovecote.api import open_home
from dovecote.verbs import Message


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--clients", type=int, default=30)
    ap.add_argument("--sends", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-send-") as tmp:
        home, names, _ = agents_home(Path(tmp), args.clients)
        dc = open_home(home)
        raw = raw_fsync_rate(Path(tmp))
        n = len(names)
        seq_rates, thr_rates, seq_cpu, thr_cpu, thr_p95 = [], [], [], [], []
        for r in range(args.rounds):
            lat: list[float] = []
            c0, t0 = time.process_time(), time.perf_counter()
            prof = cProfile.Profile() if args.profile and r == 0 else None
            if prof:
                prof.enable()
            for k in range(args.sends * 3):
                a, b = names[k % n], names[(k + 1) % n]
                s = time.perf_counter()
                dc.send(Message(recipient=b, subject=f"seq {r} {k}", body="b", sender=a))
                lat.append((time.perf_counter() - s) * 1000)
            if prof:
                prof.disable()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            seq_rates.append(len(lat) / wall)
            seq_cpu.append(cpu / len(lat) * 1000)

            tlat: list[float] = []
            lock = threading.Lock()
            gate = threading.Barrier(n)

            def work(i: int, r: int = r, tlat: list[float] = tlat, lock: threading.Lock = lock,
                     gate: threading.Barrier = gate) -> None:
                gate.wait()
                for k in range(args.sends):
                    s = time.perf_counter()
                    dc.send(Message(recipient=names[(i + 1) % n], subject=f"thr {r} {i} {k}", body="b",
                                    sender=names[i]))
                    with lock:
                        tlat.append((time.perf_counter() - s) * 1000)

            ts = [threading.Thread(target=work, args=(i,)) for i in range(n)]
            c0, t0 = time.process_time(), time.perf_counter()
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            thr_rates.append(len(tlat) / wall)
            thr_cpu.append(cpu / len(tlat) * 1000)
            thr_p95.append(pct(tlat, 95))
            print(f"round {r + 1}: sequential {seq_rates[-1]:.0f} sends/s ({seq_cpu[-1]:.2f} ms CPU each, "
                  f"p50 {pct(lat, 50):.2f} ms); {n} threads {thr_rates[-1]:.0f} sends/s ({thr_cpu[-1]:.2f} ms CPU "
                  f"each, p50 {pct(tlat, 50):.1f} ms, p95 {thr_p95[-1]:.1f} ms)", flush=True)
            if prof:
                pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        m = statistics.median
        print(f"\nhandle send, medians of {args.rounds}: sequential {m(seq_rates):.0f}/s at {m(seq_cpu):.2f} ms CPU "
              f"a send; {n} threads {m(thr_rates):.0f}/s at {m(thr_cpu):.2f} ms CPU a send, p95 {m(thr_p95):.1f} ms")
        print(f"reference (same run): one raw append + fsync {raw[0]:.0f} µs ({raw[1]:.0f}/s); a send is two, so "
              f"{raw[1] / 2:.0f} sends/s one after another")


if __name__ == "__main__":
    main()

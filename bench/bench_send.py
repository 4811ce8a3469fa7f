"""What one durable send costs through a warm handle, alone and with 30 threads at once.

The server benches (``bench_rest.py``, ``bench_mcp.py``) add HTTP, JSON-RPC and
auth on top of this; here is the handle's own share: ``dc.send(Message(...))``
(two durable appends: the message into the recipient's box, then the sender's
``sent`` record, each fsynced), first one after another, then from 30 threads
that each send to the next agent (``ring``: their fsyncs, of different files,
overlap), then from 30 threads that all send to one agent (``hot``: group
commit shares the fsyncs of that one box). Each phase counts its fsyncs.
Reference in the same run: one raw append + fsync. ``--profile`` prints where
the sequential sends spend their CPU (cProfile, top functions by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

from _load import agents_home, pct, raw_fsync_rate
from dovecote.handle.api import open_home
from dovecote.verbs import Message

Phase = tuple[float, float, float, float, float]  # sends/s, ms CPU a send, fsyncs a send, p50 ms, p95 ms


def measure(threads: int, per: int, send: Callable[[int, int], None], synced: list[int]) -> Phase:
    """``send(thread, k)`` for k < ``per`` from ``threads`` threads released together."""
    lat: list[float] = []
    lock = threading.Lock()
    gate = threading.Barrier(threads)

    def work(i: int) -> None:
        gate.wait()
        for k in range(per):
            s = time.perf_counter()
            send(i, k)
            with lock:
                lat.append((time.perf_counter() - s) * 1000)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    synced[0] = 0
    c0, t0 = time.process_time(), time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return len(lat) / wall, cpu / len(lat) * 1000, synced[0] / len(lat), pct(lat, 50), pct(lat, 95)


def show(name: str, p: Phase) -> str:
    return (f"{name} {p[0]:.0f} sends/s ({p[1]:.2f} ms CPU, {p[2]:.2f} fsyncs a send; p50 {p[3]:.1f} ms, "
            f"p95 {p[4]:.1f} ms)")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--clients", type=int, default=30)
    ap.add_argument("--sends", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-send-") as tmp:
        home, names, _ = agents_home(Path(tmp), args.clients + 1)
        hot, names = names[-1], names[:-1]
        dc = open_home(home)
        raw = raw_fsync_rate(Path(tmp))
        n = len(names)
        real_fsync, synced = os.fsync, [0]

        def counted(fd: int) -> None:  # how many fsyncs the sends cost (group commit shares them)
            synced[0] += 1
            real_fsync(fd)

        os.fsync = counted
        phases: dict[str, list[Phase]] = {"sequential": [], "ring": [], "hot": []}
        for r in range(args.rounds):
            prof = cProfile.Profile() if args.profile and r == 0 else None
            if prof:
                prof.enable()
            phases["sequential"].append(measure(1, args.sends * 3, lambda _, k, r=r: dc.send(Message(
                recipient=names[(k + 1) % n], subject=f"seq {r} {k}", body="b", sender=names[k % n])), synced))
            if prof:
                prof.disable()
            phases["ring"].append(measure(n, args.sends, lambda i, k, r=r: dc.send(Message(
                recipient=names[(i + 1) % n], subject=f"ring {r} {i} {k}", body="b", sender=names[i])), synced))
            phases["hot"].append(measure(n, args.sends, lambda i, k, r=r: dc.send(Message(
                recipient=hot, subject=f"hot {r} {i} {k}", body="b", sender=names[i])), synced))
            print(f"round {r + 1}: " + "; ".join(show(k, v[-1]) for k, v in phases.items()), flush=True)
            if prof:
                pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        print(f"\nhandle send, medians of {args.rounds} rounds ({n} threads for ring and hot):")
        for k, v in phases.items():
            print("  " + show(k, cast(Phase, tuple(statistics.median(p[j] for p in v) for j in range(5)))))
        print(f"reference (same run): one raw append + fsync {raw[0]:.0f} µs ({raw[1]:.0f}/s); a send is two, so "
              f"{raw[1] / 2:.0f} sends/s one after another")


if __name__ == "__main__":
    main()

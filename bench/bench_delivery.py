"""Delivery (issue 9): intake throughput, ack reconciliation, and the library send + ack round trip.

Targets (issue 9):

* 10,000 envelope files dropped into ``intake/pending`` are delivered durably
  (fsynced, files moved to ``processed/``) at >= 5,000 envelopes/s. Reference
  in the same run: a bare loop that reads and parses each file, appends the
  bytes to one file with one fsync, and renames each file.
* 10,000 pending acks past due are reconciled (one reping letter each, appended
  under the box locks) at >= 5,000 acks/s, with the cost flat in history: the
  same pass over boxes that also hold 40,000 settled (acked) deliveries. Warm
  handle (the folds fed before), as a mailman loop runs; a cold pass (a new
  handle that reads the boxes first) is printed too.
* a library send (a task) + ack round trip takes <= 2 ms median (warm handle, fsynced), flat in
  history: the same trips over boxes that already hold 40,000 settled deliveries.

Every part prints the CPU time of the process beside the wall time: on a
shared machine the wall time moves with the load, the CPU time much less.

Run: .venv/bin/python bench/bench_delivery.py [--envelopes N] [--history N] [--repeat R] [--trips N] [--only P]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from _common import fmt_s, med, settle, timed, verdict
from dovecote.handle.api import Dovecote, init, open_home
from dovecote.model.addresses import entity
from dovecote.model.letters import canonical_line, letter_id
from dovecote.verbs import Ack, EntityAdd, Intake, Send

AGENTS = ("arbiter", "aya", "haiku", "heru", "jabari", "kimi", "tariq")
WORKERS = [a for a in AGENTS if a != "aya"]
T0 = datetime(2026, 3, 18, 10, 0, tzinfo=UTC)
RATE_TARGET = 5000.0
TRIP_TARGET = 0.002


def home(root: Path) -> Dovecote:
    h, _ = init(root / ".dovecote", owner_root=str(root))
    dc = open_home(h)
    for a in AGENTS:
        dc.add_entity(EntityAdd(entity_id=a))
    return open_home(h)


def envelope(i: int) -> dict[str, object]:
    return {
        "envelope_id": f"env_bench_{i:08d}", "type": "task", "from": "aya", "to": WORKERS[i % len(WORKERS)],
        "ts": "2026-03-18T10:00:00+00:00", "work_item_id": f"wi-{i % 97}", "trust_plane": "plane-b",
        "intent_class": "investigate", "risk": "low", "subject": f"review change {i}",
        "body": "please review the attached change and ack when you have it", "priority": "normal",
        "task_type": "architecture-review", "constraints": [], "acceptance_criteria": [],
        "ack_policy": {"ack_required": True, "ack_timeout_s": 300, "max_repings": 2, "reping_interval_s": 300,
                       "escalation_target": "aya"},
    }


def drop_all(folder: Path, n: int) -> None:
    pending = folder / "pending"
    pending.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (pending / f"env_bench_{i:08d}.json").write_bytes(orjson.dumps(envelope(i)))


def bare_intake(folder: Path) -> int:
    """The reference: read + parse each file, one append + fsync of all bytes, rename each file."""
    pending, done = folder / "pending", folder / "processed"
    done.mkdir(exist_ok=True)
    names = sorted(os.listdir(pending))
    out = []
    for name in names:
        raw = (pending / name).read_bytes()
        orjson.loads(raw)
        out.append(raw.replace(b"\n", b" "))
    with open(folder / "all.jsonl", "ab") as f:
        f.write(b"\n".join(out) + b"\n")
        f.flush()
        os.fsync(f.fileno())
    for name in names:
        os.replace(pending / name, done / name)
    for d in (pending, done):
        fd = os.open(d, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    return len(names)


def cpu() -> float:
    """User + system CPU seconds of this process so far (``os.times`` counts in 10 ms ticks; this does not)."""
    return time.process_time()


def bench_intake(n: int, repeat: int) -> None:
    ours, bare, ours_cpu = [], [], []
    for r in range(repeat):
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            dc = home(Path(tmp))
            folder = Path(tmp) / "intake"
            drop_all(folder, n)
            settle()
            c0 = cpu()
            t, run = timed(lambda dc=dc, folder=folder: dc.intake(Intake(dir=str(folder)), now=T0))
            ours_cpu.append(cpu() - c0)
            assert run.processed == n and run.letters_appended == n, run.to_dict()
            ours.append(t)
            ref = Path(tmp) / "ref"
            drop_all(ref, n)
            settle()
            tb, count = timed(lambda ref=ref: bare_intake(ref))
            assert count == n
            bare.append(tb)
        print(f"  round {r + 1}: dovecote {fmt_s(ours[-1])} ({n / ours[-1]:,.0f}/s, CPU {fmt_s(ours_cpu[-1])}), "
              f"bare {fmt_s(bare[-1])}")
    rate = n / med(ours)
    print(f"intake {n:,} envelopes: median {fmt_s(med(ours))} = {rate:,.0f} envelopes/s, CPU {fmt_s(med(ours_cpu))} "
          f"= {n / med(ours_cpu):,.0f}/s of CPU (bare read+parse+append+rename {fmt_s(med(bare))}, "
          f"{med(ours) / med(bare):.2f}x) target >= {RATE_TARGET:,.0f}/s {verdict(rate >= RATE_TARGET)}")


def task_line(i: int, to: str) -> bytes:
    return canonical_line({
        "ts": "2026-03-18T10:00:00Z", "agent": "aya", "kind": "task", "envelope_id": f"env_r_{i:08d}",
        "from": "aya", "to": to, "subject": f"task {i}", "body": "", "priority": "normal",
        "work_item_id": f"wi-{i % 97}", "thread_id": f"wi-{i % 97}", "trust_plane": "plane-b",
        "intent_class": "investigate", "risk": "low", "task_type": "general", "constraints": [],
        "acceptance_criteria": [],
        "ack_policy": {"ack_required": True, "ack_timeout_s": 300, "max_repings": 2, "reping_interval_s": 300,
                       "escalation_target": "aya"},
    })


def build_acks(dc: Dovecote, pending: int, history: int) -> None:
    """``pending`` tasks awaiting an ack, plus ``history`` tasks acked long ago, written straight into the boxes."""
    per: dict[str, list[bytes]] = {w: [] for w in WORKERS}
    for i in range(history):
        w = WORKERS[i % len(WORKERS)]
        line = task_line(1_000_000 + i, w)
        per[w].append(line)
        per[w].append(canonical_line({"ts": "2026-03-18T10:01:00Z", "agent": w, "kind": "ack",
                                      "ref": letter_id(line), "status": "accepted"}))
    for i in range(pending):
        w = WORKERS[i % len(WORKERS)]
        per[w].append(task_line(i, w))
    for w, lines in per.items():
        dc.store.append(entity(w), lines)


def bench_reconcile(n: int, history: int, repeat: int) -> None:
    from dovecote.ops.delivery.mailman import reconcile

    when = T0 + timedelta(minutes=6)
    for hist in (0, history):
        warm, cold, warm_cpu = [], [], []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
                dc = home(Path(tmp))
                build_acks(dc, n, hist)
                dc.trackers(now=when)  # feed the folds, as a mailman loop's earlier passes did
                settle()
                c0 = cpu()
                t, done = timed(lambda dc=dc: reconcile(dc.context, when))
                warm_cpu.append(cpu() - c0)
                assert done.repings == n, done.to_dict()
                warm.append(t)
            with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
                dc = home(Path(tmp))
                build_acks(dc, n, hist)
                cold_dc = open_home(dc.layout.root)
                settle()
                t, done = timed(lambda cold_dc=cold_dc: reconcile(cold_dc.context, when))
                assert done.repings == n
                cold.append(t)
        rate = n / med(warm)
        print(f"reconcile {n:,} pending acks past due, {hist:,} settled in history: warm {fmt_s(med(warm))} = "
              f"{rate:,.0f} acks/s (CPU {fmt_s(med(warm_cpu))}) {verdict(rate >= RATE_TARGET)}; cold (reads the "
              f"boxes) {fmt_s(med(cold))} = {n / med(cold):,.0f}/s")


def bare_pair(path: Path, data: bytes) -> None:
    """The reference of one round trip: two bare appends, each written and fsynced (a send and an ack)."""
    for _ in range(2):
        with open(path, "ab") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def bench_round_trip(trips: int, history: int) -> None:
    for hist in (0, history):
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            dc = home(Path(tmp))
            build_acks(dc, 0, hist)
            dc.trackers()  # a warm handle: its folds fed, as a serving process's are
            times, bare, cpus = [], [], []
            ref = Path(tmp) / "bare.jsonl"
            for i in range(trips):
                c0, start = cpu(), time.perf_counter()
                s = dc.send_work(Send(type="task", recipient=WORKERS[i % len(WORKERS)], sender="aya",
                                      subject=f"t{i}", work_item_id="wi-1"))
                dc.ack(Ack(entity_id=s.deliveries[0]["to"], ref=s.deliveries[0]["id"]))
                times.append(time.perf_counter() - start)
                cpus.append(cpu() - c0)
                start = time.perf_counter()
                bare_pair(ref, b'{"ts":"2026-03-18T10:00:00Z","agent":"aya","kind":"task","subject":"t"}\n')
                bare.append(time.perf_counter() - start)
            times.sort()
            m = med(times)
            p95 = times[int(len(times) * 0.95)]
            print(f"library send (task) + ack round trip, {trips} trips, {hist:,} settled in history: median "
                  f"{m * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms, CPU {med(cpus) * 1000:.2f} ms a trip (two bare "
                  f"write+fsync {med(bare) * 1000:.2f} ms, interleaved: {m / med(bare):.2f}x); "
                  f"target <= 2 ms {verdict(m <= TRIP_TARGET)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envelopes", type=int, default=10_000)
    ap.add_argument("--history", type=int, default=40_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--trips", type=int, default=500)
    ap.add_argument("--only", choices=("intake", "reconcile", "trip"), help="run one part")
    args = ap.parse_args()
    if args.only in (None, "intake"):
        bench_intake(args.envelopes, args.repeat)
    if args.only in (None, "reconcile"):
        bench_reconcile(args.envelopes, args.history, args.repeat)
    if args.only in (None, "trip"):
        bench_round_trip(args.trips, args.history)


if __name__ == "__main__":
    main()

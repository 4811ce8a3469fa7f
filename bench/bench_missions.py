"""Missions (issue 11): what a mission post costs over a durable append, and how it grows with the box.

A post validates the letter, reads the project's block registry (the guards), then under the box's guard
folds the mission's chain from what the guard read and appends (the compare-and-swap). Measured: a warm
handle posting the next letter of one chain, one post after another, in a box that also holds ``--noise``
other letters (block letters and other missions), wall and CPU time per post; interleaved with the
reference, a bare ``dc.store.append`` of a mission-sized line to another box (lock, dedup, write, fsync).

Run: .venv/bin/python bench/bench_missions.py [--posts 200] [--noise 2000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from dovecote import verbs
from dovecote.handle.api import init, open_home
from dovecote.model.addresses import project
from dovecote.model.letters import canonical_line
from dovecote.model.results import builtins
from missionhelpers import for_phase

PHASES = ["judging", "executing", "gate", "review", "executing"]  # then gate, review, executing... (a loop)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--posts", type=int, default=200)
    ap.add_argument("--noise", type=int, default=2000, help="other missions' letters in the same box first")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "repo-a").mkdir()
        home, _ = init(root / ".dovecote", owner_root=str(root))
        dc = open_home(home)
        for name in ("repo-a", "ref"):
            (root / name).mkdir(exist_ok=True)
            dc.add_project(verbs.ProjectAdd(name=name, root=str(root / name)))
        dc.block_add(verbs.BlockAdd(block_id="sb_alpha", project="repo-a"))
        for n in range(a.noise):  # one-letter missions: the box the CAS reads is not empty
            d = {**for_phase("judging", 1, None), "mission_id": f"msn_{n:012x}", "synthetic": True}
            dc.mission_post(verbs.MissionPost(letter=d, as_project="repo-a"), actor="noise")
        wall: list[float] = []
        cpu: list[float] = []
        ref: list[float] = []
        prev: str | None = None
        for seq in range(1, a.posts + 1):
            phase = PHASES[seq - 1] if seq <= len(PHASES) else ("gate", "review", "executing")[(seq - 6) % 3]
            letter = {**for_phase(phase, seq, prev), "mission_id": "msn_ffffffffffff",
                      "updated_at": f"2026-07-09T{seq // 3600:02d}:{seq // 60 % 60:02d}:{seq % 60:02d}Z"}
            t0, c0 = time.perf_counter(), time.process_time()
            got = builtins(dc.mission_post(verbs.MissionPost(letter=letter, as_project="repo-a"), actor="runner"))
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            prev = got["letter_id"]
            line = canonical_line({"kind": "mission", "agent": "runner", "ts": letter["updated_at"], "mission": letter})
            t0 = time.perf_counter()
            dc.store.append(project("ref"), [line])
            ref.append(time.perf_counter() - t0)
        head = builtins(dc.missions(verbs.Missions(project="repo-a")))
        assert any(m["mission_seq"] == a.posts for m in head["missions"])
    ms = 1000
    p50, r50 = statistics.median(wall), statistics.median(ref)
    print(f"mission post, chain of {a.posts} in a box of {a.noise} other letters + the chain:")
    print(f"  post  wall p50 {p50 * ms:.2f} ms, p95 {sorted(wall)[int(0.95 * len(wall))] * ms:.2f} ms, "
          f"cpu p50 {statistics.median(cpu) * ms:.2f} ms")
    first, last = statistics.median(cpu[:20]), statistics.median(cpu[-20:])
    print(f"  cpu p50 of the first 20 posts {first * ms:.2f} ms, of the last 20 {last * ms:.2f} ms")
    print(f"  reference: bare durable append p50 {r50 * ms:.2f} ms (interleaved)")
    print(f"  ratio post / append: {p50 / r50:.1f}x")


if __name__ == "__main__":
    main()

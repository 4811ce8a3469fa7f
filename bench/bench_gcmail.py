"""Gas City mail benchmark: cold ``dovecote-gc-mail`` calls on a city whose agent has 1,000 unread messages.

gc runs its exec mail provider as a new process for every operation, and every gc command
starts it twice (``ensure-running`` first), so the cost that matters is a cold start. Each
round runs, as gc does (the console script itself, no shell; ``send`` fed gc's JSON on stdin):

* ``ensure-running`` (the home is there: it loads no handle at all);
* ``send`` to the agent (one message more each round);
* ``inbox`` of the agent (every open unread message, printed as gc's JSON: over a thousand);
* ``count`` of the agent;
* ``read`` of one message (a different one each round: it writes a ``seen`` letter);

against ``python -c pass`` of the same interpreter, measured in the same run, interleaved
(load on the machine bills every side alike). Prints medians of wall time and of each child's
CPU time (user + system, from ``getrusage``: on a shared machine the wall time also counts
waiting for a core) and each ratio to ``python -c pass``, beside the goals: send, inbox, count
and read at most 12x, ensure-running at most 3x. Asserts nothing.

Run: .venv/bin/python bench/bench_gcmail.py [--messages 1000] [--rounds 9]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from _common import med, write_box
from dovecote.handle.api import init, open_home
from dovecote.model.addresses import entity
from dovecote.model.envelope import build_message
from dovecote.model.letters import canonical_line, letter_id
from dovecote.verbs import EntityAdd

#: The goals, as ratios to ``python -c pass``.
GOALS = {"ensure-running": 3.0, "send": 12.0, "inbox": 12.0, "count": 12.0, "read": 12.0}
AGENT = "mayor"


def build(city: Path, messages: int) -> list[str]:
    """A city whose ``mayor`` holds ``messages`` unread messages from ``deacon``; their ids."""
    home, _ = init(city / ".dovecote", owner_root=str(city))
    dc = open_home(home)
    dc.add_entity(EntityAdd(entity_id="deacon"))
    dc.add_entity(EntityAdd(entity_id=AGENT))
    lines = []
    for i in range(messages):
        ts = f"2026-07-05T{9 + i // 3600 % 10:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
        msg = build_message(ts=ts, sender="deacon", recipient=AGENT, subject=f"work item {i}",
                            body=f"body of message {i} " * 4, priority="normal", category="notification")
        lines.append(canonical_line(msg))
    write_box(dc, entity(AGENT), lines)
    return [letter_id(line.rstrip(b"\n")) for line in lines]


Sample = tuple[float, float]


def measure(messages: int, rounds: int) -> dict[str, list[Sample]]:
    """Each operation's (wall, CPU) seconds over ``rounds`` interleaved rounds, and ``python -c pass``'s."""
    tmp = Path(tempfile.mkdtemp(prefix="dovecote-bench-gcmail-"))
    try:
        city = tmp / "city"
        city.mkdir()
        ids = build(city, messages)
        script = str(Path(sys.executable).parent / "dovecote-gc-mail")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DOVECOTE_", "GC_"))}
        env["GC_CITY"] = str(city)

        def run(cmd: list[str], stdin: bytes = b"") -> Sample:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            r = subprocess.run(cmd, input=stdin, env=env, cwd=tmp, capture_output=True, check=False)
            elapsed = time.perf_counter() - t
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if r.returncode or r.stderr:
                raise SystemExit(f"{cmd[1:]} failed: {r.stderr.decode()}")
            return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

        run([script, "inbox", AGENT])  # a city in use: its fold snapshot is there, as after any earlier call
        samples: dict[str, list[Sample]] = {name: [] for name in ("python -c pass", *GOALS)}
        body = orjson.dumps({"from": "deacon", "subject": "bench", "body": "one more"})
        for n in range(rounds):
            samples["python -c pass"].append(run([sys.executable, "-c", "pass"]))
            samples["ensure-running"].append(run([script, "ensure-running"]))
            samples["send"].append(run([script, "send", AGENT], body))
            samples["inbox"].append(run([script, "inbox", AGENT]))
            samples["count"].append(run([script, "count", AGENT]))
            samples["read"].append(run([script, "read", ids[n * 97 % len(ids)]]))
        return samples
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    samples = measure(args.messages, args.rounds)
    ref_wall = med([w for w, _ in samples["python -c pass"]]) * 1000
    ref_cpu = med([c for _, c in samples["python -c pass"]]) * 1000
    print(f"cold dovecote-gc-mail, {args.messages:,} unread messages to {AGENT}, medians of {args.rounds} rounds")
    for name, got in samples.items():
        wall, cpu = med([w for w, _ in got]) * 1000, med([c for _, c in got]) * 1000
        line = (f"  {name:<16} {wall:6.1f} ms wall = {wall / ref_wall:4.1f}x; "
                f"{cpu:6.1f} ms CPU = {cpu / ref_cpu:4.1f}x python -c pass")
        if name in GOALS:
            verdict = "meets" if wall / ref_wall <= GOALS[name] else "MISSES"
            line += f"  ({verdict} goal <= {GOALS[name]:.0f}x, wall)"
        print(line)


if __name__ == "__main__":
    main()

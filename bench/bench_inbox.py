"""Inbox benchmark (issue 3): a box with 10,000 messages and 30,000 transitions.

Measures, in one run:
* warm ``inbox`` as JSON through the library (a repeated read, and a read after
  one new lifecycle letter each time), target <= 20 ms;
* a cold CLI call ``dovecote inbox ENTITY --format injection`` against
  ``python -c pass`` of the same interpreter (issue 7 target <= 5x), in three
  states: answered from its cached rendering (a session after the first, with
  nothing new); right after a new letter, with the inbox's fold snapshot in
  ``cache/folds`` (the rendering is stale, the snapshot plus the one new letter
  answer); and with no cache at all (the whole ledger is read).

Each cold call is also timed in CPU (the child's user + system time), which a
machine shared with other work moves far less than wall time. Children run
with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` dropped), as an
installed ``dovecote`` does: otherwise every call compiles its modules again.

When valgrind is installed, the same cold calls are also counted in
instructions (``valgrind --tool=callgrind``, "Collected"), the measure a
loaded machine does not move: ``python -c pass``, ``dovecote --version``
(target <= 2x), the cached rendering, right after a new letter (target <= 5x)
and ``hook session-start``, which reads the same path.

Prints medians; asserts nothing.
"""

from __future__ import annotations

import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from dovecote.addresses import entity
from dovecote.api import init, open_home
from dovecote.envelope import build_message
from dovecote.letters import canonical_line, letter_id
from dovecote.verbs import EntityAdd, Inbox, Move

PATTERNS = (
    ("seen", "claim", "complete"),
    ("seen", "claim", "defer"),
    ("seen", "defer", "undefer"),
    ("seen", "claim", "seen"),
    ("seen", "claim", "complete"),
)


def build(root: Path, messages: int = 10_000) -> Path:
    home, _ = init(root / ".dovecote", owner_root=str(root))
    dc = open_home(home)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    rnd = random.Random(7)
    lines: list[bytes] = []
    for i in range(messages):
        ts = f"2026-07-05T{9 + i // 3600 % 10:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
        msg = build_message(
            ts=ts, sender="ent_a", recipient="ent_b", subject=f"subject {i} {rnd.choice(['build', 'deploy', 'index'])}",
            body=f"body of message {i} " * 4, priority=rnd.choice(["low", "normal", "high", "urgent"]),
            category="notification", source_tic=i % 1000,
        )
        line = canonical_line(msg)
        lines.append(line)
        item = prev = letter_id(line)
        for kind in PATTERNS[i % len(PATTERNS)]:
            link = {"ts": ts, "agent": "ent_b", "kind": kind, "ref": item, "prev": prev, "tic": i % 1000}
            if kind == "defer":
                link["until_tic"] = 10**6
            lk = canonical_line(link)
            lines.append(lk)
            prev = letter_id(lk)
    path = dc.store.path(entity("ent_b"))
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return home


ROUNDS = 7
#: Rounds of instruction counts (each a callgrind run of a few seconds).
COUNT_ROUNDS = 3


def instructions(cmd: list[str], env: dict[str, str], stdin: bytes = b"") -> int:
    """The instructions ``cmd`` executes, as callgrind counts them (the child's "Collected")."""
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], env=env,
                       input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    found = re.search(rb"Collected : (\d+)", r.stderr)
    assert found is not None, r.stderr[-500:]
    return int(found.group(1))


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="dovecote-bench-inbox-"))
    try:
        home = build(tmp)
        dc = open_home(home)
        t = time.perf_counter()
        dc.inbox(Inbox(entity_id="ent_b", current_tic=1000))
        cold_lib = time.perf_counter() - t
        repeat = []
        for _ in range(30):
            t = time.perf_counter()
            orjson.dumps(dc.inbox(Inbox(entity_id="ent_b", current_tic=1000)))
            repeat.append(time.perf_counter() - t)
        waiting = [r["id"] for r in dc.inbox(Inbox(
            entity_id="ent_b", current_tic=1000
        ))["items"] if r["state"] == "WAIT"]
        changed = []
        for item in waiting[:30]:
            dc.move(Move(kind="claim", entity_id="ent_b", ref=item, current_tic=1000))
            t = time.perf_counter()
            orjson.dumps(dc.inbox(Inbox(entity_id="ent_b", current_tic=1000)))
            changed.append(time.perf_counter() - t)
        print("inbox, 10,000 messages + 30,000 transitions")
        print(f"  first read through the library (cold handle): {cold_lib * 1000:.0f} ms")
        print(f"  warm read as JSON, repeated:          median {median_ms(repeat):6.1f} ms (target <= 20)")
        print(f"  warm read as JSON, after a new letter: median {median_ms(changed):6.1f} ms (target <= 20)")

        python = sys.executable  # the venv interpreter itself, not a version-manager shim
        script = str(Path(sys.executable).parent / "dovecote")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["DOVECOTE_HOME"] = str(home)
        cpu: dict[int, list[float]] = {}  # id of a wall-time list -> the CPU times of the same calls

        def timed(cmd: list[str], n: int, before: object = None, into: list[float] | None = None) -> list[float]:
            out = []
            for _ in range(n):
                if callable(before):
                    before()
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t = time.perf_counter()
                subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
                out.append(time.perf_counter() - t)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                if into is not None:
                    cpu.setdefault(id(into), []).append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
            return out

        argv = [python, script, "inbox", "ent_b", "--format", "injection", "--current-tic", "1000"]
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)  # the snapshot and the rendering
        cache_dir = home / "cache"
        left = iter(waiting[30:])

        def new_letter() -> None:
            dc.move(Move(kind="claim", entity_id="ent_b", ref=next(left), current_tic=1000))

        def no_cache() -> None:
            shutil.rmtree(cache_dir, ignore_errors=True)

        base: list[float] = []
        cached: list[float] = []
        after_new: list[float] = []
        uncached: list[float] = []
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)  # compiled bytecode in place
        for _ in range(ROUNDS):  # interleaved, so load on the machine moves every column alike
            base += timed([python, "-c", "pass"], 1, into=base)
            cached += timed(argv, 1, into=cached)
            after_new += timed(argv, 1, before=new_letter, into=after_new)
            uncached += timed(argv, 1, before=no_cache, into=uncached)
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)  # leave a snapshot again
        b, bc = median_ms(base), median_ms(cpu[id(base)])
        print(f"  python -c pass: median {b:.1f} ms, CPU {bc:.1f} ms ({ROUNDS} rounds, interleaved)")
        for name, xs in (("cached rendering", cached), ("right after a new letter (fold snapshot)", after_new),
                         ("no cache at all (whole ledger)", uncached)):
            m, mc = median_ms(xs), median_ms(cpu[id(xs)])
            print(f"  cold CLI injection, {name}: median {m:.1f} ms = {m / b:.1f}x (target <= 5x); "
                  f"CPU {mc:.1f} ms = {mc / bc:.1f}x")
        if shutil.which("valgrind") is None:
            print("  (valgrind is not installed: no instruction counts)")
            return
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)  # a fresh snapshot and rendering
        hook = [python, script, "hook", "session-start", "--entity", "ent_b"]
        counts: dict[str, list[int]] = {}
        for _ in range(COUNT_ROUNDS):
            counts.setdefault("pass", []).append(instructions([python, "-c", "pass"], env))
            counts.setdefault("version", []).append(instructions([python, script, "--version"], env))
            counts.setdefault("cached", []).append(instructions(argv, env))
            new_letter()
            counts.setdefault("new", []).append(instructions(argv, env))
        # the hook reads with no tic (another view than ``--current-tic 1000``): settle its snapshot first
        subprocess.run(hook, env=env, input=b"{}", stdout=subprocess.DEVNULL, check=True)
        for _ in range(COUNT_ROUNDS):
            new_letter()
            counts.setdefault("hook", []).append(instructions(hook, env, b"{}"))
        med = {k: statistics.median(v) for k, v in counts.items()}
        p = med["pass"]
        print(f"  instructions (callgrind, median of {COUNT_ROUNDS}): python -c pass {p / 1e6:.0f} M")
        for key, name, target in (("version", "dovecote --version", "<= 2x"),
                                  ("cached", "injection, cached rendering", ""),
                                  ("new", "injection, right after a new letter", "<= 5x"),
                                  ("hook", "hook session-start, right after a new letter", "")):
            goal = f" (target {target})" if target else ""
            print(f"  {name}: {med[key] / 1e6:.0f} M = {med[key] / p:.1f}x{goal}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

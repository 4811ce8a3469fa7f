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
from collections.abc import Callable
from pathlib import Path

import orjson

from dovecote.handle.api import Dovecote, init, open_home
from dovecote.model.addresses import entity
from dovecote.model.envelope import build_message
from dovecote.model.letters import canonical_line, letter_id
from dovecote.model.results import builtins
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


def child_env(home: Path) -> dict[str, str]:
    """The children's environment: the home, and bytecode caching on (as an installed ``dovecote`` runs)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["DOVECOTE_HOME"] = str(home)
    return env


def injection_argv() -> list[str]:
    python = sys.executable  # the venv interpreter itself, not a version-manager shim
    return [python, str(Path(python).parent / "dovecote"), "inbox", "ent_b", "--format", "injection",
            "--current-tic", "1000"]


def warm(dc: Dovecote) -> tuple[float, list[float], list[float], list[float], list[str]]:
    """The library's reads as JSON: the first (cold handle), 30 repeated, 30 each after one new letter (a
    claim), those also in CPU time (this process's: a machine shared with other work moves it far less than
    wall time); with the ids of the items still waiting (seconds, seconds, seconds, CPU seconds, ids)."""
    t = time.perf_counter()
    dc.inbox(Inbox(entity_id="ent_b", current_tic=1000))
    first = time.perf_counter() - t
    repeat = []
    for _ in range(30):
        t = time.perf_counter()
        orjson.dumps(builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=1000))))
        repeat.append(time.perf_counter() - t)
    waiting = [r["id"] for r in builtins(dc.inbox(Inbox(
        entity_id="ent_b", current_tic=1000
    )))["items"] if r["state"] == "WAIT"]
    changed, changed_cpu = [], []
    for item in waiting[:30]:
        dc.move(Move(kind="claim", entity_id="ent_b", ref=item, current_tic=1000))
        t, c = time.perf_counter(), time.process_time()
        orjson.dumps(builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=1000))))
        changed.append(time.perf_counter() - t)
        changed_cpu.append(time.process_time() - c)
    return first, repeat, changed, changed_cpu, waiting[30:]


def claims(dc: Dovecote, waiting: list[str]) -> Callable[[], None]:
    """Appends one new letter a call (a claim of the next waiting item), as another agent would."""
    left = iter(waiting)

    def new_letter() -> None:
        dc.move(Move(kind="claim", entity_id="ent_b", ref=next(left), current_tic=1000))

    return new_letter


def cold(home: Path, new_letter: Callable[[], None], rounds: int = ROUNDS,
         uncached: bool = True) -> dict[str, tuple[list[float], list[float]]]:
    """The cold CLI injection, each call a new process, interleaved with ``python -c pass`` so load on the
    machine moves every column alike: (wall seconds, CPU seconds) by state, ``pass``, ``cached`` (its
    rendering), ``after_new`` (right after ``new_letter``: the fold snapshot plus that letter) and, with
    ``uncached``, ``uncached`` (``cache/`` deleted first: the whole ledger is read)."""
    env = child_env(home)
    argv = injection_argv()
    out: dict[str, tuple[list[float], list[float]]] = {}

    def timed(name: str, cmd: list[str], before: Callable[[], None] | None = None) -> None:
        if before is not None:
            before()
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
        wall = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        walls, cpus = out.setdefault(name, ([], []))
        walls.append(wall)
        cpus.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)

    def no_cache() -> None:
        shutil.rmtree(home / "cache", ignore_errors=True)

    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)  # the snapshot and the rendering
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)  # compiled bytecode in place
    for _ in range(rounds):
        timed("pass", [sys.executable, "-c", "pass"])
        timed("cached", argv)
        timed("after_new", argv, new_letter)
        if uncached:
            timed("uncached", argv, no_cache)
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)  # leave a snapshot again
    return out


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="dovecote-bench-inbox-"))
    try:
        home = build(tmp)
        dc = open_home(home)
        cold_lib, repeat, changed, changed_cpu, waiting = warm(dc)
        print("inbox, 10,000 messages + 30,000 transitions")
        print(f"  first read through the library (cold handle): {cold_lib * 1000:.0f} ms")
        print(f"  warm read as JSON, repeated:          median {median_ms(repeat):6.1f} ms (target <= 20)")
        print(f"  warm read as JSON, after a new letter: median {median_ms(changed):6.1f} ms (target <= 20); "
              f"CPU {median_ms(changed_cpu):.1f} ms")

        new_letter = claims(dc, waiting)
        calls = cold(home, new_letter)
        (base, base_cpu) = calls["pass"]
        b, bc = median_ms(base), median_ms(base_cpu)
        print(f"  python -c pass: median {b:.1f} ms, CPU {bc:.1f} ms ({ROUNDS} rounds, interleaved)")
        for key, name in (("cached", "cached rendering"), ("after_new", "right after a new letter (fold snapshot)"),
                          ("uncached", "no cache at all (whole ledger)")):
            m, mc = median_ms(calls[key][0]), median_ms(calls[key][1])
            print(f"  cold CLI injection, {name}: median {m:.1f} ms = {m / b:.1f}x (target <= 5x); "
                  f"CPU {mc:.1f} ms = {mc / bc:.1f}x")
        if shutil.which("valgrind") is None:
            print("  (valgrind is not installed: no instruction counts)")
            return
        python, script = sys.executable, str(Path(sys.executable).parent / "dovecote")
        env, argv = child_env(home), injection_argv()
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

"""Hook benchmark (issue 8): cold ``dovecote hook`` calls against a 1,000-message inbox.

Each call is a new process fed the payload an agent sends on stdin, as Claude
Code and Codex run it:

* ``session-start`` with a new session each round (it prints the injection
  block and appends one ``surfaced`` record: the work every new session does);
* ``prompt`` and ``stop`` in a session already told everything (the common
  case at every turn: nothing to print, nothing written);

against ``python -c pass`` of the same interpreter, measured in the same run,
and ``python -c "import dovecote.handle.api"`` for what the imports cost. The target
is 200 ms for a cold hook. Besides wall time it prints each child's CPU time
(user + system, from ``getrusage``): on a shared machine the wall time also
counts waiting for a core, the CPU time does not. Prints medians; asserts nothing.

Run: .venv/bin/python bench/bench_hooks.py [--messages 1000] [--rounds 9]
"""

from __future__ import annotations

import argparse
import os
import random
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
from dovecote.model.letters import canonical_line
from dovecote.verbs import EntityAdd

TARGET_MS = 200.0


def build(root: Path, messages: int) -> Path:
    """A home whose ``ent_b`` holds ``messages`` messages (a twentieth of them high or urgent)."""
    home, _ = init(root / ".dovecote", owner_root=str(root))
    dc = open_home(home)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    rnd = random.Random(8)
    lines = []
    for i in range(messages):
        ts = f"2026-07-05T{9 + i // 3600 % 10:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
        priority = rnd.choice(["high", "urgent"]) if i % 20 == 0 else rnd.choice(["low", "normal"])
        msg = build_message(ts=ts, sender="ent_a", recipient="ent_b", subject=f"subject {i}",
                            body=f"body of message {i} " * 4, priority=priority, category="notification")
        lines.append(canonical_line(msg))
    write_box(dc, entity("ent_b"), lines)
    return home


def median_ms(samples: list[float]) -> float:
    return med(samples) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dovecote-bench-hooks-"))
    try:
        home = build(tmp, args.messages)
        python = sys.executable
        script = str(Path(sys.executable).parent / "dovecote")
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOVECOTE_")}
        hook = [python, script, "--home", str(home), "hook"]

        def run(cmd: list[str], payload: dict[str, object] | None = None) -> tuple[float, float]:
            data = orjson.dumps(payload) if payload is not None else b""
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            r = subprocess.run(cmd, input=data, env=env, capture_output=True, check=False)
            elapsed = time.perf_counter() - t
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if r.returncode or r.stderr:
                raise SystemExit(f"{cmd[4:]} failed: {r.stderr.decode()}")
            return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

        base: list[tuple[float, float]] = []
        imports: list[tuple[float, float]] = []
        start: list[tuple[float, float]] = []
        prompt: list[tuple[float, float]] = []
        stop: list[tuple[float, float]] = []
        for n in range(args.rounds):  # interleaved: load on the machine bills every side alike
            base.append(run([python, "-c", "pass"]))
            imports.append(run([python, "-c", "import dovecote.handle.api"]))
            session = {"session_id": f"bench-{n}", "hook_event_name": "SessionStart", "source": "startup",
                       "cwd": str(tmp), "transcript_path": str(tmp / "t.jsonl")}
            start.append(run([*hook, "session-start", "--entity", "ent_b"], session))
            prompt.append(run([*hook, "prompt", "--entity", "ent_b"],
                              {**session, "hook_event_name": "UserPromptSubmit", "prompt": "go on"}))
            stop.append(run([*hook, "stop", "--entity", "ent_b"],
                            {**session, "hook_event_name": "Stop", "stop_hook_active": False}))
        ref = median_ms([w for w, _ in base])
        print(f"cold hooks, an inbox of {args.messages:,} messages, medians of {args.rounds} rounds (wall; CPU)")
        for name, samples in (("python -c pass", base), ("python -c 'import dovecote.handle.api'", imports),
                              ("hook session-start", start), ("hook prompt (nothing new)", prompt),
                              ("hook stop (nothing new)", stop)):
            wall, cpu = median_ms([w for w, _ in samples]), median_ms([c for _, c in samples])
            line = f"  {name:<32} {wall:6.1f} ms wall = {wall / ref:4.1f}x python -c pass; {cpu:6.1f} ms CPU"
            if name.startswith("hook"):
                line += f" ({'meets' if wall <= TARGET_MS else 'MISSES'} target <= {TARGET_MS:.0f} ms wall)"
            print(line)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

"""``import agent-mail --write`` killed midway (a real process, SIGKILL): a re-run ends equal to one clean run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from agentmail_archive import Builder, t
from dovecote.handle.api import Dovecote, open_home
from dovecote.model.addresses import entity, project
from dovecote.ops.agentmail import names
from dovecote.verbs import ImportAgentMail
from helpers import DOVECOTE_BIN, cli_env, new_home

AGENTS = 12
MESSAGES = 6000


def big(root: Path) -> Path:
    """One project, a dozen agents, thousands of messages (two recipients each, some read and acked)."""
    b = Builder(root / "storage.sqlite3")
    b.project(1, "/srv/big")
    for a in range(1, AGENTS + 1):
        b.agent(a, 1, f"agent-{a}")
    for m in range(1, MESSAGES + 1):
        s, r1, r2 = m % AGENTS + 1, (m + 1) % AGENTS + 1, (m + 5) % AGENTS + 1
        b.message(1, s, f"note {m}", [(r1, "to", t(4, m) if m % 3 else None, t(4, m + 1) if m % 6 == 1 else None),
                                      (r2, "cc", None, None)], ack=m % 2 == 0, created=t(3, m), mid=m)
    b.reservation(1, 1, 1, "src/**", t(3), t(3, 60), released=t(3, 30))
    return b.close()


def letters(dc: Dovecote) -> dict[str, set[str]]:
    """Every box's letter ids (torn lines are not letters)."""
    boxes = [entity(names.entity_id("srv-big", f"agent-{a}")) for a in range(1, AGENTS + 1)] + [project("srv-big")]
    return {str(b): {x.id for x in dc.store.read(b).letters} for b in boxes}


def test_a_killed_import_is_completed_by_the_next_run(tmp_path: Path) -> None:
    db = big(tmp_path / "am")
    clean = new_home(tmp_path / "clean")
    want = clean.import_agent_mail(ImportAgentMail(path=str(db), write=True)).to_dict()
    planned = want["letters"]["planned"]
    dc = new_home(tmp_path / "killed")
    boxes = dc.layout.root / "boxes"
    proc = subprocess.Popen([str(DOVECOTE_BIN), "import", "agent-mail", str(db), "--write"],
                            env=cli_env(tmp_path, dc.layout.root), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.stat().st_size > 0 for p in boxes.rglob("letters.jsonl")):
            break
        time.sleep(0.001)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the import finished before it was killed: make the archive bigger"
    dc = reopened(dc)
    partial = sum(len(v) for v in letters(dc).values())
    assert 0 < partial < planned  # killed midway: some letters are in, not all
    out = subprocess.run([str(DOVECOTE_BIN), "import", "agent-mail", str(db), "--write", "--json"],
                         env=cli_env(tmp_path, dc.layout.root), capture_output=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    again = json.loads(out.stdout)
    assert again["letters"]["planned"] == planned
    assert again["letters"]["appended"] + again["letters"]["already_present"] == planned
    assert again["letters"]["appended"] == planned - partial
    dc = reopened(dc)
    assert letters(dc) == letters(clean)
    assert {e.id for e in dc.roster.entities} == {e.id for e in clean.roster.entities}


def reopened(dc: Dovecote) -> Dovecote:
    """The home opened again, as a new process would (the roster another process edited, read afresh)."""
    return open_home(dc.layout.root)

"""Many ``dovecote-gc-mail`` processes at once, as a city's agents run them.

Thirty ``send`` processes to five recipients (from thirty senders the roster has never seen,
so thirty locked roster edits race) run at the same moment as ten read/archive processes on
mail already there: five archivers of one message, five readers of another. Every send that
printed its message is there exactly once and nowhere else; of the five archivers exactly one
succeeds and the other four are told ``already archived`` (as gc's suite tells them apart), and
the message is closed once; every reader gets the message, read; ``verify`` is clean. A home
that is not there yet is made once when many processes start on it together.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from dovecote.handle.api import open_home
from dovecote.model.addresses import entity
from gchelpers import GC_MAIL_BIN, ExecProvider, go_marshal, provider

pytestmark = pytest.mark.files_only

RECIPIENTS = [f"agent-{i}" for i in range(5)]


def _start(p: ExecProvider, *args: str, stdin: bytes = b"") -> tuple[subprocess.Popen[bytes], bytes]:
    proc = subprocess.Popen([str(GC_MAIL_BIN), *args], env=p.env, cwd=p.cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, stdin


def _finish(started: list[tuple[subprocess.Popen[bytes], bytes]]) -> list[tuple[int, bytes, bytes]]:
    out = []
    for proc, stdin in started:
        o, e = proc.communicate(stdin, timeout=120)
        out.append((proc.returncode, o, e))
    return out


def test_thirty_sends_and_ten_readers_and_archivers_at_once(tmp_path: Path) -> None:
    p = provider(tmp_path)
    target = p.send("mayor", "agent-0", "archive me", "once")
    shared = p.send("mayor", "agent-1", "read me", "by five")
    sends = [_start(p, "send", RECIPIENTS[i % 5],
                    stdin=go_marshal({"from": f"polecat-{i}", "subject": f"s{i}", "body": f"body {i}"}))
             for i in range(30)]
    archivers = [_start(p, "archive", target.id) for _ in range(5)]
    readers = [_start(p, "read", shared.id) for _ in range(5)]
    sent, archived, read = _finish(sends), _finish(archivers), _finish(readers)

    assert all(status == 0 for status, _, _ in sent), [e for s, _, e in sent if s]
    acked = [json.loads(out) for _, out, _ in sent]
    assert len({m["id"] for m in acked}) == 30
    for r in RECIPIENTS:
        listed = [m.id for m in p.all(r) or []]
        mine = [m["id"] for m in acked if m["to"] == r]
        assert sorted(i for i in listed if i in {m["id"] for m in acked}) == sorted(mine)
        assert len(listed) == len(set(listed))
    assert all(p.get(m["id"]).body == m["body"] for m in acked[::7])

    won = [a for a in archived if a[0] == 0]
    lost = [a for a in archived if a[0] != 0]
    assert len(won) == 1 and len(lost) == 4, archived
    assert all(status == 1 and b"already archived" in err for status, _, err in lost)
    assert all(status == 0 and json.loads(out)["read"] is True for status, out, _ in read), read

    dc = open_home(Path(p.env["GC_CITY"]) / ".dovecote")
    closing = [x for x in dc.store.read(entity("agent-0")).letters
               if x.data().get("ref") == target.id and x.data().get("kind") == "nack"]
    assert len(closing) == 1
    assert {f"polecat-{i}" for i in range(30)} | set(RECIPIENTS) <= {e.id for e in dc.roster.entities}
    assert p.count("agent-0") == (6, 6) and p.count("agent-1") == (7, 6)  # the read one counts, not as unread
    assert dc.verify().ok


def test_many_processes_make_a_missing_home_once(tmp_path: Path) -> None:
    p = provider(tmp_path)
    home = Path(p.env["GC_CITY"]) / ".dovecote"
    assert not home.exists()
    started = [_start(p, "send", f"new-{i % 3}", stdin=go_marshal({"from": f"first-{i}", "subject": "", "body": "hi"}))
               for i in range(12)]
    done = _finish(started)
    assert all(status == 0 for status, _, _ in done), [e for s, _, e in done if s]
    assert sum(len(p.inbox(f"new-{i}") or []) for i in range(3)) == 12
    dc = open_home(home)
    assert {f"first-{i}" for i in range(12)} <= {e.id for e in dc.roster.entities}
    assert dc.verify().ok

"""A full disk, and a disk that fails: ENOSPC and EIO injected through ``faultfs.FaultFS``.

ENOSPC in the middle of an append is a refusal named ``disk_full`` (exit 2 on
the CLI, 507 over REST) that leaves the ledger byte for byte as it was (no torn
line, nothing half written); once space is back, appends go on. EIO is an
``io_error`` with the same guarantee. A send that fills the disk between its
two boxes says what was delivered.
"""

from __future__ import annotations

import errno
from pathlib import Path

import orjson
import pytest
from starlette.testclient import TestClient

from dovecote.errors import REASONS, DiskFull, PartialWrite, Refusal, StoreError
from dovecote.handle.api import Dovecote
from dovecote.http.app import create_app
from dovecote.ledger import append as ledger_append
from dovecote.ledger.jsonl import LedgerReader
from dovecote.model.addresses import entity
from dovecote.model.letters import canonical_line, letter_id
from dovecote.store.files import FileStore
from dovecote.util import fileops
from dovecote.verbs import Message
from faultfs import FaultFS
from helpers import new_home, run_cli
from mailhelpers import ENTITY, SENDER, mail_home

pytestmark = pytest.mark.files_only


def _line(what: str) -> bytes:
    return canonical_line({"ts": "2026-07-05T10:00:00Z", "agent": "disk", "what": what, "pad": "z" * 300})


def _full(nth: int = 1, *, for_good: bool = True, err: int = errno.ENOSPC) -> FaultFS:
    return FaultFS(fail_op="write", fail_nth=nth, fail_errno=err, fail_for_good=for_good)


@pytest.mark.parametrize("torn", [False, True])
def test_a_full_disk_refuses_the_append_and_leaves_the_ledger_as_it_was(tmp_path: Path, torn: bool) -> None:
    path = tmp_path / "letters.jsonl"
    ledger_append.append(LedgerReader(path), [_line("a")])
    if torn:
        with open(path, "ab") as f:
            f.write(b'{"what":"tor')
    before = path.read_bytes()
    batch = [_line(f"b{n}") for n in range(5)]
    fs = _full()
    with fileops.installed(fs):
        for _ in range(3):  # full for good: every try is refused the same way, and changes nothing
            with pytest.raises(DiskFull) as refused:
                ledger_append.append(LedgerReader(path), batch)
            assert path.read_bytes() == before
        assert refused.value.reason == "disk_full" and "No space left" in refused.value.detail
        assert isinstance(refused.value, Refusal) and isinstance(refused.value, StoreError)
        fs.heal()  # space is back
        assert ledger_append.append(LedgerReader(path), batch) == [(letter_id(x), True) for x in batch]
    r = LedgerReader(path)
    r.refresh()
    assert [x.id for x in r.letters] == [letter_id(x) for x in [_line("a"), *batch]]
    assert r.torn is None and r.duplicates == 0
    assert [d.kind for d in r.defects] == (["malformed"] if torn else [])


@pytest.mark.parametrize("err", [errno.EIO, errno.ENOSPC])
def test_a_transient_failure_fails_one_append_and_the_next_goes_on(tmp_path: Path, err: int) -> None:
    path = tmp_path / "letters.jsonl"
    ledger_append.append(LedgerReader(path), [_line("a")])
    before = path.read_bytes()
    with fileops.installed(_full(err=err, for_good=False)):
        with pytest.raises(StoreError) as failed:
            ledger_append.append(LedgerReader(path), [_line("b")])
        assert isinstance(failed.value, DiskFull) == (err == errno.ENOSPC)
        assert path.read_bytes() == before
        assert ledger_append.append(LedgerReader(path), [_line("b")]) == [(letter_id(_line("b")), True)]


def test_disk_full_is_a_documented_refusal() -> None:
    assert REASONS["disk_full"][0] == 507


def test_the_cli_says_disk_full_and_exits_2(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    spool = dc.layout.spool
    args = ("report", "--tool", "t", "--class", "win", "--what", "full")
    run_cli(tmp_path, *args[:-1], "first", home=dc.layout.root)
    before = spool.read_bytes()
    fs = _full()
    with fileops.installed(fs):
        r = run_cli(tmp_path, *args, home=dc.layout.root)
        assert r.returncode == 2, r.stderr
        assert r.stderr.decode().startswith("Error: disk_full: ") and "Traceback" not in r.stderr.decode()
        assert spool.read_bytes() == before
        fs.heal()
        assert run_cli(tmp_path, *args, home=dc.layout.root).returncode == 0
    assert spool.read_bytes().startswith(before) and b"full" in spool.read_bytes()[len(before):]


def test_rest_answers_507_disk_full(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    headers = {"Authorization": f"Bearer {dc.token_issue(ENTITY, 'agent').token}"}
    body = {"tool": "seek", "class": "bug", "what": "it fell over"}
    with TestClient(create_app(dc), raise_server_exceptions=False) as c:
        before = dc.layout.spool.read_bytes() if dc.layout.spool.exists() else b""
        fs = _full()
        with fileops.installed(fs):
            r = c.post("/api/v1/reports", headers=headers, json=body)
            assert r.status_code == 507, r.text
            shape = r.json()
            assert shape["reason"] == "disk_full" and shape["ok"] is False
            assert (dc.layout.spool.read_bytes() if dc.layout.spool.exists() else b"") == before
            fs.heal()
            assert c.post("/api/v1/reports", headers=headers, json=body).status_code == 201


def _ledger(dc: Dovecote, name: str) -> bytes:
    store = dc.context.store
    assert isinstance(store, FileStore)
    path = store.path(entity(name))
    assert path is not None
    return path.read_bytes() if path.exists() else b""


def _message(key: str) -> Message:
    return Message(recipient=ENTITY, sender=SENDER, subject=key, body="b", current_tic=1, idempotency_key=key)


def test_a_send_on_a_full_disk_delivers_nothing(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    dc.send(_message("warm"))  # both boxes exist, so the next send only appends
    before = (_ledger(dc, ENTITY), _ledger(dc, SENDER))
    fs = _full()
    with fileops.installed(fs):
        with pytest.raises(DiskFull):
            dc.send(_message("full"))
        assert (_ledger(dc, ENTITY), _ledger(dc, SENDER)) == before
        fs.heal()
        assert dc.send(_message("full")).appended


def test_a_disk_that_fills_between_the_two_boxes_says_what_was_delivered(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    dc.send(_message("warm"))
    sender_before = _ledger(dc, SENDER)
    fs = _full(nth=2)  # the delivery's write goes through, the sent record's does not
    with fileops.installed(fs):
        with pytest.raises(PartialWrite) as partial:
            dc.send(_message("half"))
        assert "delivered" in str(partial.value) and "No space left" in str(partial.value)
        assert b'"half"' in _ledger(dc, ENTITY) and _ledger(dc, SENDER) == sender_before
        fs.heal()
        again = dc.send(_message("half"))  # the key makes the retry write only the missing record
        assert not again.appended
    sent = [orjson.loads(x) for x in _ledger(dc, SENDER).splitlines() if b'"kind":"sent"' in x]
    assert len(sent) == 2


def test_mcp_shows_the_keyword_first() -> None:
    from dovecote.mcp.server import error_text

    text = error_text(DiskFull("/x/letters.jsonl", OSError(errno.ENOSPC, "No space left on device")))
    assert text.startswith("disk_full: cannot append to /x/letters.jsonl: No space left on device")


@pytest.mark.parametrize("err", [errno.EIO, errno.ENOSPC])
def test_a_failed_fsync_acknowledges_nothing_and_takes_the_bytes_back(tmp_path: Path, err: int) -> None:
    path = tmp_path / "letters.jsonl"
    ledger_append.append(LedgerReader(path), [_line("a")])
    before = path.read_bytes()
    with fileops.installed(FaultFS(fail_op="fsync", fail_nth=1, fail_errno=err)):
        with pytest.raises(StoreError, match="not durable") as failed:
            ledger_append.append(LedgerReader(path), [_line("b")])
        assert not isinstance(failed.value, Refusal)  # the bytes were written: an io_error, not a refusal
        assert path.read_bytes() == before  # the group commit truncated its own unsynced bytes away
        assert ledger_append.append(LedgerReader(path), [_line("b")]) == [(letter_id(_line("b")), True)]

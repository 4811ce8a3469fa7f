"""``verify``: delete every cache, rebuild from the ledgers, prove reads are byte-identical."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import orjson
import pytest

from dovecote.handle.api import Dovecote, open_home
from dovecote.ops.admin import verify as verify_mod
from dovecote.ops.context import Context
from dovecote.verbs import Box, EntityAdd, Message, Search, Sweep
from helpers import add_project, ledger_lines, new_home, rep, run_cli


def busy_home(tmp: Path) -> Dovecote:
    dc = new_home(tmp)
    add_project(dc, tmp, "repo-a")
    add_project(dc, tmp, "ghost", exists=False, box_in_repo=True)
    dc.add_entity(EntityAdd(entity_id="ops"))
    dc.report([rep("1"), rep("2", repo="all"), rep("3", repo="zephyr"), rep("4", repo="ghost")])
    dc.distribute()
    return dc


def test_ok_on_a_normal_home(tmp_path: Path) -> None:
    dc = busy_home(tmp_path)
    r = dc.verify()
    assert r.ok is True and r.differ == []
    # every read a face offers over this home is among those compared
    assert {
        "sweep --all", "doctor", "box home --all", "box project:repo-a --all", "box project:ghost --all",
        "box entity:ops --all",
    } <= set(r.checked)
    d = r.to_dict()
    assert (d["ok"], d["checked"], d["differ"]) == (True, r.checked, [])


def test_ok_for_a_warm_handle_after_more_appends(tmp_path: Path) -> None:
    dc = busy_home(tmp_path)
    dc.sweep()
    dc.doctor()
    other = open_home(dc.layout.root)
    other.report([rep("5"), rep("6", repo="all", answers=[dc.sweep().letters()[0]["id"]])])
    other.distribute()
    assert dc.verify().ok


def test_ok_on_an_empty_home(tmp_path: Path) -> None:
    assert new_home(tmp_path).verify().ok


def test_caches_are_deleted(tmp_path: Path) -> None:
    dc = busy_home(tmp_path)
    (dc.layout.cache / "index").mkdir(parents=True)
    (dc.layout.cache / "index" / "stale.bin").write_bytes(b"stale")
    def ledger_bytes() -> dict[Path, bytes]:
        return {p: p.read_bytes() for p in [dc.layout.spool, *dc.layout.boxes.rglob("letters.jsonl")]}

    ledgers = ledger_bytes()
    r = dc.verify()
    assert r.ok
    assert str(dc.layout.cache) in r.deleted
    assert not (dc.layout.cache / "index" / "stale.bin").exists()
    # ledgers are the authority and are never touched
    assert ledger_bytes() == ledgers


def test_a_difference_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dc = busy_home(tmp_path)
    real = verify_mod.answers

    def drifting(handle: Context, now: datetime) -> dict[str, bytes]:
        out = real(handle, now)
        if handle is not dc.context:  # the cold, cache-less context answers differently
            out["doctor"] = out["doctor"][:10] + b"X" + out["doctor"][11:]
        return out

    monkeypatch.setattr(verify_mod, "answers", drifting)
    r = dc.verify()
    assert r.ok is False
    assert len(r.differ) == 1
    diff = r.differ[0]
    assert diff["read"] == "doctor"
    assert diff["first_difference_at"] == 10
    assert diff["bytes_before"] == diff["bytes_after"]


def test_a_read_missing_after_the_rebuild_is_a_difference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dc = busy_home(tmp_path)
    real = verify_mod.answers

    def losing(handle: Context, now: datetime) -> dict[str, bytes]:
        out = real(handle, now)
        if handle is not dc.context:
            del out["box home --all"]
        return out

    monkeypatch.setattr(verify_mod, "answers", losing)
    r = dc.verify()
    assert not r.ok
    assert [d["read"] for d in r.differ] == ["box home --all"]
    assert r.differ[0]["bytes_after"] == 0


def test_verify_leaves_the_handle_usable(tmp_path: Path) -> None:
    dc = busy_home(tmp_path)
    before = dc.sweep(Sweep(distribute=False, include_all=True)).to_dict()
    dc.verify()
    assert dc.sweep(Sweep(distribute=False, include_all=True)).to_dict() == before


def test_a_search_index_that_lies_is_caught(tmp_path: Path) -> None:
    """The index is only a cache: if its rows stop matching the ledgers, verify says so."""
    import sqlite3

    dc = new_home(tmp_path)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    dc.send(Message(sender="ent_a", recipient="ent_b", subject="kettle descaling schedule"))
    dc.send(Message(sender="ent_a", recipient="ent_b", subject="kettle warranty"))
    assert dc.search(Search(query="kettle", include_terminal=True)).count == 2
    ok = dc.verify()
    assert ok.ok and "search kettle --include-terminal" in ok.checked
    dc.search(Search(query="kettle"))  # the warm handle holds the index open; now it loses a row behind our back
    from dovecote.ops.search import texts as search_texts

    db = sqlite3.connect(dc.layout.cache / "search.sqlite")
    db.create_function(search_texts.TEXT_FN, 4, search_texts.text_of)  # the index's content view needs it
    db.execute("DELETE FROM fts WHERE rowid = (SELECT MIN(rowid) FROM docs)")
    db.commit()
    db.close()
    result = dc.verify()
    assert not result.ok
    assert "search kettle --include-terminal" in [d["read"] for d in result.differ]


# -- verify reads one snapshot while others write (issue 6, item 12) ----------------------

WRITER = """
import sys, time
from pathlib import Path
from dovecote.handle.api import open_home
from dovecote.verbs import Message
home, stop = Path(sys.argv[1]), Path(sys.argv[2])
dc = open_home(home)
n = 0
while not stop.exists() and n < 400:  # a steady trickle, not a flood: verify's cost grows with the home
    n += 1
    dc.report([{"ts": "2026-07-05T10:00:00Z", "agent": "w", "tool": "seek", "class": "bug",
                "what": f"loop {n}", "repo": "repo-a" if n % 2 else "all"}])
    dc.distribute()
    dc.send(Message(recipient="ops", sender="dev", subject=f"heron number {n}", body=f"body {n}", current_tic=n))
    if n % 3 == 0:
        dc.report([{"ts": "2026-07-05T11:00:00Z", "agent": "w", "tool": "seek", "class": "triage",
                    "what": "fixed", "repo": "all", "answers": [dc.sweep().letters()[0]["id"]]}])
    time.sleep(0.02)
"""


def _line_count(root: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in root.rglob("*.jsonl"))


def test_verify_during_concurrent_appends_reports_no_difference(tmp_path: Path) -> None:
    dc = busy_home(tmp_path)
    dc.add_entity(EntityAdd(entity_id="dev"))
    dc.send(Message(recipient="ops", sender="dev", subject="heron first", body="b", current_tic=1))
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(dc.layout.root), str(stop)])
    try:
        deadline = time.monotonic() + 30
        while _line_count(dc.layout.root) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)  # the writer is up and appending
        for _ in range(3):
            grew_from = _line_count(dc.layout.root)
            r = run_cli(tmp_path, "verify", "--json", home=dc.layout.root)
            out = orjson.loads(r.stdout)
            assert out["differ"] == [] and out["ok"] is True and r.returncode == 0, out["differ"]
            assert _line_count(dc.layout.root) > grew_from, "the writer must have appended during verify"
            assert dc.verify().ok, "a warm handle in this process too"
    finally:
        stop.touch()
        writer.wait(timeout=30)
    assert writer.returncode == 0
    assert dc.verify().ok and open_home(dc.layout.root).verify().ok


def test_letters_appended_between_the_two_runs_are_not_a_difference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deterministic: another handle writes after the "before" reads, into old boxes and a new one."""
    dc = busy_home(tmp_path)
    dc.add_entity(EntityAdd(entity_id="dev"))
    dc.add_entity(EntityAdd(entity_id="idle"))  # its box does not exist yet when verify starts
    dc.send(Message(recipient="ops", sender="dev", subject="egret first", body="b", current_tic=1))
    real = verify_mod.answers
    other = open_home(dc.layout.root)

    def meddling(handle: Context, now: datetime) -> dict[str, bytes]:
        out = real(handle, now)
        if handle is dc.context:  # between the runs: every kind of ledger grows, and one is born
            other.report([rep("late"), rep("late home", repo="all")])
            other.distribute()
            other.send(Message(recipient="ops", sender="dev", subject="egret late", body="b", current_tic=2))
            other.send(Message(recipient="idle", sender="dev", subject="egret born", body="b", current_tic=2))
        return out

    monkeypatch.setattr(verify_mod, "answers", meddling)
    r = dc.verify()
    assert r.ok, r.differ
    # afterwards every read sees the new letters: the bound was only for verify
    monkeypatch.undo()
    assert dc.box(Box(address="entity:idle")).to_dict()["held"] == 1
    assert dc.sweep(Sweep(
        distribute=False
    )).total == open_home(dc.layout.root).sweep(Sweep(distribute=False)).total == 6
    assert dc.search(Search(query="egret", include_terminal=True)).count == 3
    assert dc.verify().ok


def test_a_write_while_reads_are_bounded_decides_on_the_whole_ledger(tmp_path: Path) -> None:
    """Reads stop at the snapshot, a guarded write never does (it would dedup against a stale index)."""
    dc = busy_home(tmp_path)
    other = open_home(dc.layout.root)
    bounds = dc.store.snapshot(verify_mod.ledgers(dc))
    late = rep("late", repo="all")
    with dc.store.bounded(bounds):
        before = dc.box(Box(address="home")).to_dict()["held"]
        other.report([late])
        other.distribute()
        assert dc.box(Box(address="home")).to_dict()["held"] == before  # the snapshot
        ((_, new),) = dc.store.append(dc.report_boxes()[0], [ledger_lines(dc.layout.home_box())[-1]])
        assert new is False, "the append saw the letter past the bound and did not write it twice"
        assert dc.box(Box(address="home")).to_dict()["held"] == before  # reads are still the snapshot's
    assert dc.box(Box(address="home")).to_dict()["held"] == before + 1
    assert len(ledger_lines(dc.layout.home_box())) == before + 1


def test_the_warm_tracker_folds_answer_as_the_ledgers_do_and_a_lying_one_is_caught(tmp_path: Path) -> None:
    """issue 9: the tracker folds a handle keeps warm (fed after each send, ack and mailman step) are a
    cache: verify compares every tracker from them with the trackers folded from nothing."""
    from deliveryhelpers import busy_home as delivery_busy_home
    from dovecote.ops.warm.trackers import book

    dc = delivery_busy_home(tmp_path)
    ok = dc.verify()
    assert ok.ok and "trackers --all" in ok.checked
    with book(dc.context, "tariq") as b:  # the warm fold loses an ack behind the ledger's back
        row = next(r for r in b.rows.values() if r.ack_ts is not None)
        row.ack_ts, row.ack_state = None, "pending"
    result = dc.verify()
    assert not result.ok and "trackers --all" in [d["read"] for d in result.differ]

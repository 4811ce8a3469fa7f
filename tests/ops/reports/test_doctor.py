"""``doctor``: the mailbox block, counts only, with the real roster; it fails open."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from dovecote.errors import StoreError
from dovecote.handle.api import Dovecote
from dovecote.ledger.jsonl import LedgerReader
from dovecote.store.files import FileStore
from helpers import add_project, new_home, rep, snapshot

NOW = datetime(2026, 7, 12, 15, 0, tzinfo=UTC)

MAILBOX_KEYS = {
    "available", "spool_letters", "misdelivery_total", "misdelivery_7d", "misdelivery_by_kind",
    "misdelivery_unrecognized_kind", "pending_distribution", "pending_letters", "pending_detail", "unreachable",
    "malformed_lines", "spool_path",
    "recurrence", "kindless", "claims",  # case intelligence (issue 10)
    "leases",  # advisory file leases, by state
}


def mis(day: str, kind: str = "leak", **more: object) -> dict[str, object]:
    return rep(f"misdelivery {day} {kind}", ts=f"{day}T09:00:00Z", klass="memory_misdelivery",
               misdelivery_kind=kind, **more)


def home_with_letters(tmp: Path) -> Dovecote:
    dc = new_home(tmp)
    add_project(dc, tmp, "repo-a")
    add_project(dc, tmp, "ghost", exists=False, box_in_repo=True)
    dc.report([
        rep("1"),
        rep("2", repo="zephyr"),
        rep("3", repo="zephyr"),
        rep("4", repo="ghost"),
        rep("5", repo="all"),
    ])
    return dc


def test_the_block_and_its_counts(tmp_path: Path) -> None:
    dc = home_with_letters(tmp_path)
    m = dc.doctor(now=NOW).mailbox
    assert set(m) == MAILBOX_KEYS
    assert m["available"] is True
    assert m["spool_letters"] == 5
    assert m["spool_path"] == str(dc.layout.spool)
    assert m["pending_distribution"] == ["ghost", "zephyr"]
    assert m["pending_letters"] == 3
    assert m["unreachable"] == ["project:ghost"]
    assert m["malformed_lines"] == 0
    assert m["misdelivery_total"] == 0 and m["misdelivery_7d"] == 0
    assert m["leases"] == {"active": 0, "released": 0, "expired": 0}


def test_leases_are_counted_by_state_at_the_doctors_time(tmp_path: Path) -> None:
    from datetime import timedelta

    from dovecote.model.addresses import project as project_box
    from dovecote.verbs import EntityAdd, LeaseRelease, LeaseTake

    dc = home_with_letters(tmp_path)
    for e in ("ent_a", "ent_b"):
        dc.add_entity(EntityAdd(entity_id=e))
    dc.lease_take(LeaseTake(entity_id="ent_a", globs=("src",), ttl=60, project="repo-a"), now=NOW)
    dc.lease_take(LeaseTake(entity_id="ent_b", globs=("docs",), ttl=600, project="repo-a"), now=NOW)
    dc.lease_take(LeaseTake(entity_id="ent_b", globs=("lib",), ttl=600, project="repo-a"), now=NOW)
    dc.lease_release(LeaseRelease(entity_id="ent_b", lease_ids=(), project="repo-a"), now=NOW)
    dc.lease_take(LeaseTake(entity_id="ent_b", globs=("docs",), project="repo-a"), now=NOW)
    later = NOW + timedelta(seconds=120)
    assert dc.doctor(now=later).mailbox["leases"] == {"active": 1, "released": 2, "expired": 1}
    broken = dc.store.path(project_box("repo-a"))
    assert broken is not None
    broken.rename(broken.with_name("moved"))
    broken.mkdir()  # a folder where the ledger should be: unreadable, and doctor still answers (fails open)
    m = dc.doctor(now=later).mailbox
    assert m["available"] and m["leases"] == {"active": 0, "released": 0, "expired": 0}
    assert "project:repo-a" in m["unreachable"]


def test_a_project_in_the_roster_is_not_pending(tmp_path: Path) -> None:
    # m1nd's doctor passed an empty roster and reported every bare name pending (gap 3)
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a", aliases=("ra",))
    dc.report([rep("1", repo="repo-a"), rep("2", repo="RA"), rep("3", repo="repo-a-feature")])
    m = dc.doctor(now=NOW).mailbox
    assert m["pending_distribution"] == [] and m["pending_letters"] == 0


def test_pending_is_counted_before_and_after_distribution(tmp_path: Path) -> None:
    dc = home_with_letters(tmp_path)
    before = dc.doctor(now=NOW).mailbox
    dc.distribute()
    after = dc.doctor(now=NOW).mailbox
    assert before["pending_distribution"] == after["pending_distribution"] == ["ghost", "zephyr"]
    assert after["spool_letters"] == 5, "distribution never empties the spool"


def test_doctor_never_writes(tmp_path: Path) -> None:
    dc = home_with_letters(tmp_path)
    before = snapshot(tmp_path)
    dc.doctor(now=NOW)
    assert snapshot(tmp_path) == before


def test_misdelivery_7d_window(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    # NOW is 2026-07-12: the window is 2026-07-05 .. 2026-07-13 (7 days back, 1 day ahead)
    dc.report([
        mis("2026-07-04"),                    # 8 days old: out
        mis("2026-07-05", "false_absence"),   # 7 days: in
        mis("2026-07-12", "vanished"),        # today: in
        mis("2026-07-13"),                    # tomorrow (clock skew): in
        mis("2026-07-14"),                    # 2 days ahead: out
        rep("not a misdelivery", ts="2026-07-12T00:00:00Z"),
    ])
    m = dc.doctor(now=NOW).mailbox
    assert m["misdelivery_total"] == 5
    assert m["misdelivery_7d"] == 3
    assert m["misdelivery_by_kind"] == {
        "false_absence": 1, "leak": 3, "misattribution": 0, "vanished": 1, "wrong_store_write": 0,
    }
    assert m["misdelivery_unrecognized_kind"] == 0
    # a week later the same letters are all outside
    later = dc.doctor(now=datetime(2026, 7, 30, tzinfo=UTC)).mailbox
    assert later["misdelivery_total"] == 5 and later["misdelivery_7d"] == 0


def test_legacy_misdelivery_lines_count_by_their_kind(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    legacy = (
        b'{"ts":"2026-07-10T13:00:00Z","agent":"x","repo":"repo-a","tool":"seek",'
        b'"class":"memory_misdelivery","kind":"false_absence","what":"beat empty over non-empty store"}\n'
        b'{"ts":"garbage","class":"memory_misdelivery","kind":"report","what":"no sub-kind"}\n'
    )
    dc.layout.spool.write_bytes(legacy)
    m = dc.doctor(now=NOW).mailbox
    assert m["misdelivery_total"] == 2
    assert m["misdelivery_7d"] == 1, "an unparseable ts is outside the window"
    assert m["misdelivery_by_kind"]["false_absence"] == 1
    assert m["misdelivery_unrecognized_kind"] == 1


def test_malformed_lines_are_counted(tmp_path: Path) -> None:
    dc = home_with_letters(tmp_path)
    with open(dc.layout.spool, "ab") as f:
        f.write(b"junk\n{\"torn")
    assert dc.doctor(now=NOW).mailbox["malformed_lines"] == 2


# -- fails open -----------------------------------------------------------------------------


@pytest.mark.parametrize("error", [StoreError("cannot read spool: Input/output error"), OSError(5, "I/O error")])
def test_an_unreadable_spool_marks_the_block_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    dc = home_with_letters(tmp_path)
    real = FileStore.read

    def failing(self: FileStore, where: object, after: object = None) -> object:
        if where == "spool":
            raise error
        return real(self, where, after)  # type: ignore[arg-type]

    monkeypatch.setattr(FileStore, "read", failing)
    out = dc.doctor(now=NOW)
    assert out.mailbox["available"] is False
    assert out.mailbox["spool_path"] == str(dc.layout.spool)
    assert out.mailbox["error"]


def test_a_reader_failing_everywhere_still_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dc = home_with_letters(tmp_path)

    def boom(self: LedgerReader) -> list[object]:
        raise StoreError(f"cannot read {self.path}: Input/output error")

    monkeypatch.setattr(LedgerReader, "refresh", boom)
    out = dc.doctor(now=NOW)
    assert out.mailbox["available"] is False


def test_a_spool_that_is_a_directory_fails_open(tmp_path: Path) -> None:
    # a real I/O error that root cannot bypass (chmod 000 would not stop root)
    dc = new_home(tmp_path)
    dc.layout.spool.mkdir()
    (dc.layout.spool / "x").write_bytes(b"x" * 100)
    out = dc.doctor(now=NOW)
    assert out.mailbox["available"] is False
    assert str(dc.layout.spool) in out.mailbox["error"]

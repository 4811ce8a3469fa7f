"""Crash at every file operation of a roster edit, the git merge driver, and a copy between stores
(``crashsweep``: a sample in ``make test``, every point in ``make stress``).

* A roster edit replaces ``config.toml`` whole: after a crash it is the old
  roster or the new one, never half of one, and the retry leaves exactly the
  bytes a run with no crash leaves.
* The merge driver writes the union into ``ours`` whole: after a crash it holds
  our side or the union, and the retry (git runs the driver again) gives the
  union's bytes.
* ``copy`` from one home's files into another's (the PostgreSQL side is
  another suite's): after a crash the target holds a prefix of each source
  ledger, nothing twice, and the re-run leaves the target's letters identical
  to the source's, line for line (a line torn by the power cut stays in the
  file as a reported defect, as every torn tail does: ledgers are never
  rewritten; with no tear the files are byte-identical).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from crashsweep import DEPTHS, SWEEPS, Sweeper, ledger_ids, where
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote, init
from dovecote.ledger import append as ledger_append
from dovecote.ledger.jsonl import LedgerReader
from dovecote.model.letters import canonical_line
from dovecote.ops.admin import store_copy
from dovecote.ops.admin.merge import merge_files
from dovecote.ops.context import Context
from dovecote.roster import config as roster
from dovecote.roster.home import Layout
from dovecote.store.files import FileStore
from dovecote.verbs import EntityAdd, ProjectAdd
from faultfs import FaultFS
from mailhelpers import ENTITY, mail_home, send

pytestmark = pytest.mark.files_only


def _home(tree: Path) -> Path:
    return tree / "owner" / ".dovecote"


# -- a roster edit -------------------------------------------------------------------------------


def _edits(tree: Path, acked: list[str]) -> None:
    dc = Dovecote(_home(tree))
    for step in (lambda: dc.add_project(ProjectAdd(name="atlas", root=str(tree / "atlas"))),
                 lambda: dc.add_entity(EntityAdd(entity_id="ent_new"))):
        try:
            step()
        except Refusal as e:  # the retry of an edit that landed
            assert e.reason in ("duplicate_project", "duplicate_entity", "already_exists"), e
        acked.append((_home(tree) / "config.toml").read_text())


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_roster_edits(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    base, work = tmp_path / "base", tmp_path / "work"
    mail_home(work)
    work.rename(base)
    before = (_home(base) / "config.toml").read_text()
    seen: list[str] = []

    def check(tree: Path, fs: FaultFS | None, acked: list[str]) -> None:
        config = _home(tree) / "config.toml"
        now = config.read_text()
        if fs is None:
            seen.extend([before, *acked])
        assert now in seen, f"a roster half written {where(fs)}"
        assert all(a in seen[: seen.index(now) + 1] for a in acked), f"an acknowledged edit was lost {where(fs)}"
        roster.load(config)  # it parses
        if fs is not None:
            _edits(tree, [])
        assert config.read_text() == seen[-1], f"the retry did not converge {where(fs)}"

    points = sweeper("roster edits (a project, an entity)", base, work, _edits, check, depth)
    assert points.count("rename") + points.count("link") >= 2, points


# -- the git merge driver --------------------------------------------------------------------------


def _letters(tag: str, n: int) -> bytes:
    return b"".join(canonical_line({"ts": "2026-07-05T10:00:00Z", "agent": tag, "what": f"{tag} {i}"}) + b"\n"
                    for i in range(n))


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_the_merge_driver(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    base, common = tmp_path / "base", _letters("common", 3)
    base.mkdir()
    for name, body in (("ancestor", common), ("ours", common + _letters("ours", 4)),
                       ("theirs", common + _letters("theirs", 5))):
        (base / name).write_bytes(body)
    ours = (base / "ours").read_bytes()
    union: list[bytes] = []

    def op(tree: Path, acked: list[str]) -> None:
        merge_files(tree / "ancestor", tree / "ours", tree / "theirs")
        acked.append("merged")

    def check(tree: Path, fs: FaultFS | None, acked: list[str]) -> None:
        got = (tree / "ours").read_bytes()
        if fs is None:
            union.append(got)
        assert got in (ours, union[0]), f"a merge half written {where(fs)}"
        if fs is not None:
            op(tree, [])
        assert (tree / "ours").read_bytes() == union[0], where(fs)
        r = LedgerReader(tree / "ours")
        r.refresh()
        assert len(r.letters) == 12 and r.duplicates == 0 and r.torn is None, where(fs)

    points = sweeper("merge driver (union into ours)", base, tmp_path / "work", op, check, depth)
    assert points[-2:] == ["rename", "fsync_dir"], points


# -- copy from one home's files into another's -----------------------------------------------------


def _defects(path: Path) -> int:
    r = LedgerReader(path)
    r.refresh()
    return len(r.defects)


def _copy(tree: Path, acked: list[str]) -> None:
    src = Context.open(Layout(_home(tree)))
    target = Layout(tree / "target" / ".dovecote")
    report = store_copy.copy(src, src.store, FileStore(target, src.roster), ("files", "target"), write=True)
    assert all(b.to_dict()["missing"] == 0 for b in report.boxes), report.to_dict()
    acked.append("copied")


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_a_copy_between_stores(
    tmp_path: Path, depth: str, sweeper: Sweeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_copy, "CHUNK", 3)  # several appends per box: a crash between two of them
    base, work = tmp_path / "base", tmp_path / "work"
    dc = mail_home(work)
    for i in range(7):
        send(dc, f"copied {i}")
    send(dc, "back", recipient="ent_ops", sender=ENTITY)
    init(work / "target" / ".dovecote", owner_root=str(work / "target"))
    shutil.copy(_home(work) / "config.toml", work / "target" / ".dovecote" / "config.toml")
    work.rename(base)
    source = ledger_ids(_home(base))
    reference: dict[str, bytes] = {}

    def target_ledgers(tree: Path) -> dict[str, bytes]:
        boxes = tree / "target" / ".dovecote" / "boxes"
        return {p.relative_to(boxes).as_posix(): p.read_bytes() for p in sorted(boxes.rglob("letters.jsonl"))}

    def check(tree: Path, fs: FaultFS | None, acked: list[str]) -> None:
        got = ledger_ids(tree / "target" / ".dovecote")
        for box, ids in got.items():
            assert ids == source[box][: len(ids)], f"{box}: not a prefix of the source {where(fs)}"
        if fs is None:
            reference.update(target_ledgers(tree))
            assert got == source
            return
        _copy(tree, [])
        assert ledger_ids(tree / "target" / ".dovecote") == source, f"the re-run did not converge {where(fs)}"
        again = target_ledgers(tree)
        if not any(_defects(tree / "target" / ".dovecote" / "boxes" / b) for b in again):
            assert again == reference, f"the re-run's ledgers are not byte-identical {where(fs)}"
        ledger_append.append(LedgerReader(tree / "target" / ".dovecote" / "boxes" / "home" / "letters.jsonl"),
                      [canonical_line({"agent": "next", "what": "the next append goes through"})])

    points = sweeper("copy between stores (files to files)", base, work, _copy, check, depth)
    assert points.count("fsync") >= 3, points

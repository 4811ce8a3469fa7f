"""Crash the writers of the caches: the /inbox view tree, an inbox snapshot, and the SQLite search index.

A cache may be deleted at any time (DESIGN 1.1), so a crash of its writer may
leave it old, partial or garbage, but never wrong: the next read answers as a
fresh build does, the next write completes it, and no ledger changes.

* The view and the snapshot write through ``fileops``: they are crashed at
  their file operations (``crashsweep``: a sample in ``make test``, every point
  in ``make stress``); then the view run again gives the tree a run with no
  crash gives, a cold inbox read answers as before, and ``verify`` passes.
* SQLite does its own I/O, so the search index is crashed on its files: the
  image a power cut leaves while an update of the index is under way is made
  by tearing each of its files (the database and its write-ahead log) at a
  page boundary, new bytes before it and old after, or garbling the page
  there; ``search`` over each image must answer exactly as a fresh build does.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from crashsweep import DEPTHS, SAMPLE, SWEEPS, Sweeper, based, ledger_ids, note_row, where
from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.verbs import Inbox, Move, MoveKind, Search, View
from faultfs import FaultFS
from mailhelpers import ENTITY, SENDER, files_under, mail_home, send, view_root

pytestmark = pytest.mark.files_only

NOW = datetime(2026, 7, 5, 10, 0, tzinfo=UTC)


def _home(tree: Path) -> Path:
    return tree / "owner" / ".dovecote"


def _mail(work: Path, n: int = 4) -> Dovecote:
    dc = mail_home(work)
    ids = [send(dc, f"kestrel subject {i}") for i in range(n)]
    dc.move(Move(kind=MoveKind.seen, entity_id=ENTITY, ref=ids[0], current_tic=101), now=NOW)
    dc.move(Move(kind=MoveKind.claim, entity_id=ENTITY, ref=ids[0], current_tic=101), now=NOW)
    return dc


# -- the view tree ------------------------------------------------------------------------------


def _view(tree: Path, acked: list[str]) -> None:
    Dovecote(_home(tree)).view(View(entity_id=ENTITY, current_tic=103), now=NOW)
    acked.append("view")


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_a_view_write(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    base, work = based(tmp_path, _mail)
    ledgers = ledger_ids(_home(base))
    reference: dict[str, bytes] = {}

    def check(tree: Path, fs: FaultFS | None, acked: list[str]) -> None:
        dc = Dovecote(_home(tree))
        assert ledger_ids(_home(tree)) == ledgers, f"a view write changed a ledger {where(fs)}"
        if fs is None:
            reference.update(files_under(view_root(dc)))
        else:
            _view(tree, [])  # the next run completes the tree and removes what the killed one left
        assert files_under(view_root(dc)) == reference, f"the view does not rebuild identical {where(fs)}"
        assert dc.verify(now=NOW).ok, where(fs)

    points = sweeper("view write (one entity's tree)", base, work, _view, check, depth)
    assert "rename" in points, points


# -- an inbox snapshot (foldcache) --------------------------------------------------------------


def _inbox(tree: Path) -> object:
    return builtins(Dovecote(_home(tree)).inbox(Inbox(entity_id=ENTITY), now=NOW))


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_a_snapshot_write(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    def build(work: Path) -> None:
        _mail(work)
        shutil.rmtree(_home(work) / "cache", ignore_errors=True)  # a cold read writes the snapshot

    base, work = based(tmp_path, build)
    answer = _inbox(base)
    shutil.rmtree(_home(base) / "cache", ignore_errors=True)

    def op(tree: Path, acked: list[str]) -> None:
        assert _inbox(tree) == answer
        acked.append("read")

    def check(tree: Path, fs: FaultFS | None, acked: list[str]) -> None:
        assert _inbox(tree) == answer, f"a cold read after the crash answers otherwise {where(fs)}"
        assert _inbox(tree) == answer, f"a warm snapshot read answers otherwise {where(fs)}"
        assert Dovecote(_home(tree)).verify(now=NOW).ok, where(fs)

    points = sweeper("inbox snapshot write", base, work, op, check, depth)
    assert "rename" in points, points


# -- the search index: power-cut images of its files ------------------------------------------------

PAGE = 4096
QUERIES = ("kestrel", "3", "body subject", "kestrel 12")


def _answers(home: Path) -> list[object]:
    dc = Dovecote(home)
    return [builtins(dc.search(Search(query=q, limit=100), now=NOW)) for q in QUERIES]


def _files(cache: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(cache.glob("search.sqlite*")) if p.is_file()}


def _images(old: dict[str, bytes], new: dict[str, bytes], depth: str) -> list[tuple[str, dict[str, bytes]]]:
    """The files a power cut may leave during the update from ``old`` to ``new``: each file torn at each
    page boundary (new bytes before, old after) or with its page there garbled; the others old or new."""
    out: list[tuple[str, dict[str, bytes]]] = []
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name, b""), new.get(name, b"")
        pages = max(len(before), len(after)) // PAGE + 1
        cuts = range(pages) if depth == "full" else sorted({0, pages - 1, *range(SAMPLE, pages, SAMPLE)})
        for cut in cuts:
            at = cut * PAGE
            torn = after[:at] + before[at:]
            garbled = after[:at] + bytes((b * 7 + 13) % 256 for b in after[at:at + PAGE]) + before[at + PAGE:]
            for others, label in ((old, "others old"), (new, "others new")):
                for tag, body in (("torn", torn), ("garbled", garbled)):
                    files = {**others, name: body}
                    out.append((f"{name} {tag} at page {cut}, {label}", {k: v for k, v in files.items() if v}))
    return out


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_search_index_cut_mid_update_answers_as_a_fresh_build(tmp_path: Path, depth: str) -> None:
    home = _home(tmp_path / "work")
    dc = _mail(tmp_path / "work", 30)
    _answers(home)  # builds the index
    cache = home / "cache"
    old = _files(cache)
    for i in range(30, 60):
        send(dc, f"kestrel subject {i}", sender=SENDER)
    _answers(home)  # the update
    new = _files(cache)
    assert old != new and any(len(v) > PAGE for v in new.values()), "the update wrote no index page"
    fresh = tmp_path / "fresh"
    shutil.copytree(home, fresh)
    shutil.rmtree(fresh / "cache")
    expected = _answers(fresh)
    images = _images(old, new, depth)
    for label, files in images:
        shutil.rmtree(cache)
        cache.mkdir()
        for name, body in files.items():
            (cache / name).write_bytes(body)
        assert _answers(home) == expected, f"search over a crashed index answers otherwise: {label}"
    print(f"\ncrash points: search index update: {len(images)} power-cut images searched")
    note_row("search index update (power-cut images of its files)", len(images), len(images), len(images), depth,
             counted_at_every_depth=False)
    assert len(images) >= 8

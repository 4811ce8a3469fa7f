"""Persisted sweep folds: a cold process reads only the bytes appended since.

After a full sweep the fold's state is snapshotted into ``cache/sweep/``: for
every source (the spool and each report box) the store's ``Mark`` of where the
fold stopped (the store checks it before trusting it: for files the inode and a
digest of the bytes before it) and the malformed lines seen before it; and for
the whole union the sets the fates are a function of, the counts, and the open
letters' rows, ready to emit. A cold process loads it, asks the store for each
source's letters after its mark (``Store.tail``), folds only those, and answers.

It is a cache like every other (DESIGN 1.1): deletable at any time, written
atomically through ``Layout.cache_dir`` (never through a symlink), and never
trusted: a file that does not decode, another roster or set of sources, or a
source whose check fails (replaced, shrunk, rewritten in place) means a full
read, which writes a fresh snapshot. ``verify`` compares a sweep answered from
the snapshot with one folded from nothing.

The incremental fold here is the fate rule of ``derive.fates`` restated over
id sets instead of letters (a new letter is only ever compared with ids);
tests fold random letters both ways, split at random points, and require
byte-identical answers.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from dovecote.derive.fates import CLAY, EXTERNAL, FLIGHT, WET, FateBook, Tally, precedence
from dovecote.errors import StoreError
from dovecote.ledger.jsonl import Defect, write_atomic
from dovecote.model.addresses import Address
from dovecote.model.letters import Letter
from dovecote.model.vocab import MISDELIVERY_CLASS, REPORT_KINDS
from dovecote.ops.reports.sweeprows import NO_ANSWERS, Row, open_dicts, whats
from dovecote.store.core import Mark
from dovecote.util.timeutil import instant_text

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Store, Tail, Where

VERSION = 2  # 2: sources hold store marks
NAME = "fold.msgpack"


class Source(msgspec.Struct, array_like=True):
    label: str
    mark: Mark
    defects: list[tuple[str, int, str, str]]


class Snapshot(msgspec.Struct, array_like=True):
    version: int
    key: str
    sources: list[Source]
    entries: list[str]
    receipt_ids: list[str]
    external: list[str]
    closed: list[str]
    picked: list[str]
    counts: dict[str, int]
    misdelivery: int
    refs: dict[str, list[str]]  # non-receipt referrers of every id that may still be open
    rows: list[Row]


_encode = msgspec.msgpack.Encoder().encode
_decode_head = msgspec.msgpack.Decoder(Snapshot).decode
_decode_rows = msgspec.msgpack.Decoder(list[Row]).decode
ROWS_PER_FRAME = 16384


def dumps(snap: Snapshot) -> Iterator[bytes]:
    """The file's frames (8-byte length, then msgpack): the snapshot without its rows,
    then the rows a frame at a time, so no single buffer holds them all."""
    rows, snap.rows = snap.rows, []
    try:
        frames = [_encode(snap)]
    finally:
        snap.rows = rows
    yield len(frames[0]).to_bytes(8, "little") + frames[0]
    for n in range(0, len(rows), ROWS_PER_FRAME):
        frame = _encode(rows[n : n + ROWS_PER_FRAME])
        yield len(frame).to_bytes(8, "little") + frame


def loads(data: bytes) -> Snapshot:
    """Inverse of ``dumps``; ``msgspec.DecodeError`` for anything else (truncated, garbage)."""
    view = memoryview(data)
    at = 0
    frames: list[memoryview] = []
    while at < len(view):
        size = int.from_bytes(view[at : at + 8], "little")
        if at + 8 + size > len(view) or len(view) - at < 8:
            raise msgspec.DecodeError("truncated snapshot")
        frames.append(view[at + 8 : at + 8 + size])
        at += 8 + size
    if not frames:
        raise msgspec.DecodeError("empty snapshot")
    snap = _decode_head(frames[0])
    for frame in frames[1:]:
        snap.rows += _decode_rows(frame)
    return snap


def fold_key(ctx: Context, sources: Sequence[Where]) -> str:
    """What the snapshot was folded for: the roster (its markers decide ``external``) and the sources."""
    return "\x00".join([ctx.roster.signature, *map(str, sources)])


class Resumed(Tally):
    """The sweep's union resumed from a snapshot, fed only what is new."""

    def __init__(self, snap: Snapshot, markers: Sequence[str]) -> None:
        self.entries: set[str] = set(snap.entries)
        self.receipt_ids = set(snap.receipt_ids)
        self.external = set(snap.external)
        self.closed = set(snap.closed)
        self.picked = set(snap.picked)
        self.counts = dict(snap.counts)
        self.misdelivery = snap.misdelivery
        self.refs = snap.refs
        self.open_rows = {r.id: r for r in snap.rows}
        self._is_external = FateBook(markers).is_external

    def feed(self, box: str | None, letters: Sequence[Letter]) -> None:
        """Fold one source's new letters (``box``: its label, None for the spool)."""
        entries, rows, closed, picked, counts = self.entries, self.open_rows, self.closed, self.picked, self.counts
        fresh: list[Letter] = []
        answering: list[Letter] = []
        for lt in letters:
            lid = lt.id
            if lid in entries:  # held elsewhere too: the row names the first box by label
                row = rows.get(lid)
                if row is not None and box is not None and (row.box is None or box < row.box):
                    row.box = box
                continue
            if lt.kind is not None and lt.kind not in REPORT_KINDS:
                continue
            entries.add(lid)
            if lt.is_receipt:
                self.receipt_ids.add(lid)
            else:
                if lt.klass == MISDELIVERY_CLASS:
                    self.misdelivery += 1
                fate = precedence(self._is_external(lt.tool), lid in closed, lid in picked)
                if fate is EXTERNAL:
                    self.external.add(lid)
                else:
                    counts[fate] += 1
                    if fate is not CLAY:
                        fresh.append(lt)
            if lt.answers:
                answering.append(lt)
        for lt, what in zip(fresh, whats(fresh), strict=True):
            rows[lt.id] = Row(
                instant_text(lt.ts) + lt.id, lt.id, lt.ts, lt.agent, lt.klass, lt.repo, lt.brain, lt.tool, what,
                lt.answers or NO_ANSWERS, box,
            )
        for lt in answering:  # answers last: a letter answered within the same batch moves too
            if lt.id in self.receipt_ids:
                for a in lt.answers or ():
                    if a in closed:
                        continue
                    closed.add(a)
                    if rows.pop(a, None) is not None:
                        counts[FLIGHT if a in picked else WET] -= 1
                        counts[CLAY] += 1
            else:
                for a in lt.answers or ():
                    self.refs.setdefault(a, []).append(lt.id)
                    if a in closed or a in picked:
                        continue
                    picked.add(a)
                    if a in rows:
                        counts[WET] -= 1
                        counts[FLIGHT] += 1
        counts[EXTERNAL] = len(self.external)

    def sorted_rows(self) -> list[Row]:
        return sorted(self.open_rows.values(), key=lambda r: r.key)  # kept sorted: Timsort only merges the new

    def batches(self) -> Iterator[list[dict[str, Any]]]:
        """The open rows, oldest first, as ``SweepResult.letters()`` lists them, a batch at a time."""
        return open_dicts(self.sorted_rows(), self.picked, self.refs)

    def rows(self) -> list[dict[str, Any]]:
        return [row for batch in self.batches() for row in batch]

    def snapshot(self, key: str, sources: list[Source]) -> Snapshot:
        live = self.open_rows
        refs = {a: b for a, b in self.refs.items() if a in live or (a not in self.entries and a not in self.closed)}
        return Snapshot(
            VERSION, key, sources, list(self.entries), list(self.receipt_ids), list(self.external),
            list(self.closed), list(self.picked), dict(self.counts), self.misdelivery, refs,
            self.sorted_rows(),
        )


def from_book(book: FateBook, rows: list[Row], key: str, sources: list[Source]) -> Snapshot:
    """The snapshot of a full fold; ``rows`` are its open rows, oldest first."""
    entries, closed, receipts = book.entries, book.closed, book.receipt_ids
    live = {r.id for r in rows}
    refs: dict[str, list[str]] = {}
    for lt in book.answering:  # only a non-receipt refers without closing: read those, not every answer's list
        if lt.id in receipts:
            continue
        for a in lt.answers or ():
            if a in live or (a not in entries and a not in closed):
                refs.setdefault(a, []).append(lt.id)
    return Snapshot(
        VERSION, key, sources, list(entries), list(book.receipt_ids), list(book.external), list(closed),
        list(book.picked), dict(book.counts), book.misdelivery, refs, rows,
    )


def source_of(label: str, mark: Mark, defects: Sequence[Defect]) -> Source:
    return Source(label, mark, [(d.path, d.line, d.kind, d.detail) for d in defects])


def path_of(ctx: Context) -> Path:
    return ctx.layout.cache_dir("sweep") / NAME


def save(ctx: Context, snap: Snapshot) -> None:
    """Write the snapshot atomically; a cache that cannot be written is simply not written."""
    with contextlib.suppress(OSError, StoreError):
        write_atomic(path_of(ctx), dumps(snap))


def load(ctx: Context, key: str) -> Snapshot | None:
    """The snapshot for ``key``, or None: absent, unreadable, garbage, another version or key."""
    try:
        path = ctx.layout.cache_dir("sweep", create=False) / NAME
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
            snap = loads(f.read())
    except (OSError, StoreError, msgspec.DecodeError):
        return None
    if snap.version != VERSION or snap.key != key:
        return None
    return snap


def resume(store: Store, where: Where, src: Source) -> Tail | None:
    """The letters of ``where`` after the snapshot's mark (read privately by the store:
    its own readers hold whole ledgers that other reads rely on), or None when the
    store does not trust the mark (the box was replaced, shrank, or rewritten before it)."""
    try:
        t = store.tail(where, src.mark)
    except StoreError:
        return None
    if t.fresh and (src.mark.ident or src.mark.position):  # a mark of an empty or absent box is no claim
        return None
    return t


def box_label(where: Where) -> str | None:
    return str(where) if isinstance(where, Address) else None


def old_defects(src: Source) -> list[Defect]:
    return [Defect(*d) for d in src.defects]

"""The case fold over the spool and every reachable report box, warm and persisted.

One way in for every reader of cases (``cases``, ``case``, ``claims``,
``sentinels``, the sweep's ``recurrence``/``kindless``, doctor): ``load`` feeds
the fold each source's letters after the store ``Mark`` where it last stopped
(``Store.tail``), so a warm handle reads only what is new, and a cold process
starts from the snapshot in ``cache/cases/`` and does the same. The snapshot is
a cache like every other (DESIGN 1.1): never trusted (another roster, other
sources, a mark the store refuses, a file that does not decode: fold from
nothing), written atomically, once per handle (when it first folds: a cold
process's next run reads only what came after), deletable; ``tests/ops/cases/test_cases.py`` deletes it and
requires every case byte for byte.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from dovecote.derive.cases.book import CaseBook
from dovecote.derive.cases.records import CaseState
from dovecote.errors import StoreError
from dovecote.ledger.jsonl import write_atomic
from dovecote.model.addresses import Address
from dovecote.model.letters import Letter
from dovecote.ops.warm.registry import Kind
from dovecote.store.capability import Capability, can
from dovecote.store.core import Mark

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Where

VERSION = 1
NAME = "fold.msgpack"


class Snapshot(msgspec.Struct, array_like=True):
    version: int
    key: str
    marks: list[tuple[str, Mark]]
    state: CaseState


@dataclass
class Warm:
    key: str = ""
    book: CaseBook | None = None
    marks: dict[str, Mark] = field(default_factory=dict)
    saved: bool = False  # this handle wrote (or found current) the snapshot: a warm handle saves once
    lock: threading.Lock = field(default_factory=threading.Lock)


CASES: Kind[Warm] = Kind("cases")
_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(Snapshot).decode


@dataclass(frozen=True, slots=True)
class Loaded:
    """The fold as it is now, and the boxes it could not read (named, never skipped)."""

    book: CaseBook
    unreachable: list[str]


def sources(ctx: Context) -> tuple[list[Where], list[str]]:
    """The spool and every reachable report box; the unreachable ones by label."""
    out: list[Where] = ["spool"]
    unreachable = []
    for addr in ctx.roster.report_boxes():
        (out.append(addr) if ctx.store.reachable(addr) else unreachable.append(str(addr)))
    return out, unreachable


def _label(where: Where) -> str | None:
    return str(where) if isinstance(where, Address) else None


def load(ctx: Context, persist: bool = True) -> Loaded:
    """The case fold fed everything appended since it was last fed (see the module docstring).
    ``persist``: write the snapshot when the fold moved (doctor, which never writes, passes False)."""
    warm = ctx.warm.get(CASES) or ctx.warm.put(CASES, Warm())
    with warm.lock:
        return _load(ctx, warm, persist)


def _load(ctx: Context, warm: Warm, persist: bool, trust_snapshot: bool = True) -> Loaded:
    wheres, unreachable = sources(ctx)
    key = "\x00".join([ctx.roster.signature, *map(str, wheres)])
    persisted = False
    if warm.book is None or warm.key != key:
        warm.key, warm.book, warm.marks, warm.saved = key, CaseBook(), {}, False
        snap = _read_snapshot(ctx, key) if trust_snapshot else None
        if snap is not None:
            warm.book, warm.marks, persisted = CaseBook(snap.state), dict(snap.marks), True
    moved = not persisted
    for where in wheres:
        label = str(where)
        mark = warm.marks.get(label)
        try:
            got = _shared(ctx, where) if mark is None else None
            if got is None:
                t = ctx.store.tail(where, mark)
                if t.fresh and mark is not None and (mark.ident or mark.position):  # replaced: fold all again
                    warm.book, warm.marks = None, {}
                    return _load(ctx, warm, persist, trust_snapshot=False)
                got = (t.letters, t.mark)
        except StoreError:
            unreachable.append(label)
            continue
        letters, warm.marks[label] = got
        if letters:
            assert warm.book is not None
            warm.book.feed(_label(where), letters)
            moved = True
    assert warm.book is not None
    if moved and persist and not warm.saved:
        warm.saved = True
        _save(ctx, Snapshot(VERSION, key, sorted(warm.marks.items()), warm.book.state(ordered=False)))
    return Loaded(warm.book, sorted(set(unreachable)))


def _shared(ctx: Context, where: Where) -> tuple[Sequence[Letter], Mark] | None:
    """A first read through the file store's own reader (the sweep's read of the same box,
    not a second parse), when its mark is exactly where that read stopped; else None."""
    if not can(ctx.store, Capability.shared_reads):
        return None
    read = ctx.store.read(where)
    mark = ctx.store.mark(where)
    return (read.letters, mark) if mark.position == read.cursor.position else None


def _path(ctx: Context, create: bool = True) -> Path:
    return ctx.layout.cache_dir("cases", create=create) / NAME


def _read_snapshot(ctx: Context, key: str) -> Snapshot | None:
    try:
        with os.fdopen(os.open(_path(ctx, create=False), os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
            snap = _decode(f.read())
    except (OSError, StoreError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    return snap if snap.version == VERSION and snap.key == key else None


def _save(ctx: Context, snap: Snapshot) -> None:
    """Write the snapshot atomically; a cache that cannot be written is simply not written."""
    with contextlib.suppress(OSError, StoreError):
        write_atomic(_path(ctx), _encode(snap))

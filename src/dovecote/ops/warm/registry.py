"""Warm folds: one registry per handle, one entry per box, one lock per entry.

Law: a warm fold is a cache of a pure fold over a box's letters (DESIGN 1.4,
7). Each entry holds, per kind of fold, the fold and how far into the box it
was fed: an in-process ``Cursor`` (fed by ``store.read(after=cursor)``) or a
persisted ``Mark`` (fed by ``store.tail(mark)``, for a fold restored from its
snapshot in ``cache/``). Fed the letters after that point, and started again
from nothing whenever the store says ``fresh`` (the box was replaced, the
cursor or mark is not trusted), a warm fold always equals a cold one
(``verify`` proves it).

Locks, and why they cannot deadlock: an entry's lock guards its folds; a
thread holds it while it feeds a fold and reads it (``fed`` is a context
manager). A store lock (a ``Guard``) is taken, if at all, *before* an entry's
lock, never while holding one: an unguarded feed reads the store with the
entry released, then takes the lock and feeds only if nobody fed the fold
meanwhile (else it reads again from the newer cursor). A compare-and-swap
passes its ``Guard`` and the fold is fed from what the guard read, so the
decision is made on the box as held under its lock. Creating an entry takes
the registry's own lock, briefly.

Handle-wide values that are not per box (the sweep's union over the report
boxes, distribution's memory, the search index) are kept under typed ``Kind``
keys by ``get``/``put``, never by strings.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import msgspec

if TYPE_CHECKING:
    from dovecote.model.addresses import Address
    from dovecote.model.letters import Letter
    from dovecote.store.core import Cursor, Guard, Mark, Store, Where

F = TypeVar("F")


class Kind(Generic[F]):
    """The typed name of a warm value: ``Registry.get(kind)`` is an ``F``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Kind({self.name!r})"


class Fed(msgspec.Struct, Generic[F], eq=False):
    """One fold and where it was fed to: a cursor (this process) or a mark (a snapshot)."""

    fold: F
    cursor: Cursor | None = None
    mark: Mark | None = None
    #: letters fed since the fold was last snapshotted (the persisting side's measure of "changed")
    since_saved: int = 0

    def position(self) -> object:
        return self.cursor if self.cursor is not None else self.mark


class Entry(msgspec.Struct, eq=False):
    """One box's warm folds by kind, under one lock (reentrant: a holder may feed another kind)."""

    lock: threading.RLock = msgspec.field(default_factory=threading.RLock)
    folds: dict[Kind[Any], Fed[Any]] = msgspec.field(default_factory=dict)


#: Restores a fold from its snapshot: the fold and its mark, or None (no usable snapshot).
Restore = Callable[[], "tuple[F, Mark] | None"]


class Registry:
    """Every warm fold of one handle (``Context.warm``); see the module docstring.

    It knows folds only by their ``Kind`` and reads boxes only through the ``Store`` it
    is handed: which folds exist is for the modules that keep them (an entity's inbox:
    ``foldcache``; its trackers: ``ops.warm.trackers``).
    """

    def __init__(self) -> None:
        self._made = threading.Lock()
        self._entries: dict[str, Entry] = {}
        self._values: dict[Kind[Any], Any] = {}
        self._locks: dict[Kind[Any], threading.RLock] = {}

    def entry(self, where: Where) -> Entry:
        """The entry of ``where``, made on first use."""
        key = str(where)
        e = self._entries.get(key)
        if e is None:
            with self._made:
                e = self._entries.setdefault(key, Entry())
        return e

    def lock_of(self, kind: Kind[Any]) -> threading.RLock:
        """The lock of a handle-wide fold (a union over several boxes): held while it is fed."""
        lock = self._locks.get(kind)
        if lock is None:
            with self._made:
                lock = self._locks.setdefault(kind, threading.RLock())
        return lock

    def get(self, kind: Kind[F]) -> F | None:
        """The handle-wide value kept under ``kind``."""
        return cast("F | None", self._values.get(kind))

    def put(self, kind: Kind[F], value: F) -> F:
        self._values[kind] = value
        return value

    def __getitem__(self, kind: Kind[F]) -> F:
        return cast(F, self._values[kind])

    def __setitem__(self, kind: Kind[F], value: F) -> None:
        self._values[kind] = value

    def pop(self, kind: Kind[F], default: None = None) -> F | None:
        return cast("F | None", self._values.pop(kind, default))

    def __contains__(self, kind: Kind[Any]) -> bool:
        return kind in self._values

    def clear(self) -> None:
        """Forget every fold (the next read of each box folds it from nothing, or from its snapshot)."""
        with self._made:
            self._entries.clear()
            self._values.clear()

    @contextmanager
    def fed(
        self,
        store: Store,
        where: Where,
        kind: Kind[F],
        make: Callable[[], F],
        add: Callable[[F, Sequence[Letter]], None],
        held: Guard | None = None,
        restore: Restore[F] | None = None,
    ) -> Iterator[Fed[F]]:
        """The ``kind`` fold of ``where`` brought up to date, yielded under the entry's lock.

        ``held`` is the box under its store lock (a compare-and-swap): the fold is
        fed from what it read. A box with no fold yet is fed from ``restore``'s
        snapshot and the letters after its mark when there is one, else from
        nothing.
        """
        e = self.entry(where)
        while True:
            with e.lock:
                got = e.folds.get(kind)
                start = got.position() if got is not None else None
            if got is None and restore is not None:
                restored = restore()
                base, mark = restored if restored is not None else (None, None)
            else:
                base, mark = None, None
            new = _read(store, where, got, held, mark, restore is not None)
            e.lock.acquire()
            now = e.folds.get(kind)
            if (now.position() if now is not None else None) == start:
                break
            e.lock.release()  # another thread fed it meanwhile: read again from where it stopped
        try:
            letters, cursor, tail_mark, fresh = new
            old = got if got is not None and not fresh else None
            if fresh or (got is None and base is None):
                fold = make()
            elif got is not None:
                fold = got.fold
            else:
                fold = cast(F, base)
            if letters:
                add(fold, letters)
            since = (old.since_saved if old is not None else 0) + len(letters)
            rec = Fed(fold, cursor, tail_mark, since if not fresh and not (got is None and base is None) else -1)
            e.folds[kind] = rec
            yield rec
        finally:
            e.lock.release()


def _read(
    store: Store, where: Where, got: Fed[Any] | None, held: Guard | None, mark: Mark | None, marks: bool
) -> tuple[Sequence[Letter], Cursor | None, Mark | None, bool]:
    """What is new after the fold's position: (letters, cursor or None, mark or None, fresh).

    A persisted kind (``marks``) follows marks from its first read on, so it can
    be snapshotted at any point; the others follow the store's cursors.
    """
    if got is not None:
        mark = got.mark
    if marks:
        t = held.tail(mark) if held is not None else store.tail(where, mark)
        return t.letters, None, t.mark, t.fresh
    after = got.cursor if got is not None else None
    r = held.read(after) if held is not None else store.read(where, after=after)
    return r.letters, r.cursor, None, r.fresh and after is not None


@contextmanager
def guarded_many(store: Store, addrs: list[Address]) -> Iterator[dict[Address, Guard]]:
    """Hold several boxes under their store locks, always taken in address order
    (so two writers over the same boxes never wait on each other), before any
    entry's lock (see the module docstring). The fsyncs the section's writes
    wait for come after every lock is released (``commit.deferred``)."""
    from dovecote.ledger import group_commit as commit

    held: dict[Address, Guard] = {}
    with commit.deferred(), ExitStack() as stack:
        for a in sorted(set(addrs), key=str):
            held[a] = stack.enter_context(store.guarded(a))
        yield held

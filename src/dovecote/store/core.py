"""Stores: where ledgers live. This module is the ``Store`` protocol and the types every backend shares;
the backends are ``store.files`` (the default), ``store.memory`` and ``store.postgres``.

A store maps a box address (or the spool) to a ledger and offers three things:
read (incremental: the letters after a cursor), append (durable, deduplicated)
and ``guarded`` (the box held under its lock for a compare-and-swap). Nothing
here knows about fates or lifecycles; ``ops`` combines a store with the folds.

The protocol is shaped for more than files (``store.memory`` is the second
backend, PostgreSQL the third):

* A **cursor** is a per-box position, ``(generation, position)``: a byte offset
  for files, a sequence number for memory or a database. ``read(where,
  after=cursor)`` returns only the letters after it, unless the box was
  replaced since (the generation changed) or the cursor is not one this store
  handed out; then it returns every letter and says ``fresh``, so the caller
  drops what it derived. Generations are a store's own counters: a cursor means
  something only to the store that made it (persisted checkpoints need more).
* ``guarded(where)`` yields a ``Guard``: the box's letters as read under its
  lock, and ``append``. A compare-and-swap decides from ``guard.letters``,
  never from an earlier read that happens to be fresh. What a section appends
  is durable when the ``with`` block ends (the file store fsyncs after
  releasing the lock, one fsync shared by the concurrent sections of a box:
  ``commit.py``), so a caller acknowledges only after the block.
* A **mark** is a cursor written down, for folds persisted into ``cache/``
  (they outlive the process, so a cursor's generation means nothing to them):
  ``tail(where, mark)`` reads the letters after it privately (the store's own
  readers keep holding whole boxes) and returns them with the mark where that
  read stopped. The store checks a mark before trusting it (the file store: the
  same inode, and the bytes before the position hash as they did; the memory
  store: the same store and generation); a mark that fails, or None, gives the
  whole box with ``fresh`` set, so the caller folds from nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Literal, NamedTuple, Protocol

import msgspec

from dovecote.errors import Refusal
from dovecote.ledger.jsonl import Defect
from dovecote.model.addresses import Address
from dovecote.model.letters import Letter
from dovecote.roster.config import Roster

Where = Address | Literal["spool"]


class Cursor(NamedTuple):
    """Where a read of one box stopped: resume there with ``read(where, after=cursor)``."""

    generation: int
    position: int


#: How many calls a server process runs on its store at once: its handle threads
#: (``http.runner.WORKERS``) and the PostgreSQL store's pooled connections, one each. More threads
#: than connections only queue for one, and the queue costs more than it hides: REST on PostgreSQL,
#: two server processes, 30 clients (2026-12-03): 16 threads over 8 connections 794 sends/s, p95
#: 58.6 ms, 1.24 ms of server CPU a send; 8 over 8, 1,151/s, 43.2 ms, 0.88 ms. On the file store a
#: server's 8 threads send as fast as 16 did (847 and 843/s, one process).
CALLS_AT_ONCE = 8

#: The cursor of a box never read: ``read(where, after=START)`` is a whole read.
START = Cursor(-1, 0)


class BoxRead(msgspec.Struct, frozen=True):
    """One ledger as read now.

    ``letters`` are those after the cursor asked for (all of them when none was
    given, or when ``fresh``), a value later appends leave alone; ``index`` maps
    every id in the box (the file store's keeps growing with later reads).
    """

    letters: Sequence[Letter]
    index: Mapping[str, Letter]
    defects: list[Defect]
    torn: Defect | None
    exists: bool
    generation: int
    cursor: Cursor = START
    fresh: bool = True


class Mark(msgspec.Struct, frozen=True, array_like=True):
    """A cursor that outlives its process (see the module docstring).

    ``origin`` names the store that made it (``file``, or ``memory:<n>`` for one
    memory store), ``position`` is where the read stopped (a byte offset, a
    sequence number), ``line`` how many lines were behind it, and ``ident`` and
    ``check`` what the store compares before trusting it (a file's inode and the
    digest of the bytes before ``position``; a memory box's generation).
    """

    origin: str
    position: int = 0
    line: int = 0
    ident: int = 0
    check: str = ""


class Tail(msgspec.Struct, frozen=True):
    """The letters after a mark, read privately, and the mark where the read stopped.

    ``fresh``: the mark was None or failed its check, so ``letters`` are the
    whole box and the caller folds from nothing. ``defects`` are the malformed
    lines met after the mark (the whole box's when fresh); ``torn`` is an
    unfinished last line, not yet part of the box.
    """

    letters: Sequence[Letter]
    defects: list[Defect]
    torn: Defect | None
    mark: Mark
    fresh: bool
    exists: bool = True


class Probe(NamedTuple):
    """What a face can check without the store that nothing came after a mark: the
    ledger at ``path`` still has inode ``ident`` and size ``size`` (ledgers only
    grow, so any append changes the size). Only a file store offers one."""

    path: str
    ident: int
    size: int


class Guard(Protocol):
    """A box held under its lock: what was read there (plus this holder's own
    appends, since nobody else can append meanwhile), and a way to add to it."""

    @property
    def letters(self) -> Sequence[Letter]: ...
    @property
    def index(self) -> Mapping[str, Letter]: ...
    @property
    def cursor(self) -> Cursor: ...
    def read(self, after: Cursor | None = None) -> BoxRead:
        """What ``Store.read`` would say, from the letters held (no new read)."""
        ...
    def append(self, lines: Sequence[bytes]) -> list[tuple[str, bool]]: ...

    def tail(self, mark: Mark | None = None) -> Tail:
        """``Store.tail`` of the held box: under the lock, so nothing lands meanwhile."""
        ...


class Store(Protocol):
    def read(self, where: Where, after: Cursor | None = None) -> BoxRead: ...
    def tail(self, where: Where, mark: Mark | None = None) -> Tail: ...
    def append(self, where: Where, lines: Sequence[bytes]) -> list[tuple[str, bool]]: ...
    def guarded(self, where: Where) -> AbstractContextManager[Guard]: ...
    def reachable(self, where: Where) -> bool: ...
    def location(self, where: Where) -> str: ...
    def stamp(self, where: Where) -> tuple[int, int]:
        """A cheap mark of the box (a stat, never a read) that changes whenever it gains a letter."""
        ...

    def mark(self, where: Where) -> Mark:
        """The mark where this store's own (warm) read of ``where`` stands, for a fold fed from it."""
        ...
    def probe(self, where: Where, mark: Mark) -> Probe | None:
        """A cheap outside check that ``where`` has nothing after ``mark`` (None: this store offers none)."""
        ...
    def for_roster(self, roster: Roster) -> Store:
        """The same ledgers, addressed through ``roster`` (warm state kept)."""
        ...


def commits_together(store: Store) -> bool:
    """Do a thread's nested guarded sections commit as one (PostgreSQL: one transaction)? Then a
    write that must never outlive another (a send's record, its delivery) can join its section."""
    return bool(getattr(store, "sections_commit_together", False))


def reachable(roster: Roster, where: Where) -> bool:
    """Can this machine reach the box? Only an in-repo box can be out of reach
    (and a project the roster does not know has no box at all)."""
    if isinstance(where, Address) and where.kind == "project":
        p = roster.project(where.name)
        if p is None:
            return False
        if p.box_in_repo:
            return Path(p.root).is_dir()
    return True


def box_key(roster: Roster, where: Where) -> str | None:
    """A box's name for a store that keeps boxes by name (memory, PostgreSQL): its address, a
    project under the roster's spelling of its name; None for a project the roster does not know."""
    if isinstance(where, Address) and where.kind == "project":
        p = roster.project(where.name)
        return None if p is None else f"project:{p.name}"
    return str(where)


def keyed_location(prefix: str, key: str | None, where: Where) -> str:
    """Where a keyed store says a box is (``<prefix>:<key>``), or why it has none."""
    return f"{prefix}:{key}" if key else f"(no project {getattr(where, 'name', where)!r} in the roster)"


def check_writable(roster: Roster, where: Where) -> None:
    """Refuse ``unknown_box`` for a box that cannot be written here (every store says the same)."""
    if isinstance(where, Address) and where.kind == "project" and roster.project(where.name) is None:
        raise Refusal("unknown_box", f"no project {where.name!r} in the roster")
    if not reachable(roster, where):
        raise Refusal("unknown_box", f"{where} lives in a repository absent on this machine")

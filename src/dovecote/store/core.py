"""Stores: where ledgers live. The file store is the default backend.

A store maps a box address (or the spool) to a ledger and offers three things:
read (incremental: the letters after a cursor), append (durable, deduplicated)
and ``guarded`` (the box held under its lock for a compare-and-swap). Nothing
here knows about fates or lifecycles; ``ops`` combines a store with the folds.

The protocol is shaped for more than files (``store_memory`` is the second
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

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import ClassVar, Literal, NamedTuple, Protocol

import msgspec

from dovecote.errors import Refusal, StoreError
from dovecote.ledger import jsonl as ledger
from dovecote.ledger.jsonl import Checkpoint, Defect, LedgerReader, LockedLedger
from dovecote.model.addresses import Address
from dovecote.model.letters import Letter
from dovecote.roster.config import Roster
from dovecote.roster.home import IN_REPO_DIR, Layout
from dovecote.store.capability import Capability
from dovecote.util import fileops

Where = Address | Literal["spool"]

GITIGNORE = b"# dovecote: letters.jsonl travels with git; local scratch does not.\n*.tmp\ncache/\n"
GITATTRIBUTES = b"letters.jsonl merge=dovecote\n"


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


def ready(store: Store, where: Where) -> None:
    """Raise ``StoreError`` now if a guarded section of ``where`` could not open its ledger (only
    files can fail so: the other stores open nothing per box). A send checks the sender's box so
    before it delivers, and writes the record in a section of its own after the delivery."""
    if isinstance(store, FileStore):
        ledger.ready(store._writable(where))


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


def _held(r: LedgerReader, after: Cursor | None) -> BoxRead:
    """A file ledger's letters after ``after``, from what its reader holds."""
    count = r.count_at(after.position) if after is not None and after.generation == r.generation else None
    letters = r.letters[count or 0 :]  # a copy: what later appends add never shows through
    cursor = Cursor(r.generation, r.offset)
    return BoxRead(letters, r.index, r.defects, r.torn, r.exists, r.generation, cursor, count is None)


class FileGuard:
    """A file ledger under its ``flock`` (see ``Guard``); cursors are byte offsets."""

    def __init__(self, led: LockedLedger) -> None:
        self._led = led

    @property
    def letters(self) -> list[Letter]:
        return self._led.reader.letters

    @property
    def index(self) -> dict[str, Letter]:
        return self._led.reader.index

    @property
    def cursor(self) -> Cursor:
        return Cursor(self._led.reader.generation, self._led.reader.offset)

    def read(self, after: Cursor | None = None) -> BoxRead:
        return _held(self._led.reader, after)

    def append(self, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        return self._led.append(lines)

    def tail(self, mark: Mark | None = None) -> Tail:
        return file_tail(self._led.reader.path, mark, None)


FILE_ORIGIN = "file"


def file_tail(path: Path, mark: Mark | None, bound: int | None) -> Tail:
    """The letters of the ledger at ``path`` after ``mark``, by a private reader (see ``Tail``)."""
    usable = mark is not None and mark.origin == FILE_ORIGIN and (mark.ident or mark.position)
    if usable:
        assert mark is not None
        r = LedgerReader.resume(path, Checkpoint(mark.ident, mark.position, mark.line, mark.check))
    else:
        r = LedgerReader(path)
    r.bound = bound
    r.refresh()
    fresh = not usable or r.generation != 0 or (mark is not None and mark.ident != 0 and r.ino != mark.ident)
    if fresh and usable:  # the check failed: the resumed reader started over; read the box whole
        r = LedgerReader(path)
        r.bound = bound
        r.refresh()
    cp = r.checkpoint()
    return Tail(r.letters, r.defects, r.torn, Mark(FILE_ORIGIN, cp.offset, cp.line_no, cp.ino, cp.window),
                bool(fresh), r.exists)


def files_of(store: Store) -> FileStore:
    """The file store behind ``store``, for what only files have: the search
    index's checkpoints, ``verify``'s snapshot, the CLI's cached renderings."""
    if not isinstance(store, FileStore):
        raise StoreError(f"{type(store).__name__} keeps no ledger files; this needs the file store")
    return store


class FileStore:
    """Ledgers as JSONL files under the home (or inside a project's repository)."""

    capabilities: ClassVar[frozenset[Capability]] = frozenset({
        Capability.bounded_reads, Capability.shared_reads, Capability.lasting_marks, Capability.box_folders,
    })

    def __init__(self, layout: Layout, roster: Roster) -> None:
        self.layout = layout
        self.roster = roster
        self._readers: dict[Path, LedgerReader] = {}
        self._bounds: dict[Path, int] | None = None

    def path(self, where: Where) -> Path | None:
        """The ledger file for ``where``; None for a project the roster does not know."""
        if where == "spool":
            return self.layout.spool
        assert isinstance(where, Address)
        if where.kind == "home":
            return self.layout.home_box()
        if where.kind == "entity":
            return self.layout.entity_box(where.name)
        p = self.roster.project(where.name)
        if p is None:
            return None
        if p.box_in_repo:
            return Layout.in_repo_box(p.root)
        return self.layout.project_box(p.name)

    def location(self, where: Where) -> str:
        path = self.path(where)
        return str(path) if path else f"(no project {getattr(where, 'name', where)!r} in the roster)"

    def mark(self, where: Where) -> Mark:
        r = self.reader(where)
        if r is None:
            return Mark(FILE_ORIGIN)
        with r.lock:
            cp = r.checkpoint()
        return Mark(FILE_ORIGIN, cp.offset, cp.line_no, cp.ino, cp.window)

    def probe(self, where: Where, mark: Mark) -> Probe | None:
        path = self.path(where)
        if path is None or mark.origin != FILE_ORIGIN:
            return None
        return Probe(str(path), mark.ident, mark.position)

    def reader(self, where: Where) -> LedgerReader | None:
        path = self.path(where)
        if path is None:
            return None
        r = self._readers.get(path)
        if r is None:  # two threads may race here: one reader wins, both use it
            made = LedgerReader(path)
            made.bound = self.bound_of(path)
            r = self._readers.setdefault(path, made)
        return r

    def snapshot(self, wheres: Iterable[Where]) -> dict[Path, int]:
        """Each ledger's settled size now: the fixed point ``bounded`` reads up to."""
        out: dict[Path, int] = {}
        for where in wheres:
            path = self.path(where)
            if path is not None:
                out[path] = ledger.settled_size(path)
        return out

    def bound_of(self, path: Path) -> int | None:
        """How far a read of ``path`` may go while bounded (None: to the end).

        A ledger the snapshot did not list is bounded where it stands at its
        first read, and that bound is recorded in the shared snapshot, so every
        store reading the same snapshot reads the same bytes.
        """
        if self._bounds is None:
            return None
        b = self._bounds.get(path)
        if b is None:
            b = self._bounds[path] = ledger.settled_size(path)
        return b

    @contextmanager
    def bounded(self, bounds: dict[Path, int]) -> Iterator[None]:
        """Read every ledger only up to ``bounds`` (a ``snapshot``): appends made
        meanwhile stay unread until the block ends. Writes are not bounded."""
        self._bounds = bounds
        for path, r in self._readers.items():
            r.bound = self.bound_of(path)
        try:
            yield
        finally:
            self._bounds = None
            for r in self._readers.values():
                r.bound = None

    def for_roster(self, roster: Roster) -> FileStore:
        """A store over ``roster`` that keeps this one's warm readers (the files did not change)."""
        other = FileStore(self.layout, roster)
        other._readers = self._readers
        return other

    def reachable(self, where: Where) -> bool:
        return reachable(self.roster, where)

    def stamp(self, where: Where) -> tuple[int, int]:
        """(inode, size) of the ledger file; (0, -1) when there is none. ``wait`` polls this."""
        path = self.path(where)
        try:
            st = os.stat(path) if path is not None else None
        except FileNotFoundError:
            st = None
        except OSError as e:
            raise StoreError(f"cannot stat {path}: {e.strerror or e}") from e
        return (0, -1) if st is None else (st.st_ino, st.st_size)

    def read(self, where: Where, after: Cursor | None = None) -> BoxRead:
        """The letters after ``after`` (a cursor is a byte offset this store's reader reached)."""
        r = self.reader(where)
        if r is None:
            return BoxRead([], {}, [], None, False, 0, Cursor(0, 0))
        with r.lock:
            r.refresh()
            return _held(r, after)

    def tail(self, where: Where, mark: Mark | None = None) -> Tail:
        path = self.path(where)
        if path is None:
            return Tail([], [], None, Mark(FILE_ORIGIN), True, False)
        return file_tail(path, mark, self.bound_of(path))

    def _writable(self, where: Where) -> LedgerReader:
        check_writable(self.roster, where)
        r = self.reader(where)
        assert r is not None  # a known project has a path
        self._birth(where)
        return r

    def _birth(self, where: Where) -> None:
        """An in-repo box gets a .gitignore and .gitattributes, only where none exist."""
        if not (isinstance(where, Address) and where.kind == "project"):
            return
        p = self.roster.project(where.name)
        if p is None or not p.box_in_repo:
            return
        d = Path(p.root) / IN_REPO_DIR
        ledger.ensure_dir(d)
        for name, body in ((".gitignore", GITIGNORE), (".gitattributes", GITATTRIBUTES)):
            target = d / name
            if not target.exists():
                with suppress(FileExistsError):
                    fileops.write_new(target, body)

    def append(self, where: Where, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        return ledger.append(self._writable(where), lines)

    @contextmanager
    def guarded(self, where: Where) -> Iterator[FileGuard]:
        with ledger.locked(self._writable(where)) as led:
            yield FileGuard(led)

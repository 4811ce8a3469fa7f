"""The file store: every ledger a JSONL file under the home (or inside a project's repository).

The default backend of the ``Store`` protocol (``store.core``): a cursor is a byte
offset its warm ``LedgerReader`` reached, a mark is a file's inode and the digest of
the bytes before a position, and a guarded section is the ledger under its ``flock``.

A read never loads the append side (``ledger.append`` and its group commit): the
write methods import it when first called, so a cold read of an inbox stays lean.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from dovecote.errors import StoreError
from dovecote.ledger import jsonl as ledger
from dovecote.ledger.jsonl import Checkpoint, LedgerReader
from dovecote.model.addresses import Address
from dovecote.model.letters import Letter
from dovecote.roster.config import Roster
from dovecote.roster.home import IN_REPO_DIR, Layout
from dovecote.store.capability import Capability
from dovecote.store.core import BoxRead, Cursor, Mark, Probe, Store, Tail, Where, check_writable, reachable
from dovecote.util import fileops

if TYPE_CHECKING:
    from dovecote.ledger.append import LockedLedger

GITIGNORE = b"# dovecote: letters.jsonl travels with git; local scratch does not.\n*.tmp\ncache/\n"
GITATTRIBUTES = b"letters.jsonl merge=dovecote\n"


def ready(store: Store, where: Where) -> None:
    """Raise ``StoreError`` now if a guarded section of ``where`` could not open its ledger (only
    files can fail so: the other stores open nothing per box). A send checks the sender's box so
    before it delivers, and writes the record in a section of its own after the delivery."""
    if isinstance(store, FileStore):
        from dovecote.ledger import append as ledger_append

        ledger_append.ready(store._writable(where))


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
        from dovecote.ledger import append as ledger_append  # see the module docstring

        return ledger_append.append(self._writable(where), lines)

    @contextmanager
    def guarded(self, where: Where) -> Iterator[FileGuard]:
        from dovecote.ledger import append as ledger_append

        with ledger_append.locked(self._writable(where)) as led:
            yield FileGuard(led)

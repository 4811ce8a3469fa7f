"""Stores: where ledgers live. The file store is the default backend.

A store maps a box address (or the spool) to a ledger and offers three things:
read (incremental, cached), append (durable, deduplicated) and ``guarded``
(the ledger held under its lock for a compare-and-swap). Nothing here knows
about fates or lifecycles; ``ops`` combines a store with the folds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Literal, NamedTuple, Protocol

from dovecote import ledger
from dovecote.errors import Refusal
from dovecote.home import IN_REPO_DIR, Layout
from dovecote.ledger import Defect, LedgerReader, LockedLedger
from dovecote.letters import Letter
from dovecote.names import Address
from dovecote.roster import Roster

Where = Address | Literal["spool"]

GITIGNORE = b"# dovecote: letters.jsonl travels with git; local scratch does not.\n*.tmp\ncache/\n"
GITATTRIBUTES = b"letters.jsonl merge=dovecote\n"


class BoxRead(NamedTuple):
    """One ledger as read now."""

    letters: list[Letter]
    index: dict[str, Letter]  # type: ignore[assignment]  # shadows tuple.index, which no caller uses
    defects: list[Defect]
    torn: Defect | None
    exists: bool
    generation: int


class Store(Protocol):
    def read(self, where: Where) -> BoxRead: ...
    def append(self, where: Where, lines: Sequence[bytes]) -> list[tuple[str, bool]]: ...
    def guarded(self, where: Where) -> AbstractContextManager[LockedLedger]: ...
    def reachable(self, where: Where) -> bool: ...
    def location(self, where: Where) -> str: ...


class FileStore:
    """Ledgers as JSONL files under the home (or inside a project's repository)."""

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

    def reader(self, where: Where) -> LedgerReader | None:
        path = self.path(where)
        if path is None:
            return None
        r = self._readers.get(path)
        if r is None:
            r = self._readers[path] = LedgerReader(path)
            r.bound = self.bound_of(path)
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

    def reachable(self, where: Where) -> bool:
        """Can this machine reach the box? Only an in-repo box can be out of reach."""
        if isinstance(where, Address) and where.kind == "project":
            p = self.roster.project(where.name)
            if p is None:
                return False
            if p.box_in_repo:
                return Path(p.root).is_dir()
        return True

    def read(self, where: Where) -> BoxRead:
        r = self.reader(where)
        if r is None:
            return BoxRead([], {}, [], None, False, 0)
        r.refresh()
        return BoxRead(r.letters, r.index, r.defects, r.torn, r.exists, r.generation)

    def _writable(self, where: Where) -> LedgerReader:
        r = self.reader(where)
        if r is None:
            raise Refusal("unknown_box", f"no project {getattr(where, 'name', where)!r} in the roster")
        if not self.reachable(where):
            raise Refusal("unknown_box", f"{where} lives in a repository absent on this machine")
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
                try:
                    with open(target, "xb") as f:
                        f.write(body)
                except FileExistsError:
                    pass

    def append(self, where: Where, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        return ledger.append(self._writable(where), lines)

    @contextmanager
    def guarded(self, where: Where) -> Iterator[LockedLedger]:
        with ledger.locked(self._writable(where)) as led:
            yield led

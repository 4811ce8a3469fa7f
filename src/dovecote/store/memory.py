"""The memory store: every box a list of letters in this process, the spec's simplest model.

It keeps the promises ``tests/store/test_store_contract.py`` states for every store
(DESIGN 1.2, 1.5, 1.6): a letter's id is the hash of its line, an append skips
ids already in the box (or earlier in the same batch), ``guarded`` holds the
box's lock for a compare-and-swap, and a read after a cursor returns only what
came after it. Durable here means visible to every handle sharing the store
once ``append`` returns; nothing survives the process. Cursors are sequence
numbers (how many letters the box held), and ``replace`` models a box replaced
from outside (a restore, a checkout), which changes its generation.

Several handles share one store the way several processes share one home:
``Dovecote(root, store=MemoryStore())`` for one, ``for_roster`` for the rest.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from dovecote.ledger.jsonl import Defect
from dovecote.model.letters import Letter, decode_line, letter_id
from dovecote.roster.config import Roster
from dovecote.store.core import (
    BoxRead,
    Cursor,
    Mark,
    Probe,
    Tail,
    Where,
    box_key,
    check_writable,
    keyed_location,
    reachable,
)


@dataclass(eq=False)
class _Box:
    """One box: its letters in append order, their index, and the lock writers take."""

    letters: list[Letter] = field(default_factory=list)
    index: dict[str, Letter] = field(default_factory=dict)
    defects: list[Defect] = field(default_factory=list)
    lines: int = 0
    generation: int = 0
    lock: threading.RLock = field(default_factory=threading.RLock)


def _held(box: _Box, after: Cursor | None) -> BoxRead:
    """The box's letters after ``after`` (a copy: later appends never show through)."""
    n = len(box.letters)
    resume = after is not None and after.generation == box.generation and 0 <= after.position <= n
    start = after.position if after is not None and resume else 0
    return BoxRead(box.letters[start:], dict(box.index), list(box.defects), None, True, box.generation,
                   Cursor(box.generation, n), not resume)


def _tail(origin: str, box: _Box | None, mark: Mark | None) -> Tail:
    """The box's letters after ``mark`` (see ``store.Tail``); the caller holds ``box.lock``."""
    if box is None:
        return Tail([], [], None, Mark(origin), True, False)
    n = len(box.letters)
    ok = mark is not None and mark.origin == origin and mark.ident == box.generation and 0 <= mark.position <= n
    start = mark.position if ok and mark is not None else 0
    lines = mark.line if ok and mark is not None else 0
    defects = [d for d in box.defects if d.line > lines]
    return Tail(box.letters[start:], defects, None, Mark(origin, n, box.lines, box.generation), not ok)


class MemoryGuard:
    """A memory box held under its lock (see ``store.Guard``)."""

    def __init__(self, store: MemoryStore, where: Where, box: _Box) -> None:
        self._store, self._where, self._box = store, where, box

    @property
    def letters(self) -> list[Letter]:
        return self._box.letters

    @property
    def index(self) -> dict[str, Letter]:
        return self._box.index

    @property
    def cursor(self) -> Cursor:
        return Cursor(self._box.generation, len(self._box.letters))

    def read(self, after: Cursor | None = None) -> BoxRead:
        return _held(self._box, after)

    def append(self, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        return self._store._add(self._where, self._box, lines)

    def tail(self, mark: Mark | None = None) -> Tail:
        return _tail(self._store.origin, self._box, mark)


class MemoryStore:
    """Boxes held in memory, addressed through a roster like the file store."""

    def __init__(self, roster: Roster | None = None) -> None:
        self.roster = roster or Roster()
        self._boxes: dict[str, _Box] = {}
        self._made = threading.Lock()  # creating a box is the one write shared by all boxes
        self.origin = f"memory:{os.urandom(8).hex()}"  # a mark from another store is never trusted (secrets.token_hex)

    def for_roster(self, roster: Roster) -> MemoryStore:
        """The same boxes, addressed through ``roster``."""
        other = MemoryStore(roster)
        other._boxes, other._made, other.origin = self._boxes, self._made, self.origin
        return other

    def key(self, where: Where) -> str | None:
        return box_key(self.roster, where)

    def location(self, where: Where) -> str:
        return keyed_location("memory", self.key(where), where)

    def reachable(self, where: Where) -> bool:
        return reachable(self.roster, where)

    def stamp(self, where: Where) -> tuple[int, int]:
        """(generation, lines) of the box; (0, -1) when there is none."""
        box = self._box(where, create=False)
        return (0, -1) if box is None else (box.generation, box.lines)

    def _box(self, where: Where, *, create: bool) -> _Box | None:
        key = self.key(where)
        if key is None:
            return None
        box = self._boxes.get(key)
        if box is None and create:
            with self._made:
                box = self._boxes.setdefault(key, _Box())
        return box

    def read(self, where: Where, after: Cursor | None = None) -> BoxRead:
        """The letters after ``after`` (a sequence number), or all of them, ``fresh``."""
        box = self._box(where, create=False)
        if box is None:
            return BoxRead([], {}, [], None, False, 0, Cursor(0, 0))
        with box.lock:
            return _held(box, after)

    def mark(self, where: Where) -> Mark:
        """The mark of the box as it stands (a memory store reads the whole box on every read)."""
        return self.tail(where).mark

    def probe(self, where: Where, mark: Mark) -> Probe | None:
        """None: nothing outside this process can check a memory box."""
        return None

    def tail(self, where: Where, mark: Mark | None = None) -> Tail:
        """The letters after ``mark`` (see ``store.Tail``)."""
        box = self._box(where, create=False)
        if box is None:
            return _tail(self.origin, None, mark)
        with box.lock:
            return _tail(self.origin, box, mark)

    def append(self, where: Where, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        with self.guarded(where) as guard:
            return guard.append(lines)

    @contextmanager
    def guarded(self, where: Where) -> Iterator[MemoryGuard]:
        check_writable(self.roster, where)
        box = self._box(where, create=True)
        assert box is not None
        with box.lock:
            yield MemoryGuard(self, where, box)

    def _add(self, where: Where, box: _Box, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        """Append the lines whose ids are new (the caller holds ``box.lock``)."""
        if any(b"\n" in line for line in lines):
            raise ValueError("a ledger line cannot contain a newline")
        out: list[tuple[str, bool]] = []
        batch: set[str] = set()
        for line in lines:
            lid = letter_id(line)
            if lid in box.index or lid in batch:
                out.append((lid, False))
                continue
            batch.add(lid)
            box.lines += 1
            letter = decode_line(line) if line.strip() else None
            if letter is None and not line.strip():  # a blank line: no letter, no defect
                out.append((lid, True))
                continue
            if letter is None:  # kept as the file store keeps it: a line, reported, never a letter
                box.defects.append(Defect(self.location(where), box.lines, "malformed", "not a JSON object"))
                out.append((lid, True))
                continue
            box.index[lid] = letter
            box.letters.append(letter)
            out.append((lid, True))
        return out

    def replace(self, where: Where, lines: Sequence[bytes]) -> None:
        """Put other lines in the box's place (a restore): readers start over."""
        box = self._box(where, create=True)
        assert box is not None
        with box.lock:
            box.letters, box.index, box.defects, box.lines = [], {}, [], 0
            box.generation += 1
            self._add(where, box, lines)

"""What a process holds of a PostgreSQL box, and how it is brought up to the database.

Law: a ``Box`` only ever holds rows the database had committed (or, inside a
guarded section, rows the section wrote and will commit with it: if the
transaction fails, the box starts over). ``refresh`` reads only the rows after
what is held, for the generation held, and several boxes in one round trip.
"""

from __future__ import annotations

import hashlib
import threading
from bisect import bisect_right
from collections.abc import Sequence
from typing import cast

import psycopg
from msgspec.structs import force_setattr

from dovecote.ledger import Defect
from dovecote.letters import Letter, decode_line, decode_lines_fast, letter_id
from dovecote.osutil import collector_paused
from dovecote.store import BoxRead, Cursor

Conn = psycopg.Connection[tuple[object, ...]]

ROWS = "SELECT seq, line FROM dovecote_letters WHERE box = %s AND generation = %s AND seq > %s ORDER BY seq"
#: The box's row and the rows after what is held of the generation held, in one statement (one
#: snapshot, and one statement less for the server and the client per box). The box's row comes
#: once with a NULL seq when no row follows; none at all when the box does not exist.
_NEWER = """SELECT b.id, b.generation, l.seq, l.line FROM dovecote_boxes b
LEFT JOIN dovecote_letters l ON l.box = b.id AND l.generation = %s AND l.seq > %s
WHERE b.box = %s ORDER BY l.seq"""


class Box:
    """What this process holds of one box: its letters up to row ``seq`` of ``generation``.

    The rows a big batch wrote wait undecoded (``absorb(..., later=True)``) until the box's
    letters are first asked for, in the order written: a writer that never reads them back
    never pays for them. Their ids are known at once (``holds``): the next append dedups
    against them without decoding them."""

    def __init__(self) -> None:
        self.number = 0  # its row in dovecote_boxes, which the letter rows carry
        self.exists = False
        self.lock = threading.RLock()
        self.restart(-1)

    def restart(self, generation: int) -> None:
        """Hold nothing of the box: new containers, so what readers were handed stays as it was."""
        self.generation, self.seq = generation, 0
        self._letters: list[Letter] = []
        self._seqs: list[int] = []  # each letter's row, for cursors between letters
        self._index: dict[str, Letter] = {}
        self._others: set[str] = set()  # ids of rows that are no letter (blank, malformed)
        self._defects: list[Defect] = []
        self._later: list[tuple[str, Sequence[tuple[int, bytes]], Sequence[str]]] = []
        self._unread: set[str] = set()  # the ids of the rows in _later

    @property
    def letters(self) -> list[Letter]:
        return self._settled()._letters

    @property
    def seqs(self) -> list[int]:
        return self._settled()._seqs

    @property
    def index(self) -> dict[str, Letter]:
        return self._settled()._index

    @property
    def others(self) -> set[str]:
        return self._settled()._others

    @property
    def defects(self) -> list[Defect]:
        return self._settled()._defects

    def holds(self) -> tuple[dict[str, Letter], set[str], set[str]]:
        """Where the id of every row held is, decoded or not (an append's test of what is new)."""
        return self._index, self._others, self._unread

    def absorb(
        self, key: str, rows: Sequence[tuple[int, bytes]], ids: Sequence[str] | None = None, *, later: bool = False
    ) -> None:
        """Add rows (seq, line) read or written after what is held; ``later``: decoded when first read
        (``ids`` given: the rows' ids, just computed from the same bytes)."""
        if not rows:
            return
        if later and ids is not None:
            self._later.append((key, rows, ids))
            self._unread.update(ids)
        else:
            self._settled()._take(key, rows, ids)
        self.seq = rows[-1][0]

    def _settled(self) -> Box:
        if self._later:
            with self.lock, collector_paused():  # many new objects, no cycles among them
                later, self._later = self._later, []
                for key, rows, ids in later:
                    self._take(key, rows, ids)
                self._unread = set()
        return self

    def _take(self, key: str, rows: Sequence[tuple[int, bytes]], ids: Sequence[str] | None) -> None:
        got, defects, others = decode(f"postgresql:{key}", rows, ids)
        for seq, letter in got:
            self._letters.append(letter)
            self._seqs.append(seq)
            self._index[letter.id] = letter
        self._defects.extend(defects)
        self._others.update(others)


def decode(
    location: str, rows: Sequence[tuple[int, bytes]], ids: Sequence[str] | None = None
) -> tuple[list[tuple[int, Letter]], list[Defect], list[str]]:
    """The letters, the defects and the ids of the rows that are no letter, of ``rows`` (seq, line).

    ``ids``: the rows' ids when the caller just computed them from the same bytes (an append)."""
    lines = [line for _, line in rows]
    if any(line.endswith(b"\r") for line in lines):  # what a reader strips, as the file store does
        lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
    fast = decode_lines_fast(b"\n".join(lines), lines) if lines and all(lines) else None
    out: list[tuple[int, Letter]] = []
    defects: list[Defect] = []
    others: list[str] = []
    if fast is not None:
        sha = hashlib.sha256
        known: Sequence[str | None] = ids or [None] * len(lines)
        for (seq, _), line, letter, lid in zip(rows, lines, fast, known, strict=True):
            force_setattr(letter, "id", lid or sha(line).hexdigest()[:12])
            force_setattr(letter, "raw", line)
            out.append((seq, letter))
        return out, defects, others
    for (seq, _), line in zip(rows, lines, strict=True):
        one = decode_line(line) if line.strip() else None
        if one is None:
            others.append(letter_id(line))
            if line.strip():  # a blank line is no letter and no defect
                defects.append(Defect(location, seq, "malformed", "not a JSON object"))
            continue
        out.append((seq, one))
    return out, defects, others


def held(box: Box, after: Cursor | None) -> BoxRead:
    """The box's letters after ``after``; a cursor this store did not hand out reads everything ``fresh``."""
    resume = after is not None and after.generation == box.generation and 0 <= after.position <= box.seq
    start = bisect_right(box.seqs, after.position) if after is not None and resume else 0
    return BoxRead(box.letters[start:], box.index, list(box.defects), None, box.exists, box.generation,
                   Cursor(box.generation, box.seq), not resume)


def refresh(
    conn: Conn, boxes: Sequence[tuple[str, Box]], first: Sequence[tuple[str, tuple[object, ...]]] = ()
) -> None:
    """Bring each box up to what the database holds (the caller holds the boxes' locks).

    One round trip when each box's generation is the one held: ``first`` (a transaction's
    ``BEGIN``, the boxes' advisory locks), then one statement per box reading its generation
    and the rows after what is held, in one pipeline. The rows are read for the generation
    held, so a replace is seen (the generation differs) and read from its start, never mixed."""
    cur = [conn.cursor(binary=True) for _ in boxes]
    with conn.pipeline():
        for sql, params in first:
            conn.execute(sql, params)
        for c, (key, box) in zip(cur, boxes, strict=True):
            c.execute(_NEWER, (box.generation, box.seq, key))
    for c, (key, box) in zip(cur, boxes, strict=True):
        got = cast("list[tuple[int, int, int | None, bytes | None]]", c.fetchall())
        c.close()
        if not got:
            box.exists = False
            continue
        box.number, generation = got[0][0], got[0][1]
        box.exists = True
        rows: list[tuple[object, ...]] = [(seq, line) for _, _, seq, line in got if seq is not None]
        if generation != box.generation:
            box.restart(generation)
            with conn.cursor(binary=True) as again:
                rows = again.execute(ROWS, (box.number, generation, 0)).fetchall()
        with collector_paused():  # many new objects, no cycles among them
            box.absorb(key, cast("list[tuple[int, bytes]]", rows))  # int8 and bytea, read binary

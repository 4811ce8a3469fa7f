"""What a process holds of a PostgreSQL box, and how it is brought up to the database.

Law: a ``Box`` only ever holds rows the database had committed (or, inside a
guarded section, rows the section wrote and will commit with it: if the
transaction fails, the box starts over). ``refresh`` reads only the rows after
what is held, for the generation held, and several boxes in one round trip.
"""

from __future__ import annotations

import functools
import threading
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from msgspec.structs import force_setattr

from dovecote.ledger.jsonl import Defect
from dovecote.model.ids import line_id
from dovecote.model.letters import Letter, decode_line, decode_lines_fast, letter_id
from dovecote.store.core import BoxRead, Cursor
from dovecote.store.postgres.driver import psycopg
from dovecote.util.osutil import collector_paused

Conn = psycopg.Connection[tuple[object, ...]]

ROWS = "SELECT seq, line FROM dovecote_letters WHERE box = %s AND generation = %s AND seq > %s ORDER BY seq"
#: Each box's row and the rows after what is held of the generation held, in one statement for
#: every box (the schema's ``dovecote_hold``, migration 3); ``write``: each box locked first (its
#: advisory lock) and made when missing. A box's row comes first with a NULL seq, then its rows; a
#: box that does not exist (and is not made) yields nothing. The arrays go binary (%b).
_HOLD_CALL = "SELECT * FROM dovecote_hold({}, {}, {}, %s)"
_HOLD = _HOLD_CALL.format("%b::text[]", "%b::int4[]", "%b::int8[]")
#: Up to this many boxes (here) or rows (an insert, ``store_pgwrite``) go as plain parameters
#: (``ARRAY[%s, …]``, ``VALUES (%s, …)``), not as arrays: psycopg dumps an array in Python, element
#: by element, which was a fifth of a profiled library send's CPU.
SCALARS = 16


@functools.cache
def _hold(boxes: int) -> str:
    """``_HOLD`` for ``boxes`` boxes as scalar parameters (one statement text per count)."""
    def each(kind: str) -> str:
        return "ARRAY[" + ", ".join([f"%s::{kind}"] * boxes) + "]"
    return _HOLD_CALL.format(each("text"), each("int4"), each("int8"))


@dataclass(eq=False)
class Box:
    """What this process holds of one box: its letters up to row ``seq`` of ``generation``.

    The rows a big batch wrote may wait undecoded (``absorb(..., later=True)``) until the
    box's letters are read, which is through ``decoded()`` (``held`` and the guard's reads
    do): a writer that never reads them back never pays for them. Their ids are in
    ``unread`` at once, so the next append dedups against them without decoding them."""

    generation: int = -1
    number: int = 0  # its row in dovecote_boxes, which the letter rows carry
    seq: int = 0
    exists: bool = False
    letters: list[Letter] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)  # each letter's row, for cursors between letters
    index: dict[str, Letter] = field(default_factory=dict)
    others: set[str] = field(default_factory=set)  # ids of rows that are no letter (blank, malformed)
    defects: list[Defect] = field(default_factory=list)
    later: list[tuple[str, Sequence[tuple[int, bytes]], Sequence[str]]] = field(default_factory=list)
    unread: set[str] = field(default_factory=set)  # the ids of the rows in ``later``
    lock: threading.RLock = field(default_factory=threading.RLock)

    def restart(self, generation: int) -> None:
        """Hold nothing of the box: new containers, so what readers were handed stays as it was."""
        self.generation, self.seq, self.letters, self.seqs = generation, 0, [], []
        self.index, self.others, self.defects, self.later, self.unread = {}, set(), [], [], set()

    def absorb(
        self, key: str, rows: Sequence[tuple[int, bytes]], ids: Sequence[str] | None = None, *, later: bool = False
    ) -> None:
        """Add rows (seq, line) read or written after what is held; ``later``: decoded when next
        read (``ids`` given: the rows' ids, just computed from the same bytes)."""
        if not rows:
            return
        if later and ids is not None:
            self.later.append((key, rows, ids))
            self.unread.update(ids)
        else:
            self.decoded()._take(key, rows, ids)
        self.seq = rows[-1][0]

    def decoded(self) -> Box:
        """The box, every row it holds decoded (the rows waiting first, in order)."""
        if self.later:
            with self.lock, collector_paused():  # many new objects, no cycles among them
                later, self.later = self.later, []
                for key, rows, ids in later:
                    self._take(key, rows, ids)
                self.unread = set()
        return self

    def _take(self, key: str, rows: Sequence[tuple[int, bytes]], ids: Sequence[str] | None) -> None:
        got, defects, others = decode(f"postgresql:{key}", rows, ids)
        for seq, letter in got:
            self.letters.append(letter)
            self.seqs.append(seq)
            self.index[letter.id] = letter
        self.defects.extend(defects)
        self.others.update(others)


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
        known: Sequence[str | None] = ids or [None] * len(lines)
        for (seq, _), line, letter, lid in zip(rows, lines, fast, known, strict=True):
            force_setattr(letter, "id", lid or line_id(line))
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
    box = box.decoded()
    resume = after is not None and after.generation == box.generation and 0 <= after.position <= box.seq
    start = bisect_right(box.seqs, after.position) if after is not None and resume else 0
    return BoxRead(box.letters[start:], box.index, list(box.defects), None, box.exists, box.generation,
                   Cursor(box.generation, box.seq), not resume)


def refresh(conn: Conn, boxes: Sequence[tuple[str, Box]], *, write: bool = False, begin: bool = False) -> None:
    """Bring each box up to what the database holds (the caller holds the boxes' locks).

    One statement for all the boxes, one round trip: with ``begin``, a transaction's ``BEGIN``
    pipelined before it; with ``write``, the boxes' advisory locks taken in it, in the order given,
    before any of them is read. The rows are read for the generation held, or from the first row
    of another one (a replace is seen and read from its start, never mixed)."""
    keys, gens, seqs = [k for k, _ in boxes], [b.generation for _, b in boxes], [b.seq for _, b in boxes]
    sql, params = (_hold(len(boxes)), [*keys, *gens, *seqs, write]) if 0 < len(boxes) <= SCALARS else (
        _HOLD, [keys, gens, seqs, write])
    with conn.cursor(binary=True) as cur:
        if begin:
            with conn.pipeline():
                conn.execute("BEGIN")
                cur.execute(sql, params)
        else:
            cur.execute(sql, params)
        got = cast("list[tuple[int, int, int, int | None, bytes | None]]", cur.fetchall())
    found: dict[int, list[tuple[int, bytes]]] = {}
    rows: list[tuple[int, bytes]] = []
    for n, number, generation, seq, line in got:
        if seq is None:  # the box's row: its letters follow
            key, box = boxes[n - 1]
            box.number, box.exists = number, True
            if generation != box.generation:
                box.restart(generation)
            rows = found[n - 1] = []
        else:
            rows.append((seq, cast("bytes", line)))
    with collector_paused():  # many new objects, no cycles among them
        for i, (key, box) in enumerate(boxes):
            if i in found:
                box.absorb(key, found[i])  # int8 and bytea, read binary
            else:
                box.exists = False

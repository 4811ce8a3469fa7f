"""The new rows of one append, sent as one binary ``COPY`` as they are found, once they are many.

Law: the rows are the lines' exact bytes under the ids computed from them, numbered
after the box's last row; they are written inside the section's transaction, so a
failure of the ``COPY`` (a row a writer put there around the lock) fails the section
and the box starts over (``Transaction.rollback``).

How, for speed (a batch of 100,000 at >= 50,000 letters/s), client and
server working at once on the machine's two cores:

* The caller finds the new lines a slice of ``CHUNK`` at a time and feeds each
  slice's here: the ``COPY`` opens once ``COPY_FROM`` rows are new (fewer are left
  to the caller's one ``INSERT`` with the commit), so the server ingests the first
  slice while the client hashes the next, instead of waiting for every id.
* The rows are encoded here in PostgreSQL's binary ``COPY`` format, one ``struct``
  call and the line's bytes a row (psycopg's ``write_row`` adapts each of the five
  values on its own: about 0.05 s more a 100,000 rows).
* The warm box takes each slice's rows undecoded (``Box.absorb(..., later=True)``):
  their letters are decoded at the box's next read, if any.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from contextlib import ExitStack
from types import TracebackType

from dovecote.store.postgres.box import Box, Conn
from dovecote.store.postgres.driver import Copy

COPY = "COPY dovecote_letters (box, generation, seq, id, line) FROM STDIN (FORMAT BINARY)"
#: From how many new lines an append copies rather than inserts.
COPY_FROM = 256
#: Lines a slice: about 1 MB of canonical letters, several slices ahead of the server in the socket.
CHUNK = 4096
#: The binary format's header (signature, no flags, no extension) and trailer.
_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_TRAILER = b"\xff\xff"
#: A row up to its line's bytes: 5 fields; then each as (length, value): the box's number (int4),
#: the generation (int4), the seq (int8), the id (its 12 ASCII bytes), and the line's length.
_ROW = struct.Struct(">hiiiiiqi12si")

New = list[tuple[str, bytes]]  # (id, line) of lines new to the box, in order


def encode(number: int, generation: int, first: int, rows: New) -> bytearray:
    """The binary ``COPY`` rows of ``rows``, numbered from ``first``."""
    pack = _ROW.pack
    buf = bytearray()
    for seq, (lid, line) in enumerate(rows, first):
        if len(lid) != 12:  # the format above holds exactly 12 bytes (every letter_id has them)
            raise ValueError(f"a letter id has 12 characters, not {len(lid)}: {lid!r}")
        buf += pack(5, 4, number, 4, generation, 8, seq, 12, lid.encode("ascii"), len(line))
        buf += line
    return buf


class Batch:
    """The new rows of one append to ``box``, fed in order (see the module docstring).

    ``opening`` runs once, before the ``COPY`` is opened (the transaction's staged rows go
    first, and the box is noted as written: from then on a failure restarts it)."""

    def __init__(self, conn: Conn, key: str, box: Box, opening: Callable[[], None]) -> None:
        self._conn, self._key, self._box, self._opening = conn, key, box, opening
        self._held: New = []
        self._stack = ExitStack()
        self._copy: Copy | None = None

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._copy is not None and kind is None:
            self._copy.write(_TRAILER)
        self._stack.__exit__(kind, exc, tb)  # the COPY ends (or is abandoned on an error): the server answers

    def feed(self, rows: New) -> None:
        """Rows new to the box, after those fed before: sent, and absorbed, once enough are."""
        self._held += rows
        if self._copy is None:
            if len(self._held) < COPY_FROM:
                return
            self._opening()
            cur = self._stack.enter_context(self._conn.cursor())
            self._copy = self._stack.enter_context(cur.copy(COPY))
            self._copy.write(_HEADER)
        rows, self._held = self._held, []
        box = self._box
        first = box.seq + 1
        self._copy.write(encode(box.number, box.generation, first, rows))
        box.absorb(self._key, [(seq, line) for seq, (_, line) in enumerate(rows, first)], [lid for lid, _ in rows],
                   later=True)

    @property
    def copied(self) -> bool:
        return self._copy is not None

    def rest(self) -> New:
        """The rows never sent: all of them, when fewer than ``COPY_FROM`` were new."""
        return self._held

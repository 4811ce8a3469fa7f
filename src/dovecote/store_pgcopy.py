"""A big batch of a box's new rows as one binary ``COPY``, the warm box absorbing it as it goes.

Law: the rows are the lines' exact bytes under the ids computed from them, numbered
after the box's last row; they are written inside the section's transaction, so a
failure of the ``COPY`` (a row a writer put there around the lock) fails the section
and the box starts over (``Transaction.rollback``).

How, for speed (issue 12: a batch of 100,000 at >= 50,000 letters/s):

* The rows are encoded here in PostgreSQL's binary ``COPY`` format, one ``struct``
  call and the line's bytes a row, and sent in chunks of ``CHUNK`` rows (psycopg's
  ``write_row`` adapts each of the five values on its own, about three times the
  cost).
* Each chunk's letters are decoded into the warm box right after the chunk is
  handed to the socket: the server ingests that chunk while the client decodes it,
  on the other core, instead of the decoding waiting for the whole ``COPY``.
"""

from __future__ import annotations

import struct

from dovecote.store_pgbox import Box, Conn

COPY = "COPY dovecote_letters (box, generation, seq, id, line) FROM STDIN (FORMAT BINARY)"
#: The binary format's header (signature, no flags, no extension) and trailer.
_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_TRAILER = b"\xff\xff"
#: A row up to its line's bytes: 5 fields; then each as (length, value): the box's number (int4),
#: the generation (int4), the seq (int8), the id (its 12 ASCII bytes), and the line's length.
_ROW = struct.Struct(">hiiiiiqi12si")
#: Rows a chunk: about 1 MB of canonical letters, several chunks ahead of the server in the socket.
CHUNK = 4096


def encode(number: int, generation: int, first: int, rows: list[tuple[str, bytes]]) -> bytearray:
    """The binary ``COPY`` rows of ``rows`` (id, line), numbered from ``first``."""
    pack = _ROW.pack
    buf = bytearray()
    for seq, (lid, line) in enumerate(rows, first):
        if len(lid) != 12:  # the format above holds exactly 12 bytes (every letter_id has them)
            raise ValueError(f"a letter id has 12 characters, not {len(lid)}: {lid!r}")
        buf += pack(5, 4, number, 4, generation, 8, seq, 12, lid.encode("ascii"), len(line))
        buf += line
    return buf


def copy_new(conn: Conn, key: str, box: Box, fresh: list[tuple[str, bytes]]) -> None:
    """Insert ``fresh`` (id, line: each new to the box) after the box's last row, in one ``COPY``
    inside the open transaction; the box absorbs each chunk once it is sent."""
    number, generation = box.number, box.generation
    with conn.cursor().copy(COPY) as cp:
        cp.write(_HEADER)
        for start in range(0, len(fresh), CHUNK):
            part = fresh[start:start + CHUNK]
            first = box.seq + 1
            cp.write(encode(number, generation, first, part))
            box.absorb(key, [(seq, line) for seq, (_, line) in enumerate(part, first)], [lid for lid, _ in part])
        cp.write(_TRAILER)

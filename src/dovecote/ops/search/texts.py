"""What the search index reads of a message, and how it keeps the text: compressed in blocks.

Reading. A message line is large (every envelope block) and a first index
reads every one, so ``read_message`` decodes, in one typed pass, only the
leaves ``Envelope`` reads for the sender, subject, body, attachments and
deferral, and skips every other key unparsed (no dict per block); it answers
what ``Indexed.of`` the envelope over the whole line answers
(tests/ops/search/test_search_texts.py, a property over random lines). A line the typed
decoder refuses is read whole (``Letter.data``).

Query words are cut into terms by the index's own tokenizer (``split_words``).

Keeping. The texts are the index's largest part and are only read to cut a
snippet (the full-text index has its own terms), so each box's texts are
stored ``BLOCK`` messages to a zlib stream; the ``content`` view the FTS5
table reads its external content from cuts one text out with ``text_of``.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
import orjson

from dovecote.model.envelope import Envelope
from dovecote.model.letters import Letter
from dovecote.model.letters import text_or_none as _str
from dovecote.ops.mail import artifacts
from dovecote.ops.search import items as search_items
from dovecote.ops.search.items import wide

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: An artifact's contents are indexed when it is UTF-8 text of at most this many bytes.
ARTIFACT_TEXT_MAX = 2 * 1024 * 1024
#: How many messages' texts are compressed together (a snippet decompresses one block).
BLOCK = 32
#: The SQL function the content view cuts a text out of its block with (registered per connection).
TEXT_FN = "dovecote_text"
#: How text becomes terms: in the index, and in the query (``split_words``), alike.
TOKENIZE = "unicode61 remove_diacritics 2"


class _Party(msgspec.Struct):
    entity_id: Any = None


class _Content(msgspec.Struct):
    subject: Any = None
    body: Any = None
    body_ref: Any = None
    artifacts: Any = None
    artifact_refs: Any = None


class _Life(msgspec.Struct):
    defer_until_tic: Any = None


class _MessageKeys(msgspec.Struct):
    """The keys of a message line the index reads, typed down to the leaves it reads;
    every other key, at every level, is skipped unparsed. A block that is not an
    object (which ``Envelope`` reads as empty) fails the decode: the line is read whole."""

    sender: _Party | None = None
    sender_flat: Any = msgspec.field(default=None, name="from")
    content: _Content | None = None
    subject: Any = None
    body: Any = None
    lifecycle: _Life | None = None


_decode_keys = msgspec.json.Decoder(_MessageKeys).decode
_NO_CONTENT = _Content()


class Indexed(NamedTuple):
    """What the index reads of a message, by ``Envelope``'s rules (``of`` is the reference)."""

    sender: str | None
    subject: str
    body: str
    body_ref: str | None
    #: ``content.artifacts`` as the line holds it (its entries are checked where they are read)
    artifacts: Any
    artifact_refs: list[str]
    defer_until_tic: int | None

    @classmethod
    def of(cls, env: Envelope) -> Indexed:
        """The reference reading: the envelope over the whole line."""
        content = env.data.get("content")
        found = content.get("artifacts") if isinstance(content, dict) else None
        return cls(env.sender, env.subject, env.body, env.body_ref, found, env.artifact_refs, env.defer_until_tic)


def split_words(conn: sqlite3.Connection, words: list[str]) -> list[str]:
    """The index terms of ``words``, cut and folded by SQLite's own tokenizer (never a copy of it)."""
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.qwords USING fts5(w, tokenize = '{TOKENIZE}')")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.qterms USING fts5vocab(temp, qwords, instance)")
    conn.executemany("INSERT INTO temp.qwords(rowid, w) VALUES (?, ?)", enumerate(words, 1))
    try:
        return list(dict.fromkeys(t for (t,) in conn.execute("SELECT term FROM temp.qterms ORDER BY doc, offset")))
    finally:
        conn.execute("DELETE FROM temp.qwords")


def read_message(letter: Letter) -> Indexed:
    """``Indexed.of(Envelope(letter.data()))``, read from the few keys it needs in one typed
    decode (tests/ops/search/test_search_texts.py proves them equal); the whole line when it must."""
    try:
        k = _decode_keys(letter.raw)
    except (msgspec.DecodeError, ValueError):
        return Indexed.of(Envelope(letter.data()))
    due = k.lifecycle.defer_until_tic if k.lifecycle is not None else None
    if wide(due):
        return Indexed.of(Envelope(letter.data()))  # the whole-line reader makes such a number a float
    c = k.content if k.content is not None else _NO_CONTENT
    refs = c.artifact_refs
    return Indexed(
        _str(k.sender.entity_id if k.sender is not None else None) or _str(k.sender_flat),
        _str(c.subject) or _str(k.subject) or "",
        _str(c.body) or _str(k.body) or "",
        _str(c.body_ref),
        c.artifacts,
        [r for r in refs if isinstance(r, str)] if isinstance(refs, list) else [],
        None if due is None else Envelope({"lifecycle": {"defer_until_tic": due}}).defer_until_tic,  # its rule
    )


def _text(data: bytes | None, limit: int) -> str:
    """``data`` as text if it is UTF-8 without NUL and within ``limit`` bytes; else ""."""
    if data is None or len(data) > limit or b"\x00" in data:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return ""


def message_texts(ctx: Context, m: Indexed) -> tuple[str, str, str]:
    """(subject, body, attachments): the text values of a message, never its keys."""
    if not m.body_ref and not m.artifacts and not m.artifact_refs:  # the common message: its text is inline
        return m.subject, m.body, ""
    body = m.body
    if m.body_ref:
        extra = _text(artifacts.get_bytes(ctx, m.body_ref), ctx.roster.limits.body_hard_limit)
        body = f"{body}\n{extra}" if body and extra else body or extra
    parts: list[str] = []
    seen: set[str] = set()
    for a in m.artifacts if isinstance(m.artifacts, list) else ():
        if not isinstance(a, dict) or not isinstance(a.get("ref"), str):
            continue
        seen.add(a["ref"])
        if isinstance(a.get("name"), str):
            parts.append(a["name"])
        parts.append(_text(artifacts.get_bytes(ctx, a["ref"]), ARTIFACT_TEXT_MAX))
    for ref in m.artifact_refs:  # refs without an entry (foreign writers)
        if ref not in seen and ref.startswith("sha256:"):
            parts.append(_text(artifacts.get_bytes(ctx, ref), ARTIFACT_TEXT_MAX))
    return m.subject, body, "\n".join(p for p in parts if p)


_decode_block = msgspec.msgpack.Decoder(list[tuple[str, str]]).decode
_encode_block = msgspec.msgpack.Encoder().encode
_last_block: list[tuple[int, bytes, list[tuple[str, str]]]] = []


def pack(texts: Sequence[tuple[str, str]]) -> bytes:
    """One block: the (body, attachments) of up to ``BLOCK`` messages, compressed."""
    return zlib.compress(_encode_block(texts), 1)


def text_of(blk: int, z: bytes, part: int, col: int) -> str:
    """One text (body 0, attachments 1) of one message, out of its compressed block.

    FTS5 asks for a row's columns one by one, so the last block stays decoded. Threads of one
    process (two handles, a server's) share that one entry: each reads it once into a local, so
    it never cuts a text out of the block another thread has just put there.
    """
    last = _last_block[0] if _last_block else None
    if last is None or last[0] != blk or last[1] != z:
        last = (blk, z, _decode_block(zlib.decompress(z)))
        _last_block[:] = [last]
    return last[2][part][col]


#: A message as the index builds it: rowid, id, ts, sender, subject, body, attach, ent.
Doc = tuple[int, str, str, str, str, str, str, str]
#: Its ``docs`` table row: rowid, id, ts, sender, subject, ent, block, place in the block.
DocRow = tuple[int, str, str, str, str, str, int, int]
_INSERT_DOCS = "INSERT INTO docs(rowid, id, ts, sender, subject, ent, blk, part) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_TEXTS = "INSERT INTO texts(blk, z) VALUES (?, ?)"


def _packed(parts: list[list[tuple[str, str]]], first: int) -> list[tuple[int, bytes]]:
    return list(enumerate((pack(p) for p in parts), first))


def _blocks(docs: list[Doc], blk: int) -> tuple[list[list[tuple[str, str]]], list[DocRow]]:
    """The texts of ``docs`` (in rowid order), each box's ``BLOCK`` at a time, in blocks numbered
    on from ``blk``, and the docs' table rows."""
    by_box: dict[str, list[Doc]] = {}
    for d in docs:
        by_box.setdefault(d[7], []).append(d)
    parts: list[list[tuple[str, str]]] = []
    rows: list[DocRow] = []
    for box in by_box.values():
        for i in range(0, len(box), BLOCK):
            part = box[i : i + BLOCK]
            blk += 1
            parts.append([(d[5], d[6]) for d in part])
            rows += [(d[0], d[1], d[2], d[3], d[4], d[7], blk, j) for j, d in enumerate(part)]
    return parts, rows


#: How many messages' full-text rows go in one statement (one JSON array).
FTS_CHUNK = 4096
_FTS_ROW = "INSERT INTO fts(rowid, subject, body, attach, ent) VALUES (?, ?, ?, ?, ?)"
_FTS_ROWS = ("INSERT INTO fts(rowid, subject, body, attach, ent) SELECT value ->> 0, value ->> 1, value ->> 2,"
             " value ->> 3, value ->> 4 FROM json_each(?)")


def _insert_fts(conn: sqlite3.Connection, docs: list[Doc]) -> None:
    """The full-text rows of ``docs``, ``FTS_CHUNK`` at a time in one statement over a JSON array
    of them: SQLite lets go of the GIL once, not once a row (a thread writing row by row beside
    one running Python waits for the GIL at every row). A chunk with a text JSON cannot carry
    as it is (a NUL, a lone surrogate) goes row by row."""
    for i in range(0, len(docs), FTS_CHUNK):
        rows = [(d[0], d[4], d[5], d[6], d[7]) for d in docs[i : i + FTS_CHUNK]]
        try:
            array: bytes | None = orjson.dumps(rows)
        except TypeError:  # a lone surrogate, which JSON cannot carry
            array = None
        if array is None or b"\\u0000" in array:  # SQLite's JSON cuts a text at a NUL; the row binding does not
            conn.executemany(_FTS_ROW, rows)
        else:
            conn.execute(_FTS_ROWS, (array.decode(),))


def _top_block(conn: sqlite3.Connection) -> int:
    (blk,) = conn.execute("SELECT coalesce(max(blk), 0) FROM texts").fetchone()
    return int(blk)


def insert_docs(conn: sqlite3.Connection, docs: list[Doc]) -> None:
    """Write the rows in rowid order (packed pages), each box's texts compressed in blocks."""
    if not docs:
        return
    docs.sort()
    blk = _top_block(conn)
    parts, rows = _blocks(docs, blk)
    rows.sort()
    conn.executemany(_INSERT_DOCS, rows)
    _insert_fts(conn, docs)
    conn.executemany(_INSERT_TEXTS, _packed(parts, blk + 1))


class BoxWriter:
    """A first build's writes: each box's full-text rows on a second thread while this thread
    reads the next box, then the text blocks compressed there while this thread writes every
    box's ``docs`` rows (in rowid order) and the rest. SQLite (a whole box in one statement) and
    zlib let go of the GIL, so the wall time of a build shrinks; its CPU time does not.

    Until ``finish`` returns, nothing else may use the connection. Each box's full-text rows
    go in rowid order, so the full-text index holds a segment per box.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn, self.blk = conn, _top_block(conn)
        self.rows: list[DocRow] = []
        self.parts: list[list[tuple[str, str]]] = []
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="dovecote-index")
        self._jobs: list[Future[None]] = []

    def __enter__(self) -> BoxWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)  # the connection is this thread's again

    def box(self, docs: list[Doc]) -> None:
        """Write one box's full-text rows on the worker; its other rows wait for ``finish``."""
        docs.sort()
        self._jobs.append(self._pool.submit(_insert_fts, self.conn, docs))
        parts, rows = _blocks(docs, self.blk + len(self.parts))
        self.parts += parts
        self.rows += rows

    def finish(self, then: Sequence[Callable[[], object]] = ()) -> None:
        """Wait for the full-text rows (the worker's error is raised here); call ``then`` (the
        other writes of the boxes) and write the ``docs`` rows while the worker compresses the
        text blocks; then write those."""
        for job in self._jobs:
            job.result()
        texts = self._pool.submit(_packed, self.parts, self.blk + 1)
        for write in then:
            write()
        self.rows.sort()
        self.conn.executemany(_INSERT_DOCS, self.rows)
        self.conn.executemany(_INSERT_TEXTS, texts.result())


def drop_box(conn: sqlite3.Connection, n: int) -> bool:
    """Remove every row of box ``n`` (its text, its items); True if it had any."""
    had = conn.execute("SELECT 1 FROM items WHERE n = ? LIMIT 1", (n,)).fetchone() is not None
    if had:
        docs = "SELECT doc FROM items WHERE n = ? AND doc IS NOT NULL"
        conn.execute(
            "INSERT INTO fts(fts, rowid, subject, body, attach, ent) SELECT 'delete', rid, subject, body, attach,"
            f" ent FROM content WHERE rid IN ({docs})", (n,))
        conn.execute(f"DELETE FROM texts WHERE blk IN (SELECT blk FROM docs WHERE rowid IN ({docs}))", (n,))
        conn.execute(f"DELETE FROM docs WHERE rowid IN ({docs})", (n,))
        search_items.drop(conn, n)
    return had

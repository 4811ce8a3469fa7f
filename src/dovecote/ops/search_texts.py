"""What the search index reads of a message, and how it keeps the text: compressed in blocks.

Reading. A message line is large (every envelope block) and a first index
reads every one, so ``read_message`` decodes, in one typed pass, only the
leaves ``Envelope`` reads for the sender, subject, body, attachments and
deferral, and skips every other key unparsed (no dict per block); it answers
what ``Indexed.of`` the envelope over the whole line answers
(tests/test_search_texts.py, a property over random lines). A line the typed
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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from dovecote.envelope import Envelope
from dovecote.letters import Letter
from dovecote.letters import text_or_none as _str
from dovecote.ops import artifacts

if TYPE_CHECKING:
    from dovecote.context import Context

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


def _wide(v: object) -> bool:
    """An integer beyond 64 bits, which msgspec keeps exact and ``Letter.data`` does not."""
    return isinstance(v, int) and not -(1 << 63) <= v < (1 << 64)


def read_message(letter: Letter) -> Indexed:
    """``Indexed.of(Envelope(letter.data()))``, read from the few keys it needs in one typed
    decode (tests/test_search_texts.py proves them equal); the whole line when it must."""
    try:
        k = _decode_keys(letter.raw)
    except (msgspec.DecodeError, ValueError):
        return Indexed.of(Envelope(letter.data()))
    due = k.lifecycle.defer_until_tic if k.lifecycle is not None else None
    if _wide(due):
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

    FTS5 asks for a row's columns one by one, so the last block stays decoded.
    """
    if not _last_block or _last_block[0][0] != blk or _last_block[0][1] != z:
        _last_block[:] = [(blk, z, _decode_block(zlib.decompress(z)))]
    return _last_block[0][2][part][col]

"""What the search index reads of a message, and how it keeps the text: compressed in blocks.

Reading. A message line is large (every envelope block) and a first index
reads every one, so it decodes only the keys ``Envelope`` reads for the
sender, subject, body, attachments and deferral (``MESSAGE_KEYS``) and skips
the rest unparsed; the envelope over those keys answers those properties as
the envelope over the whole line would (tests/test_search_texts.py). A line
the fast decoder refuses is read whole (``Letter.data``).

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
from typing import TYPE_CHECKING, Any

import msgspec

from dovecote.envelope import Envelope
from dovecote.letters import Letter
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


class _MessageKeys(msgspec.Struct):
    """The top-level keys ``Envelope.sender/subject/body/body_ref/artifact_refs/defer_until_tic``
    and ``message_texts`` read; every other key of the line is skipped."""

    sender: Any = None
    sender_flat: Any = msgspec.field(default=None, name="from")
    content: Any = None
    subject: Any = None
    body: Any = None
    lifecycle: Any = None


MESSAGE_KEYS = ("sender", "from", "content", "subject", "body", "lifecycle")
_decode_keys = msgspec.json.Decoder(_MessageKeys).decode


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


def envelope_of(letter: Letter) -> Envelope:
    """The message's envelope over the keys the index reads (the whole line if it must)."""
    try:
        k = _decode_keys(letter.raw)
    except (msgspec.DecodeError, ValueError):
        return Envelope(letter.data())
    if isinstance(k.lifecycle, dict) and any(_wide(v) for v in k.lifecycle.values()):
        return Envelope(letter.data())  # the whole-line reader makes such a number a float
    values = (k.sender, k.sender_flat, k.content, k.subject, k.body, k.lifecycle)
    return Envelope({key: v for key, v in zip(MESSAGE_KEYS, values, strict=True) if v is not None})


def _text(data: bytes | None, limit: int) -> str:
    """``data`` as text if it is UTF-8 without NUL and within ``limit`` bytes; else ""."""
    if data is None or len(data) > limit or b"\x00" in data:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return ""


def message_texts(ctx: Context, env: Envelope) -> tuple[str, str, str]:
    """(subject, body, attachments): the text values of a message, never its keys."""
    body = env.body
    if env.body_ref:
        extra = _text(artifacts.get_bytes(ctx, env.body_ref), ctx.roster.limits.body_hard_limit)
        body = f"{body}\n{extra}" if body and extra else body or extra
    parts: list[str] = []
    content = env.data.get("content")
    entries = content.get("artifacts") if isinstance(content, dict) else None
    seen: set[str] = set()
    for a in entries if isinstance(entries, list) else ():
        if not isinstance(a, dict) or not isinstance(a.get("ref"), str):
            continue
        seen.add(a["ref"])
        if isinstance(a.get("name"), str):
            parts.append(a["name"])
        parts.append(_text(artifacts.get_bytes(ctx, a["ref"]), ARTIFACT_TEXT_MAX))
    for ref in env.artifact_refs:  # refs without an entry (foreign writers)
        if ref not in seen and ref.startswith("sha256:"):
            parts.append(_text(artifacts.get_bytes(ctx, ref), ARTIFACT_TEXT_MAX))
    return env.subject, body, "\n".join(p for p in parts if p)


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

"""Keeping the search index up to each entity ledger: ``sync`` indexes what was appended since each box's mark.

The index file and its connection are ``ops.search.index``. Here: each box is tailed from the
mark the index recorded (``store.tail``), and the new messages' rows are written in one write
transaction with the marks they reach, so two processes never index a letter twice and a crash
leaves the previous marks with the previous rows. A row's rowid is its letter's time
(``ts_key``), so matches come newest first without a sort.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from dovecote.derive.lifecycle import LINK_KINDS
from dovecote.model.addresses import entity as entity_addr
from dovecote.model.letters import Letter
from dovecote.model.vocab import LetterKind
from dovecote.ops.search import items as search_items
from dovecote.ops.search.index import SearchIndex, ent_token, journal
from dovecote.ops.search.texts import BoxWriter, Doc, drop_box, insert_docs, message_texts, read_message
from dovecote.store.core import Mark, Tail
from dovecote.util.osutil import collector_paused
from dovecote.util.timeutil import order_ms

if TYPE_CHECKING:
    from dovecote.ops.context import Context

_ID_BITS = 20
_MS_MAX = (1 << (63 - _ID_BITS)) - 1

#: SQLite's page cache during a (re)build, KiB: the full-text segments are merged in memory.
BUILD_CACHE_KIB = 128 * 1024
#: FTS5's buffer of pending terms, bytes (its default is 1 MiB): a build writes a few large segments.
FTS_HASH_BYTES = 32 * 1024 * 1024

_encode_mark = msgspec.msgpack.Encoder().encode
_decode_mark = msgspec.msgpack.Decoder(Mark).decode


def ts_key(ts: str | None, lid: str) -> int:
    """The rowid a letter wants: its time in ms, then 20 bits of its id (newest = largest)."""
    ms = min(max(order_ms(ts), 0), _MS_MAX)  # an unreadable time is NO_TIME, before the epoch: 0
    try:
        low = int(lid[:5], 16)
    except ValueError:
        low = 0
    return (ms << _ID_BITS) | low


def _index_messages(
    ctx: Context, idx: SearchIndex, n: int, letters: Sequence[Letter], *, fresh: bool, taken: set[int], check: bool,
    later: list[Callable[[], object]] | None = None,
) -> list[Doc]:
    """The ``docs`` rows of the messages among ``letters`` for box ``n``; the items they touch
    replayed and written (or that write put in ``later``); the caller inserts the rows.

    ``taken``: the rowids given out in this transaction; ``check``: rows from before it
    exist, so a rowid is also looked up. Two letters in the same millisecond with the
    same 20 id bits: the later one takes the next free slot below.
    """
    conn = idx.conn
    batch = search_items.Batch(conn, n, fresh=fresh)
    known = batch.prepare(letters, LINK_KINDS)
    ent = ent_token(n)
    docs: list[Doc] = []
    for letter in letters:
        if letter.kind != LetterKind.message or letter.id in known:
            continue
        m = read_message(letter)
        subject, body, attach = message_texts(ctx, m)
        key = ts_key(letter.ts, letter.id)
        while key in taken or (check and conn.execute("SELECT 1 FROM docs WHERE rowid = ?", (key,)).fetchone()):
            key -= 1
        taken.add(key)
        docs.append((key, letter.id, letter.ts or "", m.sender or "", subject, body, attach, ent))
        batch.message(letter.id, m.defer_until_tic, key)
    if later is None:
        batch.write()
    else:
        later.append(functools.partial(batch.store, batch.planned()))
    idx.stats["indexed"] += len(docs)
    return docs


def _stored(conn: sqlite3.Connection) -> dict[str, tuple[int, Mark]]:
    return {e: (n, _decode_mark(m)) for n, e, m in conn.execute("SELECT n, entity, mark FROM boxes")}


def _current(have: tuple[int, Mark] | None, tail: Tail) -> bool:
    """Does the tail from ``have`` leave the box's rows as they are?"""
    return have is not None and tail.mark == have[1] and not tail.letters and (not tail.fresh or not have[1].position)


def sync(ctx: Context, idx: SearchIndex, entities: list[str], *, prune: bool) -> None:
    """Bring the index up to each entity ledger: only what was appended, or the box again.

    Each box is tailed from its mark without a lock; the work runs in one write
    transaction that reads the recorded marks again (and tails again from one
    another process moved meanwhile), so two processes never index a letter
    twice and a crash leaves the previous marks with the previous rows.
    ``prune`` (only when ``entities`` is the whole roster) drops the rows of
    entities the roster no longer lists.
    """
    conn = idx.conn
    if idx.path is not None and not idx.wal:  # a switch refused before (another connection had the file)
        idx.wal = journal(conn, "WAL")
    (version,) = conn.execute("PRAGMA data_version").fetchone()
    if version != idx.data_version:  # someone else wrote: trust the file, not our memory of it
        idx.boxes = _stored(conn)
        idx.data_version = version
    tails: dict[str, Tail] = {}
    for e in entities:
        have = idx.boxes.get(e)
        tail = ctx.store.tail(entity_addr(e), have[1] if have else None)
        if not _current(have, tail):
            tails[e] = tail
    gone = set(idx.boxes) - set(entities) if prune else set()
    if not tails and not gone:
        return
    big = any(t.fresh and t.letters for t in tails.values())
    first = big and not idx.boxes and conn.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is None
    if big:  # a (re)build: a crash loses the whole transaction anyway, and the old rows stay
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute(f"PRAGMA cache_size=-{BUILD_CACHE_KIB}")
    # an empty file: a rollback journal keeps no page, the WAL every one (twice the bytes);
    # refused while another connection has the file open, and then the build goes through the WAL
    rollback = first and idx.path is not None and journal(conn, "DELETE")
    if rollback:
        idx.wal = False
    conn.execute("BEGIN IMMEDIATE")
    if first:  # fewer, larger merges of the full-text segments (kept in the table's own config)
        conn.execute("INSERT INTO fts(fts, rank) VALUES ('automerge', 16)")
        conn.execute("INSERT INTO fts(fts, rank) VALUES ('crisismerge', 64)")
        # and fewer segments to merge at all: the pending terms are flushed every FTS_HASH_BYTES
        conn.execute("INSERT INTO fts(fts, rank) VALUES ('hashsize', ?)", (FTS_HASH_BYTES,))
    # a (re)build makes a few objects per message and frees none until it ends: the
    # cyclic collector would only walk them again and again (a seventh of the build)
    paused = collector_paused() if big else contextlib.nullcontext()
    try:
        with paused:
            _write(ctx, idx, conn, tails, gone, first=first)
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        idx.boxes.clear()
        idx.data_version = None
        raise
    finally:
        if big:
            with contextlib.suppress(sqlite3.Error):
                if rollback:
                    idx.wal = journal(conn, "WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("PRAGMA cache_size=-2000")


def _write(
    ctx: Context, idx: SearchIndex, conn: sqlite3.Connection, tails: dict[str, Tail], gone: set[str], *, first: bool
) -> None:
    """The work of one ``sync`` inside its write transaction: ``idx.boxes`` becomes the marks it
    wrote (``sync`` clears it again if the transaction fails). A ``first`` build (of an empty
    index) reads a box while a ``BoxWriter`` thread writes the one before (the rest waits)."""
    stored = _stored(conn)
    check = conn.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is not None
    taken: set[int] = set()
    docs: list[Doc] = []
    later: list[Callable[[], object]] = []
    for e in gone & set(stored):
        drop_box(conn, stored[e][0])
        conn.execute("DELETE FROM boxes WHERE entity = ?", (e,))
        del stored[e]
    with BoxWriter(conn) if first and not check else contextlib.nullcontext() as writer:
        for e, tail in tails.items():
            cur = stored.get(e)
            if cur != idx.boxes.get(e):  # another process indexed this box meanwhile: go on from its mark
                tail = ctx.store.tail(entity_addr(e), cur[1] if cur else None)
                if _current(cur, tail):
                    continue
            n = cur[0] if cur is not None else max((m for m, _ in stored.values()), default=0) + 1
            if tail.fresh and cur is not None and drop_box(conn, n):
                idx.stats["box_rebuilds"] += 1
            box = _index_messages(ctx, idx, n, tail.letters, fresh=tail.fresh, taken=taken, check=check,
                                  later=None if writer is None else later)
            later.append(functools.partial(conn.execute, "INSERT OR REPLACE INTO boxes(n, entity, mark) VALUES"
                                           " (?, ?, ?)", (n, e, _encode_mark(tail.mark))))
            if writer is None:
                docs += box
            else:
                writer.box(box)
            stored[e] = (n, tail.mark)
        if writer is not None:
            writer.finish(then=later)
            later = []
    for write in later:
        write()
    insert_docs(conn, docs)
    idx.boxes = stored

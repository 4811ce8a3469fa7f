"""The search index: a SQLite FTS5 file that is only a cache of the entity ledgers.

Law (DESIGN 1.1, reference A12). The ledgers are the authority; the index in
``<home>/cache/search.sqlite`` is a cache that may be deleted at any moment.
The SQLite lane the /inbox skill dropped became a second authority because it
drifted to a stale snapshot. Here the index cannot drift unnoticed:

* it records, per entity box, the store ``Mark`` it has indexed to and, before
  every answer, indexes only the letters ``store.tail(box, mark)`` returns;
* the store checks the mark (the file store: the same file, the bytes before
  the position unchanged), so a replaced or rewritten ledger comes back
  ``fresh`` and that box is indexed again from zero; a missing, corrupt or
  foreign index file is rebuilt from every ledger;
* the lifecycle state of each item is kept beside the text (``search_items``),
  replayed by the one rule as its links are tailed, so a query never folds a box.

A store whose marks die with the process (the memory store) gets an index in
memory per handle: a file would only ever be rebuilt.

What is indexed: each ``message`` letter's subject, its body (inline, or the
blob named by ``content.body_ref``) and its stored artifacts (their names,
and their contents when they are UTF-8 text without NUL, up to
``search_texts.ARTIFACT_TEXT_MAX``). Only text values are indexed, never JSON keys, so a
query for ``subject`` or ``routing`` finds only messages whose text holds that
word (the defect of reference A10, where ``-q subject`` matched everything).

Size (at most 0.6x the ledgers). The text is stored once: subjects in
``docs``, bodies and attachment texts compressed ``BLOCK`` messages at a time
in ``texts``; the ``content`` view is the FTS5 table's external content
(snippets are cut from it), so the full-text index keeps no copy. It keeps
which columns hold a term, not positions (``detail=column``), and no column
sizes (no ranking). An entity is named by its box number (``e<n>``, a
one-token column), never by its id on every row.

Ordering. A row's rowid is derived from its letter's ``ts`` (milliseconds
since the epoch, shifted left 20 bits, plus 20 bits of the id), so FTS5 yields
matches newest first without a sort and ``LIMIT`` stops early even for a word
that is in every message. Equal milliseconds are ordered by id.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from dovecote.derive.lifecycle import LINK_KINDS
from dovecote.model.addresses import entity as entity_addr
from dovecote.model.letters import Letter
from dovecote.model.vocab import LetterKind
from dovecote.ops.search import items as search_items
from dovecote.ops.search.texts import (
    TEXT_FN,
    TOKENIZE,
    BoxWriter,
    Doc,
    drop_box,
    insert_docs,
    message_texts,
    read_message,
    text_of,
)
from dovecote.ops.warm.registry import Kind
from dovecote.store.core import Mark, Tail
from dovecote.util import fileops
from dovecote.util.osutil import collector_paused
from dovecote.util.timeutil import order_ms

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: v3: marks, external-content text, the item table (an older index is rebuilt)
SCHEMA_VERSION = "dovecote-search-v3"
INDEX_FILE = "search.sqlite"
WARM_KEY: Kind[SearchIndex] = Kind("search")
_ID_BITS = 20
_MS_MAX = (1 << (63 - _ID_BITS)) - 1

#: SQLite's page cache during a (re)build, KiB: the full-text segments are merged in memory.
BUILD_CACHE_KIB = 128 * 1024
#: FTS5's buffer of pending terms, bytes (its default is 1 MiB): a build writes a few large segments.
FTS_HASH_BYTES = 32 * 1024 * 1024

_DDL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS boxes(n INTEGER PRIMARY KEY, entity TEXT NOT NULL UNIQUE, mark BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS docs(
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, ts TEXT NOT NULL, sender TEXT NOT NULL,
    subject TEXT NOT NULL, ent TEXT NOT NULL, blk INTEGER NOT NULL, part INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS texts(blk INTEGER PRIMARY KEY, z BLOB NOT NULL);
CREATE VIEW IF NOT EXISTS content AS
    SELECT d.rowid AS rid, d.subject AS subject, TEXT_FN(t.blk, t.z, d.part, 0) AS body,
           TEXT_FN(t.blk, t.z, d.part, 1) AS attach, d.ent AS ent
    FROM docs AS d JOIN texts AS t ON t.blk = d.blk;
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    subject, body, attach, ent, content = 'content', content_rowid = 'rid', detail = column, columnsize = 0,
    tokenize = "TOKENIZE");
""".replace("TOKENIZE", TOKENIZE).replace("TEXT_FN", TEXT_FN) + search_items.ITEMS_DDL

_encode_mark = msgspec.msgpack.Encoder().encode
_decode_mark = msgspec.msgpack.Decoder(Mark).decode


def ent_token(n: int) -> str:
    """The one alphanumeric token naming box ``n`` in the ``ent`` column."""
    return f"e{n}"


def ts_key(ts: str | None, lid: str) -> int:
    """The rowid a letter wants: its time in ms, then 20 bits of its id (newest = largest)."""
    ms = min(max(order_ms(ts), 0), _MS_MAX)  # an unreadable time is NO_TIME, before the epoch: 0
    try:
        low = int(lid[:5], 16)
    except ValueError:
        low = 0
    return (ms << _ID_BITS) | low


@dataclass
class SearchIndex:
    """The open index of one home, kept on the warm handle (``ctx.warm['search']``)."""

    path: Path | None
    conn: sqlite3.Connection
    ino: int | None
    lock: threading.RLock = field(default_factory=threading.RLock)
    #: entity -> (its box number, the mark its rows are indexed to), as this connection last read them
    boxes: dict[str, tuple[int, Mark]] = field(default_factory=dict)
    #: SQLite's ``data_version`` when ``boxes`` was read: it moves when another
    #: connection (another process, another handle) commits to the file
    data_version: int | None = None
    #: is the file in WAL mode as far as this connection knows (a switch SQLite refused is tried again)
    wal: bool = False
    #: counters for tests and benchmarks: full rebuilds, box re-indexes, messages indexed
    stats: dict[str, int] = field(default_factory=lambda: {"rebuilds": 0, "box_rebuilds": 0, "indexed": 0})

    #: closed: its connection is gone (``held`` never hands it out)
    closed: bool = False
    #: retired: replaced on the warm handle; closed by whoever is last inside it (``search_open``)
    retired: bool = False

    def close(self) -> None:
        """Close the connection, under the lock: never beneath a thread inside it."""
        with self.lock:
            self.closed = True
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()

    def retire(self) -> None:
        """Take it out of use: closed now if no thread is inside, else by the last one out."""
        self.retired = True
        if self.lock.acquire(blocking=False):
            try:
                self.close()
            finally:
                self.lock.release()

    def entity_of(self, n: int) -> str | None:
        return next((e for e, (m, _) in self.boxes.items() if m == n), None)


class Unusable(sqlite3.DatabaseError):
    """The index file is not this version's index (another schema, a foreign file)."""


#: SQLite result codes that mean the file itself is bad: CORRUPT, NOTADB.
_BAD_FILE = frozenset({11, 26})
#: SQLite result codes that mean the file was taken from beneath an open connection:
#: IOERR (any kind: the -wal or -shm went, an fstat of the unlinked file) and READONLY_DBMOVED.
_YANKED = frozenset({10})
_READONLY_DBMOVED = 1032
#: SQLite result codes that mean another connection holds the file: BUSY, LOCKED.
_BUSY = frozenset({5, 6})


def busy(e: sqlite3.Error) -> bool:
    """Is this error another connection holding the file (SQLITE_BUSY or SQLITE_LOCKED)?"""
    return (getattr(e, "sqlite_errorcode", 0) or 0) & 0xFF in _BUSY


def journal(conn: sqlite3.Connection, mode: str) -> bool:
    """Switch the file to journal ``mode``; False if SQLite refused because another connection
    has the file open or locked.

    SQLite refuses a switch out of WAL while any other connection is open, and a switch into
    it while one holds a lock, at once and without its busy wait ("database is locked"), so
    two server workers opening one index, or one building it while the other reads, must not
    turn that into a failed search: the mode only decides bytes on disk and whether readers
    wait for a writer, never an answer, and the switch is tried again at the next sync.
    """
    try:
        row = conn.execute(f"PRAGMA journal_mode={mode}").fetchone()
    except sqlite3.OperationalError as e:
        if busy(e):
            return False
        raise
    return row is not None and str(row[0]).lower() == mode.lower()


def unusable(e: sqlite3.Error) -> bool:
    """Is this error the index file being bad (rebuild it) rather than busy or I/O (report it)?"""
    if isinstance(e, Unusable):
        return True
    code = getattr(e, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _BAD_FILE


def yanked(e: sqlite3.Error) -> bool:
    """Is this error the index file (or its journal) deleted or replaced beneath the connection?"""
    code = getattr(e, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF in _YANKED or code == _READONLY_DBMOVED)


def connect(path: Path | None) -> tuple[sqlite3.Connection, bool]:
    """A connection to the index at ``path`` (in memory for None), and whether it is in WAL mode."""
    conn = _register(sqlite3.connect(
        str(path) if path else ":memory:", isolation_level=None, check_same_thread=False, timeout=30.0
    ))
    # WAL with NORMAL sync: a commit is one append, no fsync; a power cut may lose the
    # last commits, never consistency, and a lost commit only means indexing again.
    wal = path is not None and journal(conn, "WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(_DDL)
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row is None:
        conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row[0] != SCHEMA_VERSION:
        conn.close()
        raise Unusable(f"index schema {row[0]!r} is not {SCHEMA_VERSION!r}")
    return conn, wal


def _register(conn: sqlite3.Connection) -> sqlite3.Connection:
    conn.create_function(TEXT_FN, 4, text_of, deterministic=True)
    return conn


def discard(path: Path) -> None:
    """Remove an unusable index and its journals (a stale journal must not be replayed)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            fileops.unlink(f"{path}{suffix}")


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

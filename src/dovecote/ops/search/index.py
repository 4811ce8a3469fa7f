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

Keeping the index up to each ledger (tailing each box from its mark, writing the new rows) is
``ops.search.sync``; this module is the file, its schema and its connection.

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
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path

from dovecote.ops.search import items as search_items
from dovecote.ops.search.texts import TEXT_FN, TOKENIZE, text_of
from dovecote.ops.warm.registry import Kind
from dovecote.store.core import Mark
from dovecote.util import fileops

#: v3: marks, external-content text, the item table (an older index is rebuilt)
SCHEMA_VERSION = "dovecote-search-v3"
INDEX_FILE = "search.sqlite"
WARM_KEY: Kind[SearchIndex] = Kind("search")

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


def ent_token(n: int) -> str:
    """The one alphanumeric token naming box ``n`` in the ``ent`` column."""
    return f"e{n}"


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

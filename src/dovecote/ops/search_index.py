"""The search index: a SQLite FTS5 file that is only a cache of the entity ledgers.

Law (DESIGN 1.1, reference A12). The ledgers are the authority; the index in
``<home>/cache/search.sqlite`` is a cache that may be deleted at any moment.
The SQLite lane the /inbox skill dropped became a second authority because it
drifted to a stale snapshot. Here the index cannot drift unnoticed:

* it records, per entity box, the ledger checkpoint it has indexed (inode,
  offset, line number, and a digest of the bytes just before the offset) and,
  before every answer, indexes only the letters appended since
  (``LedgerReader.resume``);
* a replaced ledger (another inode, a shrunk file, or one whose bytes before
  the checkpoint changed in place, even to the same size) makes that box be
  indexed again from zero; a missing, corrupt or foreign index file is rebuilt
  from every ledger;
* it stores text and identity only. Lifecycle states are never stored (the
  query module derives them, ``ops.search``).

What is indexed: each ``message`` letter's subject, its body (inline, or the
blob named by ``content.body_ref``) and its stored artifacts (their names,
and their contents when they are UTF-8 text without NUL, up to
``ARTIFACT_TEXT_MAX``). Only text values are indexed, never JSON keys, so a
query for ``subject`` or ``routing`` finds only messages whose text holds that
word (the defect of reference A10, where ``-q subject`` matched everything).

Ordering. A row's rowid is derived from its letter's ``ts`` (milliseconds
since the epoch, shifted left 20 bits, plus 20 bits of the id), so FTS5 yields
matches newest first without a sort and ``LIMIT`` stops early even for a word
that is in every message. Equal milliseconds are ordered by id.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dovecote.envelope import Envelope
from dovecote.errors import StoreError
from dovecote.folds import Kind
from dovecote.ledger import Checkpoint, LedgerReader
from dovecote.letters import Letter
from dovecote.names import entity as entity_addr
from dovecote.ops import artifacts
from dovecote.store import files_of
from dovecote.timeutil import parse_time

if TYPE_CHECKING:
    from dovecote.context import Context

#: v2: a box checkpoint keeps the digest of the bytes before its offset (an older index is rebuilt)
SCHEMA_VERSION = "dovecote-search-v2"
INDEX_FILE = "search.sqlite"
WARM_KEY: Kind[SearchIndex] = Kind("search")
#: An artifact's contents are indexed when it is UTF-8 text of at most this many bytes.
ARTIFACT_TEXT_MAX = 2 * 1024 * 1024
_ID_BITS = 20
_MS_MAX = (1 << (63 - _ID_BITS)) - 1

_DDL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS boxes(
    entity TEXT PRIMARY KEY, ino INTEGER NOT NULL, offset INTEGER NOT NULL, line_no INTEGER NOT NULL,
    window TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs(
    rowid INTEGER PRIMARY KEY, entity TEXT NOT NULL, id TEXT NOT NULL,
    ts TEXT NOT NULL, subject TEXT NOT NULL, sender TEXT NOT NULL, UNIQUE(entity, id));
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    subject, body, attach, ent, tokenize = 'unicode61 remove_diacritics 2');
"""


def ent_token(entity_id: str) -> str:
    """One alphanumeric token naming an entity, so the tokenizer cannot split it."""
    return "e" + hashlib.sha256(entity_id.encode()).hexdigest()[:24]


def ts_key(ts: str | None, lid: str) -> int:
    """The rowid a letter wants: its time in ms, then 20 bits of its id (newest = largest)."""
    t = parse_time(ts)
    ms = 0
    if t is not None:
        ms = min(max(int(t.timestamp() * 1000), 0), _MS_MAX)
    try:
        low = int(lid[:5], 16)
    except ValueError:
        low = 0
    return (ms << _ID_BITS) | low


def _text(data: bytes | None, limit: int) -> str:
    """``data`` as text if it is UTF-8 without NUL and within ``limit`` bytes; else ""."""
    if data is None or len(data) > limit or b"\x00" in data:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return ""


def message_texts(dc: Context, env: Envelope) -> tuple[str, str, str]:
    """(subject, body, attachments): the text values of a message, never its keys."""
    body = env.body
    if env.body_ref:
        extra = _text(artifacts.get_bytes(dc, env.body_ref), dc.roster.limits.body_hard_limit)
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
        parts.append(_text(artifacts.get_bytes(dc, a["ref"]), ARTIFACT_TEXT_MAX))
    for ref in env.artifact_refs:  # refs without an entry (foreign writers)
        if ref not in seen and ref.startswith("sha256:"):
            parts.append(_text(artifacts.get_bytes(dc, ref), ARTIFACT_TEXT_MAX))
    return env.subject, body, "\n".join(p for p in parts if p)


@dataclass
class SearchIndex:
    """The open index of one home, kept on the warm handle (``dc.warm['search']``)."""

    path: Path
    conn: sqlite3.Connection
    ino: int | None
    lock: threading.RLock = field(default_factory=threading.RLock)
    #: entity -> the checkpoint this connection last saw recorded for its box
    indexed: dict[str, Checkpoint] = field(default_factory=dict)
    #: entity -> (ledger generation, letters seen, rowids of its DONE/NACK items held in temp.term)
    terminal: dict[str, tuple[int, int, set[int]]] = field(default_factory=dict)
    #: entity -> ids this connection indexed since it last updated temp.term
    pending: dict[str, set[str]] = field(default_factory=dict)
    #: entity -> letter id -> rowid, loaded when needed, dropped when its rows change
    rowids: dict[str, dict[str, int]] = field(default_factory=dict)
    #: SQLite's ``data_version`` when this connection last looked: it moves when another
    #: connection (another process, another handle) commits to the file
    data_version: int | None = None
    #: counters for tests and benchmarks: full rebuilds, box re-indexes, letters indexed
    stats: dict[str, int] = field(default_factory=lambda: {"rebuilds": 0, "box_rebuilds": 0, "indexed": 0})

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()

    def forget(self, entity_id: str) -> None:
        """The entity's rows changed: drop what this connection derived from them."""
        self.rowids.pop(entity_id, None)
        self.pending.pop(entity_id, None)
        have = self.terminal.pop(entity_id, None)
        if have is not None:
            self.conn.executemany("DELETE FROM temp.term WHERE rowid = ?", [(r,) for r in have[2]])

    def forget_all(self) -> None:
        self.indexed.clear()
        self.rowids.clear()
        self.pending.clear()
        self.terminal.clear()
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("DELETE FROM temp.term")


class Unusable(sqlite3.DatabaseError):
    """The index file is not this version's index (another schema, a foreign file)."""


#: SQLite result codes that mean the file itself is bad: CORRUPT, NOTADB.
_BAD_FILE = frozenset({11, 26})
#: SQLite result codes that mean another connection holds the file: BUSY, LOCKED.
_BUSY = frozenset({5, 6})


def unusable(e: sqlite3.Error) -> bool:
    """Is this error the index file being bad (rebuild it) rather than busy or I/O (report it)?"""
    if isinstance(e, Unusable):
        return True
    code = getattr(e, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _BAD_FILE


def _connect(path: Path | None) -> sqlite3.Connection:
    conn = sqlite3.connect(
        str(path) if path else ":memory:", isolation_level=None, check_same_thread=False, timeout=30.0
    )
    # WAL with NORMAL sync: a commit is one append, no fsync; a power cut may lose the
    # last commits, never consistency, and a lost commit only means indexing again.
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(_DDL)
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row is None:
        conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row[0] != SCHEMA_VERSION:
        conn.close()
        raise Unusable(f"index schema {row[0]!r} is not {SCHEMA_VERSION!r}")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS term(rowid INTEGER PRIMARY KEY)")
    return conn


def discard(path: Path) -> None:
    """Remove an unusable index and its journals (a stale journal must not be replayed)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def _ino(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def open_index(dc: Context) -> SearchIndex:
    """The warm index, reopened if its file was deleted or replaced, rebuilt if unusable."""
    path = dc.layout.cache_dir() / INDEX_FILE  # never a cache/ that is a link out of the home
    idx: SearchIndex | None = dc.warm.get(WARM_KEY)
    if idx is not None and (idx.ino is None or _ino(path) == idx.ino):
        return idx
    stats = dict(idx.stats) if idx is not None else None
    if idx is not None:
        idx.close()
    fresh = not path.exists()
    if fresh:  # journals left by a deleted index belong to other bytes: never replay them
        discard(path)
    try:
        conn = _connect(path)
    except sqlite3.DatabaseError as e:
        if (getattr(e, "sqlite_errorcode", 0) or 0) & 0xFF in _BUSY:
            raise StoreError(f"the search index {path} stayed locked: {e}") from e
        if unusable(e):  # corrupt, foreign, or from another schema: it is only a cache
            discard(path)
            fresh = True
        try:
            conn = _connect(path)
        except sqlite3.Error:  # cannot be opened or made here (read-only home): search from memory
            conn = _connect(None)
    except OSError:  # no cache folder can be made: search from memory
        conn = _connect(None)
    idx = SearchIndex(path, conn, _ino(path))
    if stats is not None:
        idx.stats.update(stats)
    if fresh:
        idx.stats["rebuilds"] += 1
    dc.warm[WARM_KEY] = idx
    return idx


def _index_letters(dc: Context, idx: SearchIndex, entity_id: str, letters: list[Letter]) -> int:
    """Insert the messages among ``letters``; a letter already indexed is skipped."""
    conn = idx.conn
    ent = ent_token(entity_id)
    known = idx.rowids.get(entity_id)
    pending = idx.pending.setdefault(entity_id, set())
    n = 0
    for letter in letters:
        if letter.kind != "message":
            continue
        if conn.execute("SELECT 1 FROM docs WHERE entity = ? AND id = ?", (entity_id, letter.id)).fetchone():
            continue
        env = Envelope(letter.data())
        subject, body, attach = message_texts(dc, env)
        key = ts_key(letter.ts, letter.id)
        while conn.execute("SELECT 1 FROM docs WHERE rowid = ?", (key,)).fetchone():
            key -= 1  # same millisecond and same 20 id bits: take the next free slot below
        conn.execute(
            "INSERT INTO docs(rowid, entity, id, ts, subject, sender) VALUES (?, ?, ?, ?, ?, ?)",
            (key, entity_id, letter.id, letter.ts or "", subject, env.sender or ""),
        )
        conn.execute(
            "INSERT INTO fts(rowid, subject, body, attach, ent) VALUES (?, ?, ?, ?, ?)",
            (key, subject, body, attach, ent),
        )
        if known is not None:
            known[letter.id] = key
        pending.add(letter.id)
        n += 1
    idx.stats["indexed"] += n
    return n


_BOXES = "SELECT entity, ino, offset, line_no, window FROM boxes"


def _checkpoint(row: tuple[str, int, int, int, str]) -> Checkpoint:
    return Checkpoint(row[1], row[2], row[3], row[4])


def _drop_entity(idx: SearchIndex, entity_id: str) -> None:
    conn = idx.conn
    conn.execute("DELETE FROM fts WHERE rowid IN (SELECT rowid FROM docs WHERE entity = ?)", (entity_id,))
    conn.execute("DELETE FROM docs WHERE entity = ?", (entity_id,))
    conn.execute("DELETE FROM boxes WHERE entity = ?", (entity_id,))


def sync(dc: Context, idx: SearchIndex, entities: list[str], *, prune: bool) -> None:
    """Bring the index up to each entity ledger: only what was appended, or the box again.

    The cheap test (is the ledger where this connection last saw the index?)
    runs without a lock; the work runs in one write transaction that re-reads
    the recorded checkpoints, so two processes never index a letter twice and
    a crash leaves the previous checkpoint with the previous rows. ``prune``
    (only when ``entities`` is the whole roster) drops the rows of entities the
    roster no longer lists.
    """
    conn = idx.conn
    (version,) = conn.execute("PRAGMA data_version").fetchone()
    if version != idx.data_version:  # someone else wrote: trust the file, not our memory of it
        stored = {r[0]: _checkpoint(r) for r in conn.execute(_BOXES)}
        for e in set(idx.indexed) | set(stored):
            if stored.get(e) != idx.indexed.get(e):
                idx.forget(e)
        idx.indexed = stored
        idx.data_version = version
    todo: list[str] = []
    files = files_of(dc.store)
    for e in entities:
        addr = entity_addr(e)
        files.read(addr)
        reader = files.reader(addr)
        assert reader is not None
        if idx.indexed.get(e) != reader.checkpoint():
            todo.append(e)
    if not todo and not (prune and set(idx.indexed) - set(entities)):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        stored = {r[0]: _checkpoint(r) for r in conn.execute(_BOXES)}
        gone = set(stored) - set(entities) if prune else set()
        for e in gone:
            _drop_entity(idx, e)
            idx.forget(e)
        for e in todo:
            path = files.path(entity_addr(e))
            assert path is not None
            cp = stored.get(e)
            if cp != idx.indexed.get(e):
                idx.forget(e)  # another process (or none yet) wrote these rows: reload what we derived
            # a box recorded before its ledger existed (inode 0) simply starts from zero
            began = cp is not None and cp.ino != 0
            reader = LedgerReader.resume(path, cp) if began and cp is not None else LedgerReader(path)
            reader.bound = files.bound_of(path)  # verify reads one fixed snapshot
            new = reader.refresh()
            if began and reader.generation > 0:  # the ledger was replaced: index it again
                _drop_entity(idx, e)
                idx.forget(e)
                idx.stats["box_rebuilds"] += 1
                new = reader.letters
            _index_letters(dc, idx, e, new)
            now = reader.checkpoint()
            conn.execute(
                "INSERT OR REPLACE INTO boxes(entity, ino, offset, line_no, window) VALUES (?, ?, ?, ?, ?)",
                (e, now.ino, now.offset, now.line_no, now.window),
            )
            stored[e] = now
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        idx.forget_all()
        raise
    for e in gone:
        idx.indexed.pop(e, None)
    for e in todo:
        idx.indexed[e] = stored[e]

"""The PostgreSQL store: every box's ledger as rows of one letters table.

It keeps the promises ``tests/test_store_contract.py`` states for every store,
across processes and hosts that share one database:

* A row holds a line's exact bytes; its id is computed from them (``letters``),
  on append and again on read, as the file store does. A box's rows carry a
  per-box sequence (1, 2, … in append order, every line counted: a blank or
  malformed line has a row too, never a letter), which is the cursor position
  and a defect's line number. Rows are never updated or deleted.
* ``guarded(box)`` is one transaction under ``pg_advisory_xact_lock`` of the
  box: the guard's letters are read inside it, so a compare-and-swap decided
  from them holds against every other host, and what it appends commits (with
  ``synchronous_commit`` on, the WAL is flushed) before the block ends.
  ``append`` is a guarded batch: one transaction, one ``INSERT … ON CONFLICT
  DO NOTHING RETURNING id``, which reports which lines were new (a batch of
  ``COPY_FROM`` new lines or more is a binary ``COPY``: see ``_copy``).
* A box's generation is a row of ``dovecote_boxes``; ``replace`` (a restore)
  writes the new lines under the next generation and readers start over. The
  old generation's rows stay.
* Marks carry the database's store id (``dovecote_meta``, made by the first
  migration) as their origin and the generation as ``ident``, so a fold cached
  by one process is resumed by another on the same database and by nobody else.

A handle keeps each box's letters warm (``_Box``) and reads only the rows after
what it holds; ``for_roster`` shares them. The schema is ``store_pgschema``'s.
"""

from __future__ import annotations

import hashlib
import os
import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

import psycopg
from msgspec.structs import force_setattr
from psycopg_pool import ConnectionPool

from dovecote import store_pgschema
from dovecote.errors import StoreError
from dovecote.ledger import Defect
from dovecote.letters import Letter, decode_line, decode_lines_fast, letter_id
from dovecote.osutil import collector_paused
from dovecote.roster import Roster
from dovecote.store import BoxRead, Cursor, Mark, Probe, Tail, Where, box_key, check_writable, keyed_location, reachable
from dovecote.store_pgnotify import NOTIFY, Listener
from dovecote.store_url import shown

Conn = psycopg.Connection[tuple[object, ...]]

_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || ':' || %s, 0))"
_GENERATION = "SELECT id, generation FROM dovecote_boxes WHERE box = %s"
_ROWS = "SELECT seq, line FROM dovecote_letters WHERE box = %s AND generation = %s AND seq > %s ORDER BY seq"
_ROWS_BY_KEY = """SELECT l.seq, l.line FROM dovecote_letters l JOIN dovecote_boxes b ON l.box = b.id
WHERE b.box = %s AND l.generation = %s AND l.seq > %s ORDER BY l.seq"""
_ENSURE = "INSERT INTO dovecote_boxes (box) VALUES (%s) ON CONFLICT DO NOTHING"
_INSERT = """INSERT INTO dovecote_letters (box, generation, seq, id, line)
SELECT %s, %s, s, i, l FROM unnest(%b::bigint[], %b::text[], %b::bytea[]) AS t(s, i, l)
ON CONFLICT DO NOTHING RETURNING id"""
_COPY = "COPY dovecote_letters (box, generation, seq, id, line) FROM STDIN (FORMAT BINARY)"
#: From how many new lines an append copies rather than inserts.
COPY_FROM = 256
_STAMP = """SELECT b.generation, coalesce((SELECT max(seq) FROM dovecote_letters l
WHERE l.box = b.id AND l.generation = b.generation), 0), b.id FROM dovecote_boxes b WHERE b.box = %s"""


def connect(url: str) -> Conn:
    """One plain connection (migrations, the notifier's listener); refusals of libpq become StoreErrors."""
    try:
        return psycopg.connect(url, connect_timeout=10)
    except psycopg.Error as e:
        raise StoreError(f"cannot reach PostgreSQL at {shown(url)}: {e}") from e


@dataclass(eq=False)
class _Box:
    """What this process holds of one box: its letters up to row ``seq`` of ``generation``."""

    generation: int = -1
    number: int = 0  # its row in dovecote_boxes, which the letter rows carry
    seq: int = 0
    exists: bool = False
    letters: list[Letter] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)  # each letter's row, for cursors between letters
    index: dict[str, Letter] = field(default_factory=dict)
    others: set[str] = field(default_factory=set)  # ids of rows that are no letter (blank, malformed)
    defects: list[Defect] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def restart(self, generation: int) -> None:
        """Hold nothing of the box: new containers, so what readers were handed stays as it was."""
        self.generation, self.seq, self.letters, self.seqs = generation, 0, [], []
        self.index, self.others, self.defects = {}, set(), []


def _decode(
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
        sha = hashlib.sha256
        known: Sequence[str | None] = ids or [None] * len(lines)
        for (seq, _), line, letter, lid in zip(rows, lines, fast, known, strict=True):
            force_setattr(letter, "id", lid or sha(line).hexdigest()[:12])
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


def _held(box: _Box, after: Cursor | None) -> BoxRead:
    """The box's letters after ``after``; a cursor this store did not hand out reads everything ``fresh``."""
    resume = after is not None and after.generation == box.generation and 0 <= after.position <= box.seq
    start = bisect_right(box.seqs, after.position) if after is not None and resume else 0
    return BoxRead(box.letters[start:], box.index, list(box.defects), None, box.exists, box.generation,
                   Cursor(box.generation, box.seq), not resume)


class PostgresGuard:
    """A box held under its advisory lock, inside one transaction (see ``store.Guard``)."""

    def __init__(self, store: PostgresStore, conn: Conn, key: str, box: _Box) -> None:
        self._store, self._conn, self._key, self._box = store, conn, key, box

    @property
    def letters(self) -> list[Letter]:
        return self._box.letters

    @property
    def index(self) -> dict[str, Letter]:
        return self._box.index

    @property
    def cursor(self) -> Cursor:
        return Cursor(self._box.generation, self._box.seq)

    def read(self, after: Cursor | None = None) -> BoxRead:
        return _held(self._box, after)

    def append(self, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        return self._store._insert(self._conn, self._key, self._box, lines)

    def tail(self, mark: Mark | None = None) -> Tail:
        return self._store._tail(self._conn, self._key, mark)


@dataclass(eq=False)
class _Link:
    """A store's pool, the process that opened it, its size and which connection each thread holds:
    one for a store and its copies."""

    pool: ConnectionPool[Conn]
    pid: int
    size: int
    local: threading.local = field(default_factory=threading.local)  # the connection a thread holds


#: Pools and listeners a forked child inherited (the parent's sessions): held, never used or closed.
_INHERITED: list[tuple[ConnectionPool[Conn], list[Listener]]] = []


class PostgresStore:
    """Ledgers as rows in PostgreSQL, addressed through a roster like the file store."""

    def __init__(self, url: str, roster: Roster | None = None, *, pool_size: int = 8) -> None:
        self.url = url
        self.roster = roster or Roster()
        self._boxes: dict[str, _Box] = {}
        self._made = threading.Lock()
        self._listening: list[Listener] = []  # started by the first stamp; shared with for_roster copies
        self._link = _Link(self._open_pool(pool_size), os.getpid(), pool_size)  # shared with copies too
        try:
            with self._conn() as conn:
                self.origin = f"postgresql:{store_pgschema.check(conn)}"
        except BaseException:
            self._link.pool.close()
            raise

    def _open_pool(self, size: int) -> ConnectionPool[Conn]:
        try:
            return ConnectionPool(
                self.url, min_size=1, max_size=size, open=True, timeout=15,
                check=ConnectionPool.check_connection,  # a restarted server: the next checkout reconnects
                kwargs={"connect_timeout": 10}, name="dovecote",
            )
        except psycopg.Error as e:
            raise StoreError(f"cannot reach PostgreSQL at {shown(self.url)}: {e}") from e

    def close(self) -> None:
        """Close the pool and the listener (every handle sharing them: ``for_roster`` copies do)."""
        for lst in self._listening:
            lst.close()
        self._link.pool.close()

    def for_roster(self, roster: Roster) -> PostgresStore:
        """The same database and warm boxes, addressed through ``roster``."""
        other = PostgresStore.__new__(PostgresStore)
        other.url, other.roster, other._boxes, other._made = self.url, roster, self._boxes, self._made
        other._link, other.origin, other._listening = self._link, self.origin, self._listening
        return other

    def _forked(self) -> None:
        """In a child of a fork (``serve --workers N`` forks after opening the home): the pool's and
        the listener's connections are the parent's sockets, and two processes speaking on one
        session corrupt it (a hang, savepoint errors). The child leaves them to the parent, neither
        used nor closed (closing would end the parent's session), and opens its own."""
        with self._made:
            link = self._link
            if link.pid == os.getpid():
                return
            _INHERITED.append((link.pool, list(self._listening)))  # kept: collecting them would close them
            self._listening.clear()
            link.pool, link.pid, link.local = self._open_pool(link.size), os.getpid(), threading.local()

    @contextmanager
    def _conn(self) -> Iterator[Conn]:
        """A pooled connection; a failure of the server or the network is a ``StoreError``.

        A thread that already holds one (inside a guarded section: ``send`` holds the recipient's
        and the sender's boxes at once) is given the same session again, its guards nesting as
        savepoints of one transaction: a thread waiting for a second connection of a pool that its
        peers all hold, each waiting for theirs, would hang every writer of the process."""
        if self._link.pid != os.getpid():
            self._forked()
        local = self._link.local
        held: Conn | None = getattr(local, "conn", None)
        try:
            if held is not None:
                yield held
                return
            with self._link.pool.connection() as conn:
                local.conn = conn
                try:
                    yield conn
                finally:
                    local.conn = None
        except psycopg.Error as e:
            raise StoreError(f"PostgreSQL at {shown(self.url)}: {e}") from e

    def key(self, where: Where) -> str | None:
        return box_key(self.roster, where)

    def location(self, where: Where) -> str:
        return keyed_location("postgresql", self.key(where), where)

    def reachable(self, where: Where) -> bool:
        return reachable(self.roster, where)

    def entity_names(self) -> list[str]:
        """The entity boxes the database holds (``copy`` moves those the roster no longer names too)."""
        with self._conn() as conn:
            rows = conn.execute("SELECT box FROM dovecote_boxes WHERE box LIKE 'entity:%' ORDER BY box").fetchall()
        return [str(r[0]).removeprefix("entity:") for r in rows]

    def _box(self, key: str) -> _Box:
        box = self._boxes.get(key)
        if box is None:
            with self._made:
                box = self._boxes.setdefault(key, _Box())
        return box

    def _refresh(
        self, conn: Conn, key: str, box: _Box, *, first: Sequence[tuple[str, tuple[object, ...]]] = ()
    ) -> None:
        """Bring ``box`` up to what the database holds (the caller holds ``box.lock``).

        One round trip when the box's generation is the one held: ``first`` (a guard's lock),
        the generation and the rows after what is held go in one pipeline. The rows are read
        for the generation held, so a replace landing between the two statements is seen by
        the next read, never mixed into this one."""
        cur = conn.cursor(binary=True)
        with conn.pipeline():
            for sql, params in first:
                conn.execute(sql, params)
            gen = conn.execute(_GENERATION, (key,))
            cur.execute(_ROWS_BY_KEY, (key, box.generation, box.seq))
        row, held = gen.fetchone(), cur.fetchall()
        cur.close()
        if row is None:
            box.exists = False
            return
        box.number, generation = cast("tuple[int, int]", row)
        box.exists = True
        if generation == box.generation:
            rows = held
        else:
            box.restart(generation)
            with conn.cursor(binary=True) as again:
                rows = again.execute(_ROWS, (box.number, generation, 0)).fetchall()
        with collector_paused():  # many new objects, no cycles among them
            self._absorb(key, box, cast("list[tuple[int, bytes]]", rows))  # int8 and bytea, read binary

    def _absorb(
        self, key: str, box: _Box, rows: Sequence[tuple[int, bytes]], ids: Sequence[str] | None = None
    ) -> None:
        if not rows:
            return
        got, defects, others = _decode(f"postgresql:{key}", rows, ids)
        for seq, letter in got:
            box.letters.append(letter)
            box.seqs.append(seq)
            box.index[letter.id] = letter
        box.defects.extend(defects)
        box.others.update(others)
        box.seq = rows[-1][0]

    def read(self, where: Where, after: Cursor | None = None) -> BoxRead:
        """The letters after ``after`` (a row of this generation), or all of them, ``fresh``."""
        key = self.key(where)
        if key is None:
            return BoxRead([], {}, [], None, False, 0, Cursor(0, 0))
        box = self._box(key)
        with self._conn() as conn, box.lock:  # the session first: a box is held only by a thread that has one
            self._refresh(conn, key, box)
            if not box.exists:
                return BoxRead([], {}, [], None, False, 0, Cursor(0, 0))
            return _held(box, after)

    def _listener(self) -> Listener:
        if self._link.pid != os.getpid():
            self._forked()
        with self._made:
            if not self._listening:
                self._listening.append(Listener(self.url))
            return self._listening[0]

    def stamp(self, where: Where) -> tuple[int, int]:
        """A mark that moves whenever the box gains a row: while LISTENing, the count of its
        notifications (``store_pgnotify``: no query); else (generation, last row) by one indexed
        query, (0, -1) when there is no box. The two never compare equal (epochs start at 1)."""
        key = self.key(where)
        if key is None:
            return (0, -1)
        heard = self._listener().stamp(key)
        if heard is not None:
            return (-heard[0], heard[1])
        with self._conn() as conn:
            row = conn.execute(_STAMP, (key,)).fetchone()
        return (0, -1) if row is None else (int(str(row[0])), int(str(row[1])))

    def mark(self, where: Where) -> Mark:
        """The mark where this handle's warm read of the box stands."""
        key = self.key(where)
        box = self._boxes.get(key) if key else None
        if box is None:
            return Mark(self.origin)
        with box.lock:
            return Mark(self.origin, box.seq, box.seq, box.generation)

    def probe(self, where: Where, mark: Mark) -> Probe | None:
        """None: only a file has a size a face can stat."""
        return None

    def tail(self, where: Where, mark: Mark | None = None) -> Tail:
        key = self.key(where)
        if key is None:
            return Tail([], [], None, Mark(self.origin), True, False)
        with self._conn() as conn:
            return self._tail(conn, key, mark)

    def _tail(self, conn: Conn, key: str, mark: Mark | None) -> Tail:
        """The rows after ``mark``, read privately (the warm box is left alone); see ``store.Tail``."""
        row = conn.execute(_STAMP, (key,)).fetchone()
        if row is None:
            return Tail([], [], None, Mark(self.origin), True, False)
        generation, last, number = cast("tuple[int, int, int]", row)
        ok = mark is not None and mark.origin == self.origin and mark.ident == generation
        ok = ok and mark is not None and 0 <= mark.position <= last
        start = mark.position if ok and mark is not None else 0
        with conn.cursor(binary=True) as cur:
            rows = cur.execute(_ROWS, (number, generation, start)).fetchall()
        got, defects, _ = _decode(f"postgresql:{key}", cast("list[tuple[int, bytes]]", rows))
        end = int(str(rows[-1][0])) if rows else start
        return Tail([x for _, x in got], defects, None, Mark(self.origin, end, end, generation), not ok)

    def append(self, where: Where, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        with self.guarded(where) as guard:
            return guard.append(lines)

    @contextmanager
    def guarded(self, where: Where) -> Iterator[PostgresGuard]:
        """One transaction under the box's advisory lock; what the block appends is committed when it
        ends. A guard inside another of the same thread is a savepoint of the outer one's transaction
        (see ``_conn``): its appends commit when the outermost guard ends, and if that one fails every
        box the transaction wrote starts over, none keeping rows that were rolled back."""
        check_writable(self.roster, where)
        key = self.key(where)
        assert key is not None
        box = self._box(key)
        with self._conn() as conn, box.lock:  # the session first: a box is held only by a thread that has one
            local = self._link.local
            outer = getattr(local, "touched", None) is None
            if outer:
                local.touched = []
            local.touched.append(box)
            try:
                with conn.transaction():
                    self._refresh(conn, key, box, first=((_LOCK, (key,)), (_ENSURE, (key,))))
                    before = box.seq
                    yield PostgresGuard(self, conn, key, box)
            except BaseException:
                for b in local.touched if outer else [box]:  # rows that were rolled back: read again
                    with b.lock:
                        b.restart(-1)
                raise
            finally:
                if outer:
                    local.touched = None
        if box.seq != before and self._listening:
            self._listening[0].moved(key)

    def _insert(self, conn: Conn, key: str, box: _Box, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        """Append the lines whose ids are new to the box (the caller holds its lock, in a transaction)."""
        if any(b"\n" in line for line in lines):
            raise ValueError("a ledger line cannot contain a newline")
        out: list[tuple[str, bool]] = []
        fresh: dict[str, tuple[int, bytes]] = {}
        for line in lines:
            lid = letter_id(line)
            if lid in box.index or lid in box.others or lid in fresh:
                out.append((lid, False))
                continue
            fresh[lid] = (box.seq + len(fresh) + 1, line)
            out.append((lid, True))
        if not fresh:
            return out
        rows = list(fresh.values())
        if len(rows) >= COPY_FROM:
            with collector_paused():
                new = self._copy(conn, box, fresh)
            conn.execute(NOTIFY, (key,))
        else:
            params = (box.number, box.generation, [s for s, _ in rows], list(fresh), [b for _, b in rows])
            with conn.pipeline():  # one round trip: the insert and its notice (a notice too many is harmless)
                got = conn.execute(_INSERT, params)  # the arrays go binary (%b): the bytes are never escaped
                conn.execute(NOTIFY, (key,))
            new = {str(r[0]) for r in got.fetchall()}
        if len(new) != len(fresh):  # a row came from a writer that skipped the lock: reread under it
            box.restart(-1)
            self._refresh(conn, key, box)
            return [(lid, ok and lid in new) for lid, ok in out]
        with collector_paused():
            self._absorb(key, box, rows, list(fresh))
        return out

    @staticmethod
    def _copy(conn: Conn, box: _Box, fresh: dict[str, tuple[int, bytes]]) -> set[str]:
        """A big batch by ``COPY`` (several times an INSERT's rate). Every line was found new under the
        lock; a row that is there anyway (a writer that skipped the lock) violates the unique index
        and the whole transaction fails, nothing written: it is never silently kept twice."""
        with conn.cursor().copy(_COPY) as cp:
            cp.set_types(["int4", "int4", "int8", "text", "bytea"])
            for lid, (seq, line) in fresh.items():
                cp.write_row((box.number, box.generation, seq, lid, line))
        return set(fresh)

    def replace(self, where: Where, lines: Sequence[bytes]) -> None:
        """Put other lines in the box's place (a restore) under the next generation: readers start over."""
        with self.guarded(where) as guard:
            key = self.key(where)
            guard._conn.execute("UPDATE dovecote_boxes SET generation = generation + 1 WHERE box = %s", (key,))
            assert key is not None
            self._refresh(guard._conn, key, guard._box)
            guard.append(lines)


_SHARED: dict[str, PostgresStore] = {}
_SHARED_LOCK = threading.Lock()


def shared(url: str) -> PostgresStore:
    """This process's store on ``url``: one pool and one set of warm boxes, whatever the number of handles."""
    with _SHARED_LOCK:
        st = _SHARED.get(url)
        if st is None:
            st = _SHARED[url] = PostgresStore(url)
        return st


def release(url: str) -> None:
    """Close this process's pool on ``url`` (a test dropping its schema; a server shutting down)."""
    with _SHARED_LOCK:
        st = _SHARED.pop(url, None)
    if st is not None:
        st.close()

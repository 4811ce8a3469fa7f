"""The PostgreSQL store: every box's ledger as rows of one letters table.

It keeps the promises ``tests/store/test_store_contract.py`` states for every store,
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
  ``append`` is a guarded batch. How few round trips a section takes (its
  lock, reads and inserts pipelined, nested sections joining one transaction)
  is ``store_pgwrite``'s.
* A box's generation is a row of ``dovecote_boxes``; ``replace`` (a restore)
  writes the new lines under the next generation and readers start over. The
  old generation's rows stay.
* Marks carry the database's store id (``dovecote_meta``, made by the first
  migration) as their origin and the generation as ``ident``, so a fold cached
  by one process is resumed by another on the same database and by nobody else.

A handle keeps each box's letters warm (``store_pgbox.Box``) and reads only the
rows after what it holds; ``for_roster`` shares them. The schema is
``store_pgschema``'s.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import ClassVar, cast

from dovecote.errors import StoreError
from dovecote.roster.config import Roster
from dovecote.roster.store_url import shown
from dovecote.store.capability import Capability
from dovecote.store.core import (
    CALLS_AT_ONCE,
    BoxRead,
    Cursor,
    Mark,
    Probe,
    Tail,
    Where,
    box_key,
    check_writable,
    keyed_location,
    reachable,
)
from dovecote.store.postgres import schema as store_pgschema
from dovecote.store.postgres.box import ROWS, Box, Conn, decode, held, refresh
from dovecote.store.postgres.driver import ConnectionPool, pq, psycopg
from dovecote.store.postgres.notify import Listener
from dovecote.store.postgres.write import PostgresGuard, Session, Transaction

_STAMP = """SELECT b.generation, coalesce((SELECT max(seq) FROM dovecote_letters l
WHERE l.box = b.id AND l.generation = b.generation), 0), b.id FROM dovecote_boxes b WHERE b.box = %s"""


def connect(url: str) -> Conn:
    """One plain connection (migrations, the notifier's listener); refusals of libpq become StoreErrors."""
    try:
        return psycopg.connect(url, connect_timeout=10)
    except psycopg.Error as e:
        raise StoreError(f"cannot reach PostgreSQL at {shown(url)}: {e}") from e


def alive(conn: Conn) -> None:
    """The pool's check of a connection it hands out, without a round trip: an idle session the
    server ended (a restart, ``pg_terminate_backend``) has its goodbye or an EOF waiting on the
    socket. Raises for such a one, so the pool discards it and hands out another. One the
    network lost silently fails on use instead, and is discarded when it is returned broken."""
    if select.select([conn.fileno()], [], [], 0)[0]:
        conn.pgconn.consume_input()
        if conn.pgconn.status != pq.ConnStatus.OK or conn.broken:
            raise psycopg.OperationalError("the server ended this session")


@dataclass(eq=False)
class _Link:
    """A store's pool, the process that opened it, its size and which session each thread holds:
    one for a store and its copies."""

    pool: ConnectionPool[Conn]
    pid: int
    size: int
    local: threading.local = field(default_factory=threading.local)  # the session a thread holds


#: Pools and listeners a forked child inherited (the parent's sessions): held, never used or closed.
_INHERITED: list[tuple[ConnectionPool[Conn], list[Listener]]] = []


class PostgresStore:
    """Ledgers as rows in PostgreSQL, addressed through a roster like the file store."""

    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.database_rows})

    #: A thread's nested guarded sections are one transaction (``store.commits_together``).
    sections_commit_together = True

    def __init__(self, url: str, roster: Roster | None = None, *, pool_size: int = CALLS_AT_ONCE) -> None:
        self.url = url
        self.roster = roster or Roster()
        self._boxes: dict[str, Box] = {}
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
                check=alive,  # a restarted server: the next checkout reconnects (no round trip to know)
                kwargs={"connect_timeout": 10, "autocommit": True}, name="dovecote",
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
    def _session(self) -> Iterator[Session]:
        """The thread's session on a pooled connection; a failure of the server or the network is a
        ``StoreError``.

        A thread that already holds one (inside a guarded section: ``send`` holds the recipient's
        and the sender's boxes at once) is given the same session again, its guards joining one
        transaction: a thread waiting for a second connection of a pool that its peers all hold,
        each waiting for theirs, would hang every writer of the process. Connections run in
        autocommit; a guarded section sends its own ``BEGIN`` (``store_pgwrite``)."""
        if self._link.pid != os.getpid():
            self._forked()
        local = self._link.local
        got: Session | None = getattr(local, "session", None)
        try:
            if got is not None:
                yield got
                return
            pool = self._link.pool

            def reconnect(broken: Conn) -> Conn:
                """A live session for one found broken. A restart ends every pooled session at once, and
                one whose goodbye is waiting can pass the pool's look at its socket: so the one handed out
                is proved by a round trip (paid only here), each dead one discarded, until one answers."""
                pool.putconn(broken)  # a broken connection is discarded, not pooled
                for _ in range(self._link.size):
                    conn = pool.getconn()
                    try:
                        conn.execute("SELECT 1")
                        return conn
                    except psycopg.OperationalError:
                        pool.putconn(conn)
                return pool.getconn()  # every pooled one was dead: the pool connects anew

            session = local.session = Session(pool.getconn(), reconnect)
            try:
                yield session
            finally:
                local.session = None
                pool.putconn(session.conn)
        except psycopg.Error as e:
            raise StoreError(f"PostgreSQL at {shown(self.url)}: {e}") from e

    @contextmanager
    def _conn(self) -> Iterator[Conn]:
        """The thread's connection (see ``_session``), any section's queued locks taken first."""
        with self._session() as session:
            if session.tx is not None:
                session.tx.settle()
            yield session.conn

    def key(self, where: Where) -> str | None:
        return box_key(self.roster, where)

    def location(self, where: Where) -> str:
        """The database's URL as it may be printed (``store_url.shown``) and the box: ``…/test#spool``."""
        key = self.key(where)
        return f"{shown(self.url)}#{key}" if key else keyed_location("postgresql", key, where)

    def reachable(self, where: Where) -> bool:
        return reachable(self.roster, where)

    def entity_names(self) -> list[str]:
        """The entity boxes the database holds (``copy`` moves those the roster no longer names too)."""
        with self._conn() as conn:
            rows = conn.execute("SELECT box FROM dovecote_boxes WHERE box LIKE 'entity:%' ORDER BY box").fetchall()
        return [str(r[0]).removeprefix("entity:") for r in rows]

    def rows(self) -> Iterator[tuple[str, int, int, str, bytes]]:
        """Every row of every box and generation, as stored: (box, generation, seq, id, line), in
        that order; read through a server-side cursor, so a large database is never held at once
        (``verify`` checks each row's id against its bytes)."""
        with self._conn() as conn, conn.transaction(), conn.cursor("dovecote_rows", binary=True) as cur:
            cur.itersize = 5000
            cur.execute("SELECT b.box, l.generation, l.seq, l.id, l.line FROM dovecote_letters l "
                        "JOIN dovecote_boxes b ON l.box = b.id ORDER BY l.box, l.generation, l.seq")
            for box, generation, seq, lid, line in cur:
                yield str(box), int(str(generation)), int(str(seq)), str(lid), bytes(cast("bytes", line))

    def _box(self, key: str) -> Box:
        box = self._boxes.get(key)
        if box is None:
            with self._made:
                box = self._boxes.setdefault(key, Box())
        return box

    def read(self, where: Where, after: Cursor | None = None) -> BoxRead:
        """The letters after ``after`` (a row of this generation), or all of them, ``fresh``."""
        key = self.key(where)
        if key is None:
            return BoxRead([], {}, [], None, False, 0, Cursor(0, 0))
        box = self._box(key)
        with self._session() as session, box.lock:  # the session first: a box is held only by a thread that has one
            if session.tx is not None:
                session.tx.settle()
            session.first_trip(lambda conn: refresh(conn, [(key, box)]), begun=session.tx is not None)
            if not box.exists:
                return BoxRead([], {}, [], None, False, 0, Cursor(0, 0))
            return held(box, after)

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
            rows = cur.execute(ROWS, (number, generation, start)).fetchall()
        got, defects, _ = decode(f"postgresql:{key}", cast("list[tuple[int, bytes]]", rows))
        end = int(str(rows[-1][0])) if rows else start
        return Tail([x for _, x in got], defects, None, Mark(self.origin, end, end, generation), not ok)

    def append(self, where: Where, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        with self.guarded(where) as guard:
            return guard.append(lines)

    @contextmanager
    def guarded(self, where: Where) -> Iterator[PostgresGuard]:
        """One transaction under the box's advisory lock; what the block appends is committed when it
        ends. A guard inside another of the same thread joins the outer one's transaction (see
        ``_session`` and ``store_pgwrite``): its appends commit when the outermost guard ends, and
        if that one fails every box the transaction wrote starts over."""
        check_writable(self.roster, where)
        key = self.key(where)
        assert key is not None
        box = self._box(key)
        with self._session() as session, box.lock:  # the session first: a box is held only by a thread that has one
            outer = session.tx is None
            tx = session.tx = Transaction(session) if session.tx is None else session.tx
            tx.hold(key, box)
            if not outer:
                yield PostgresGuard(tx, key, box, self._tail)
                return
            try:
                yield PostgresGuard(tx, key, box, self._tail)
                tx.commit()
            except BaseException:
                tx.rollback()
                raise
            finally:
                session.tx = None
            if tx.moved and self._listening:
                for k in tx.moved:
                    self._listening[0].moved(k)

    def replace(self, where: Where, lines: Sequence[bytes]) -> None:
        """Put other lines in the box's place (a restore) under the next generation: readers start over."""
        with self.guarded(where) as guard, self._session() as session:
            key = self.key(where)
            assert key is not None and session.tx is not None
            session.tx.settle()
            session.tx.flush()  # what is staged goes in under the old generation
            session.conn.execute("UPDATE dovecote_boxes SET generation = generation + 1 WHERE box = %s", (key,))
            refresh(session.conn, [(key, self._box(key))])
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

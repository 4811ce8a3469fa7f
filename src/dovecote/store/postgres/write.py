"""The PostgreSQL store's guarded sections: a transaction in as few round trips as the rules allow.

Law: what a section appends is committed (``synchronous_commit`` on: the WAL
flushed) before the outermost section ends, or the section fails and every box
it wrote starts over. Within that, the server is waited on as little as
possible, because a send spent most of its time waiting (about 13 round trips
a library send before this module, 2 after):

* A section's lock is taken lazily: entering ``guarded`` queues the box, and the
  first use of any held box sends ``BEGIN`` and one call of the schema's
  ``dovecote_hold``, in one pipeline: every queued box's advisory lock (in the
  order entered, so two writers over the same boxes take them in the same
  order), then the rows of each after what is held (one statement for all, not
  two a box: each costs the client and the server alike).
* A guard nested in another of the same thread joins its transaction (no
  savepoint: an inner section that fails keeps what it appended, as a file's
  section does, and the outermost section's commit or rollback decides for
  all). A box already held by the transaction is not locked or read again.
* Appends are decided under the lock from the warm box (an id the box holds is
  not new), staged, and inserted with the commit in one pipeline: one
  statement inserting the rows of every box written and notifying each, then
  ``COMMIT`` (each statement costs the client and the server alike). The insert
  has no ``ON CONFLICT``: a row that is there anyway (a writer that skipped the
  lock) fails the whole transaction, so nothing is acknowledged that was not
  written. A big batch is one binary ``COPY``, sent while its lines are sifted
  (``store_pgcopy``; a COPY cannot be pipelined).
"""

from __future__ import annotations

import contextlib
import functools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from dovecote.model.letters import Letter, letter_ids
from dovecote.store.core import BoxRead, Cursor, Mark, Tail
from dovecote.store.postgres.box import SCALARS, Box, Conn, held, refresh
from dovecote.store.postgres.copy import CHUNK, Batch
from dovecote.store.postgres.driver import pq, psycopg
from dovecote.store.postgres.notify import CHANNEL, NOTIFY
from dovecote.util.osutil import collector_paused

_ROWS = "SELECT * FROM unnest(%b::int4[], %b::int4[], %b::int8[], %b::text[], %b::bytea[])"
_INSERT = f"INSERT INTO dovecote_letters (box, generation, seq, id, line) {_ROWS}"


def _with_notices(rows: str, keys: str) -> str:
    """The staged ``rows`` and every moved box's notice (``keys``, a source of one column ``k``) as
    one statement: a data-modifying CTE runs in full whether or not it is referenced, and both
    take effect at the commit, or neither does."""
    return (f"WITH ins AS (INSERT INTO dovecote_letters (box, generation, seq, id, line) {rows})\n"
            f"SELECT pg_notify('{CHANNEL}', current_schema() || ':' || k) FROM {keys}")


#: The rows and the keys as arrays (any number of them).
_INSERT_NOTIFY = _with_notices(_ROWS, "unnest(%b::text[]) k")


@functools.cache
def _insert_notify(rows: int, boxes: int) -> str:
    """``_INSERT_NOTIFY`` for ``rows`` rows and ``boxes`` notices as scalar parameters (one
    statement text per shape, each prepared by psycopg once it recurs)."""
    values = ", ".join(["(%s::int4, %s::int4, %s::int8, %s::text, %b::bytea)"] * rows)
    keys = ", ".join(["(%s::text)"] * boxes)
    return _with_notices(f"VALUES {values}", f"(VALUES {keys}) v(k)")
_HAS_LF = operator.methodcaller("__contains__", b"\n")

Row = tuple[int, int, int, str, bytes]  # box number, generation, seq, id, line


@dataclass(eq=False)
class Session:
    """A thread's pooled connection and the transaction open on it, if any.

    ``reconnect`` swaps a connection found broken for a new one: only before a
    transaction has begun, so nothing of it was lost with the old one."""

    conn: Conn
    reconnect: Callable[[Conn], Conn]
    tx: Transaction | None = None

    def first_trip(self, call: Callable[[Conn], object], *, begun: bool) -> None:
        """``call`` on the connection; one found broken (a restarted server) before anything was
        begun on it is replaced and ``call`` sent once more: nothing of it was lost with the old one."""
        try:
            call(self.conn)
        except psycopg.OperationalError:
            if begun or not self.conn.broken:
                raise
            self.conn = self.reconnect(self.conn)
            call(self.conn)


@dataclass(eq=False)
class Transaction:
    """One outermost guarded section and every section nested in it (see the module docstring)."""

    session: Session
    queued: list[tuple[str, Box]] = field(default_factory=list)  # to lock and read at the next use
    locked: set[str] = field(default_factory=set)
    written: list[Box] = field(default_factory=list)
    staged: list[Row] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)  # boxes that gained rows: notified at the commit
    begun: bool = False

    def hold(self, key: str, box: Box) -> None:
        if key not in self.locked and all(k != key for k, _ in self.queued):
            self.queued.append((key, box))

    def settle(self) -> None:
        """Send ``BEGIN`` (once), the queued locks and the queued boxes' reads, in one round trip.
        A connection found broken by the first of them is replaced and the round trip sent again."""
        if not self.queued:
            return
        queued, begin = self.queued, not self.begun
        self.session.first_trip(lambda conn: refresh(conn, queued, write=True, begin=begin), begun=self.begun)
        self.begun = True
        self.locked.update(k for k, _ in self.queued)
        self.queued.clear()

    def stage(self, key: str, box: Box, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        """Append the lines whose ids are new to the box (its lock held: settled). Each id is
        computed once, here, a slice at a time; a batch of many new rows is sent as the slices
        are sifted (``store_pgcopy``), the box absorbing the new letters with their ids."""
        if any(map(_HAS_LF, lines)):
            raise ValueError("a ledger line cannot contain a newline")
        out: list[tuple[str, bool]] = []

        def opening() -> None:
            self.flush()
            self.written.append(box)

        with collector_paused(), Batch(self.session.conn, key, box, opening) as batch:  # many objects, no cycle
            held_ids, others, unread = box.index, box.others, box.unread  # no decoding needed
            seen: set[str] = set()
            for start in range(0, len(lines), CHUNK):
                part, fresh = lines[start:start + CHUNK], []
                for lid, line in zip(letter_ids(part), part, strict=True):
                    new = lid not in held_ids and lid not in others and lid not in unread and lid not in seen
                    if new:
                        seen.add(lid)
                        fresh.append((lid, line))
                    out.append((lid, new))
                batch.feed(fresh)
            rest = batch.rest()
            if rest:  # fewer than COPY_FROM: inserted with the commit
                self.written.append(box)
                seqs = range(box.seq + 1, box.seq + 1 + len(rest))
                self.staged.extend((box.number, box.generation, seq, lid, line)
                                   for seq, (lid, line) in zip(seqs, rest, strict=True))
                box.absorb(key, [(seq, line) for seq, (_, line) in zip(seqs, rest, strict=True)], [x for x, _ in rest])
        if (rest or batch.copied) and key not in self.moved:
            self.moved.append(key)
        return out

    def _insert(self, conn: Conn) -> None:
        if self.staged:
            cols = list(zip(*self.staged, strict=True))
            conn.execute(_INSERT, [list(c) for c in cols])  # the arrays go binary (%b): bytes never escaped
            self.staged = []

    def flush(self) -> None:
        """Insert what is staged now (a private read of the database follows)."""
        if self.staged:
            self._insert(self.session.conn)

    def commit(self) -> None:
        """The staged rows, their notices and ``COMMIT``, in one round trip."""
        if not self.begun:
            if not self.queued:
                return  # no box was used: nothing was sent
            self.settle()
        conn = self.session.conn
        with conn.pipeline():
            if self.staged and len(self.staged) <= SCALARS and len(self.moved) <= SCALARS:  # a send's few rows
                conn.execute(_insert_notify(len(self.staged), len(self.moved)),
                             [x for row in self.staged for x in row] + self.moved)
                self.staged = []
            elif self.staged:  # the rows and the notices in one statement
                cols = [list(c) for c in zip(*self.staged, strict=True)]
                conn.execute(_INSERT_NOTIFY, [*cols, list(self.moved)])
                self.staged = []
            else:  # a COPY wrote the rows
                for key in self.moved:
                    conn.execute(NOTIFY, (key,))
            conn.execute("COMMIT")
        if conn.pgconn.transaction_status != pq.TransactionStatus.IDLE:
            raise psycopg.OperationalError("the transaction did not commit")

    def rollback(self) -> None:
        """End the transaction unwritten; every box it wrote reads again from the database."""
        conn = self.session.conn
        if self.begun and not conn.broken:
            with contextlib.suppress(psycopg.Error):
                conn.execute("ROLLBACK")
        for box in self.written:
            with box.lock:
                box.restart(-1)


class PostgresGuard:
    """A box held under its advisory lock, inside one transaction (see ``store.Guard``)."""

    def __init__(self, tx: Transaction, key: str, box: Box, tail: Callable[[Conn, str, Mark | None], Tail]) -> None:
        self._tx, self._key, self._box, self._tail = tx, key, box, tail

    def _settled(self) -> Box:
        self._tx.settle()
        return self._box

    @property
    def letters(self) -> list[Letter]:
        return self._settled().decoded().letters

    @property
    def index(self) -> dict[str, Letter]:
        return self._settled().decoded().index

    @property
    def cursor(self) -> Cursor:
        box = self._settled()
        return Cursor(box.generation, box.seq)

    def read(self, after: Cursor | None = None) -> BoxRead:
        return held(self._settled(), after)

    def append(self, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        return self._tx.stage(self._key, self._settled(), lines)

    def tail(self, mark: Mark | None = None) -> Tail:
        self._settled()
        self._tx.flush()
        return self._tail(self._tx.session.conn, self._key, mark)

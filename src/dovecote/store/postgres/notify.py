"""LISTEN/NOTIFY for the PostgreSQL store: a box's stamp that moves without a query.

Law: every append that adds a row notifies channel ``dovecote`` inside its
transaction (``pg_notify``: delivered at commit, never for a rollback), with
the schema and the box as payload. A ``Listener`` holds one connection that
LISTENs, in a thread of its own, and counts the notifications per box; the
store's ``stamp`` is then ``(epoch, count)``, a dictionary look-up, which is
what ``dovecote wait``, the MCP resource watch and the server poll. So a letter
sent on host A moves the stamp on host B as soon as the commit is delivered.

What a lost connection would hide is never trusted: ``LISTEN`` is issued before
the first stamp is handed out, and every reconnect starts a new ``epoch``, so
every stamp taken before it differs from every stamp after it (a reader reads
again, and finds what was appended while nobody listened). While the listener
is down, ``live`` is False and the store stamps with a query instead.
"""

from __future__ import annotations

import threading
from collections import Counter

from dovecote.store.postgres.driver import psycopg

CHANNEL = "dovecote"
#: The statement an append runs in its transaction (the payload: schema, a colon, the box).
NOTIFY = "SELECT pg_notify('dovecote', current_schema() || ':' || %s)"


class Listener:
    """One LISTEN connection and the notifications it counted, by box (see the module docstring)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.epoch = 0
        self.live = False
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._schema = ""
        self._thread = threading.Thread(target=self._run, name="dovecote-listen", daemon=True)
        self._thread.start()
        self._ready.wait(10)  # LISTEN is in force (or the server is unreachable) before a stamp is given

    def stamp(self, key: str) -> tuple[int, int] | None:
        """``(epoch, notifications)`` of the box; None while not listening (stamp by a query then)."""
        with self._lock:
            return (self.epoch, self._counts[key]) if self.live else None

    def moved(self, key: str) -> None:
        """This process appended to the box: its own stamp moves now, not when the notice comes back."""
        with self._lock:
            self._counts[key] += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
                    row = conn.execute("SELECT current_schema()").fetchone()
                    prefix = f"{row[0] if row else ''}:"
                    conn.execute(f"LISTEN {CHANNEL}")
                    with self._lock:
                        self.epoch += 1
                        self.live = True
                    self._ready.set()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            if note.payload.startswith(prefix):
                                with self._lock:
                                    self._counts[note.payload[len(prefix):]] += 1
            except psycopg.Error:
                with self._lock:
                    self.live = False
                self._ready.set()
                self._stop.wait(0.5)  # the server restarts: try again
        with self._lock:
            self.live = False

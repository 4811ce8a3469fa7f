"""A PostgreSQL schema per test, for the tests that run on the PostgreSQL store.

Every test gets its own schema with a random name (so tests run in parallel,
and by several people on one server, never meet) and drops it afterwards. The
server is ``$DOVECOTE_TEST_PG`` (default: the machine's own, database
``test``). In CI (``CI=true``) a server that cannot be reached fails the test;
elsewhere it skips it, saying why.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from psycopg import pq

from dovecote.store.postgres import schema as store_pgschema

SERVER = os.environ.get("DOVECOTE_TEST_PG", "postgresql://127.0.0.1:5432/test")


def reach() -> psycopg.Connection[tuple[object, ...]]:
    """A connection to the test server; fails in CI, skips elsewhere, when there is none."""
    try:
        return psycopg.connect(SERVER, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is not reachable at {SERVER} (CI needs it): {e}")
        pytest.skip(f"PostgreSQL is not reachable at {SERVER}: {e}")


def url_for(schema: str) -> str:
    """The server's URL with ``schema`` as the search path (every table the store makes lands there)."""
    sep = "&" if "?" in SERVER else "?"
    return f"{SERVER}{sep}options={quote(f'-csearch_path={schema}')}"


@contextmanager
def schema(*, migrated: bool = True) -> Iterator[str]:
    """A fresh schema (migrated unless asked not to), as a store URL; dropped when the block ends."""
    name = f"dovecote_t_{secrets.token_hex(6)}"
    admin = reach()
    try:
        admin.execute(f"CREATE SCHEMA {name}")
        url = url_for(name)
        if migrated:
            with psycopg.connect(url) as conn:
                store_pgschema.migrate(conn)
        yield url
    finally:
        admin.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        admin.close()


@contextmanager
def round_trips(conn: psycopg.Connection[tuple[object, ...]], path: Path) -> Iterator[Callable[[], int]]:
    """Trace what ``conn`` says to its server (libpq's protocol trace, into ``path``); yields a
    function counting the round trips so far: each time the client, having sent, reads an answer."""
    with path.open("w") as f:
        conn.pgconn.trace(f.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)

        def count() -> int:
            f.flush()
            trips, last = 0, ""
            for row in path.read_text().splitlines():
                side = row[:1]
                trips += side == "B" and last == "F"
                last = side if side in "FB" else last
            return trips

        try:
            yield count
        finally:
            conn.pgconn.untrace()


def statements(path: Path) -> int:
    """How many statements the client asked its server to run, in a trace ``round_trips`` wrote:
    each is one Execute message, or one simple Query (what the server parses, plans and runs)."""
    return sum(row.split("\t")[2:3] in (["Execute"], ["Query"])
               for row in path.read_text().splitlines() if row.startswith("F"))

"""Read an mcp_agent_mail database, read-only, as plain rows: what ``import agent-mail`` imports.

Law: the database is theirs and may be live. It is opened read-only through
SQLite's URI (``mode=ro``: no write can happen, and no journal or WAL file is
created by this connection), with a busy timeout, and every table is read
inside one transaction (``BEGIN`` then all the reads), so the rows are one
snapshot even while their server writes. Nothing here interprets a row: the
plan (``import_plan``) decides what each becomes and names what it cannot use.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from dovecote.errors import Refusal

#: The file their server keeps its database in, inside its storage root (the notes' default name).
DB_NAME = "storage.sqlite3"
#: How long a read waits for a writer's lock, in milliseconds (their own writers wait a minute).
BUSY_MS = 60_000
#: The tables an import reads, and the columns of each, in the order the rows are kept.
TABLES: dict[str, tuple[str, ...]] = {
    "projects": ("id", "slug", "human_key", "created_at", "archived_at"),
    "agents": ("id", "project_id", "name", "program", "model", "task_description", "inception_ts", "last_active_ts",
               "attachments_policy", "contact_policy", "retired_at", "is_active", "deleted_ts"),
    "messages": ("id", "project_id", "sender_id", "thread_id", "topic", "subject", "body_md", "importance",
                 "ack_required", "created_ts", "attachments"),
    "message_recipients": ("message_id", "agent_id", "kind", "read_ts", "ack_ts"),
    "file_reservations": ("id", "project_id", "agent_id", "path_pattern", "exclusive", "reason", "created_ts",
                          "expires_ts", "released_ts"),
}
#: Columns a database may lack, read as NULL when absent: upstream adds the first three to older databases
#: later; its published fork (``mcp_agent_mail`` 0.1.0 on PyPI) has none of them and instead retires an
#: agent with ``is_active = 0`` and a ``deleted_ts``, which upstream lacks. Any other column is ignored.
LATE_COLUMNS = frozenset({"retired_at", "archived_at", "topic", "is_active", "deleted_ts"})


@dataclass(frozen=True, slots=True)
class Archive:
    """Every row an import reads, as dicts by column name, and where they came from."""

    path: str
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def database_of(path: Path) -> Path:
    """The database file ``path`` names: the file itself, or ``storage.sqlite3`` in a storage root."""
    p = path.expanduser()
    if p.is_dir():
        p = p / DB_NAME
    if not p.is_file():
        raise Refusal("invalid_field", f"{str(path)!r} holds no mcp_agent_mail database (a storage root with "
                                       f"{DB_NAME}, or the SQLite file itself)")
    return p.resolve()


def _select(con: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    have = {r[1] for r in con.execute(f'PRAGMA table_info("{table}")')}
    if not have:
        raise Refusal("invalid_field", f"the database has no {table} table: not an mcp_agent_mail database")
    wanted = TABLES[table]
    missing = [c for c in wanted if c not in have and c not in LATE_COLUMNS]
    if missing:
        raise Refusal("invalid_field", f"the {table} table lacks {', '.join(missing)}: not their schema")
    cols = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in wanted)
    order = "message_id, agent_id" if table == "message_recipients" else "id"
    cur = con.execute(f'SELECT {cols} FROM "{table}" ORDER BY {order}')
    return [dict(zip(wanted, row, strict=True)) for row in cur]


def read_archive(path: Path) -> Archive:
    """Every table an import needs from the database at ``path``, read in one read-only snapshot.

    Raises ``Refusal`` ``invalid_field``: no database there, or not their schema, or unreadable.
    """
    db = database_of(path)
    uri = f"file:{quote(str(db))}?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True, timeout=BUSY_MS / 1000, isolation_level=None)
    except sqlite3.Error as e:
        raise Refusal("invalid_field", f"cannot open {str(db)!r} read-only: {e}") from None
    try:
        con.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        con.execute("BEGIN")  # one snapshot: every read below sees the same commit
        rows = {t: _select(con, t) for t in TABLES}
        con.execute("COMMIT")
    except sqlite3.Error as e:
        raise Refusal("invalid_field", f"cannot read {str(db)!r} as an mcp_agent_mail database: {e}") from None
    finally:
        con.close()
    return Archive(str(db), rows)


__all__ = ["DB_NAME", "TABLES", "Archive", "database_of", "read_archive"]

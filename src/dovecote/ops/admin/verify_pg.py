"""``verify`` on a PostgreSQL home: what the database itself must hold true, beyond the reads.

The reads (every fold from nothing against the warm folds and snapshots) are
compared as on files (``verify``). What files prove by their bytes, a database
proves by its rows, checked here: every row's id is the hash of its line's
bytes (a row changed in place no longer matches; the law is that none is ever
updated), each box's sequence runs 1, 2, … with no duplicate or gap, and no id
is twice in a box. When the home still holds ledger files (it was copied into
the database with ``copy --to``), every letter of them must be in the
database (which may have grown since: only what is missing is a difference).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from dovecote.model.letters import letter_id
from dovecote.store.capability import Capability, can

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.postgres.store import PostgresStore

#: A verify names at most this many bad rows (and counts them all).
NAMED = 20


def database_checks(ctx: Context) -> tuple[list[str], list[dict[str, Any]]]:
    """(what was checked, what differs) beyond the reads, for a home on PostgreSQL; nothing for
    any other store (the memory store holds no rows to check)."""
    if not can(ctx.store, Capability.database_rows):
        return [], []
    count, bad = rows_checked(cast("PostgresStore", ctx.store))
    return [f"rows ({count}): ids, sequences"], bad + files_compared(ctx)


def rows_checked(store: PostgresStore) -> tuple[int, list[dict[str, Any]]]:
    """(rows read, what differs): each row's id against its bytes, each box's sequence."""
    differ: list[dict[str, Any]] = []
    bad = 0
    count = 0
    last: tuple[str, int] | None = None
    expected = 1
    ids: set[str] = set()
    for box, generation, seq, lid, line in store.rows():
        count += 1
        if (box, generation) != last:
            last, expected, ids = (box, generation), 1, set()
        problem = None
        actual = letter_id(line)  # hashed once; a line kept with its CR may carry the id of the line without it
        if actual != lid and not (line.endswith(b"\r") and letter_id(line[:-1]) == lid):
            problem = f"its id {lid} is not the hash of its bytes ({actual}): the row was changed"
        elif seq != expected:
            problem = f"the sequence jumps from {expected - 1} to {seq}"
        elif lid in ids:
            problem = f"id {lid} is twice in the box"
        ids.add(lid)
        expected = seq + 1
        if problem is not None:
            bad += 1
            if bad <= NAMED:
                differ.append({"read": f"row {box} generation {generation} seq {seq}", "problem": problem})
    if bad > NAMED:
        differ.append({"read": "rows", "problem": f"{bad} rows differ; the first {NAMED} are named"})
    return count, differ


def files_compared(ctx: Context) -> list[dict[str, Any]]:
    """When the home keeps ledger files beside its database (copied in with ``copy --to``), every box
    with letters of the files the database lacks; nothing when it keeps none."""
    from dovecote.ops.admin.store_copy import copy
    from dovecote.store.files import FileStore

    if not (ctx.layout.boxes.is_dir() or ctx.layout.spool.exists()):
        return []
    report = copy(ctx, FileStore(ctx.layout, ctx.roster), ctx.store, ("files", "database"), write=False)
    return [{"read": f"copy {b.box}", "problem": f"{b.missing} of the {b.source} letters of the home's files "
             "are not in the database"} for b in report.boxes if b.missing]

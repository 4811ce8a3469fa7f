"""The PostgreSQL store's schema and its versioned migrations.

Law: the schema changes only by appending a migration to ``MIGRATIONS``
(never by editing one that shipped), and ``migrate`` applies the missing ones
in one transaction under an advisory lock, so two hosts migrating at once
apply each migration once. A store refuses a database whose schema is newer
than the migrations it knows (``schema_too_new``: an older dovecote must not
write to a newer layout) or older (``schema_unmigrated``: run ``dovecote db
migrate``); it never migrates on its own, so a read never changes the database.

The letters table only grows: no migration and no code path updates or
deletes a row of it. ``dovecote_boxes`` names each box (its address) and
holds its generation (bumped only when a box is replaced from outside, as a
restore replaces a file); a letter row carries the box's number, not its name,
so the two indexes of the letters table stay small.
"""

from __future__ import annotations

import secrets

from dovecote.errors import Refusal
from dovecote.store.postgres.driver import psycopg

#: (version, statements). Append only.
MIGRATIONS: tuple[tuple[int, str], ...] = (
    (1, """
        CREATE TABLE dovecote_meta (
            key text PRIMARY KEY,
            value text NOT NULL
        );
        CREATE TABLE dovecote_boxes (
            id serial PRIMARY KEY,
            box text NOT NULL UNIQUE,
            generation integer NOT NULL DEFAULT 0
        );
        CREATE TABLE dovecote_letters (
            box integer NOT NULL,
            generation integer NOT NULL,
            seq bigint NOT NULL,
            id text NOT NULL,
            line bytea NOT NULL,
            PRIMARY KEY (box, generation, seq),
            UNIQUE (box, generation, id)
        );
    """),
    # Ids compared byte by byte, not by the database's collation (they are ASCII hex digits): the
    # unique index every row goes into costs the server less; a batch of 100,000 about an eighth
    # less CPU (0.45 -> 0.39 s). No row is rewritten; only that index is rebuilt.
    (2, """
        ALTER TABLE dovecote_letters ALTER COLUMN id TYPE text COLLATE "C";
    """),
    # A guarded section's first round trip as one statement instead of two a box: each
    # box's advisory lock (``write``: every lock before any read, in the order given), its row made
    # if missing, then each box's number and generation and the rows after what the caller holds.
    # Each query of a VOLATILE PL/pgSQL function takes a fresh snapshot, so the reads see every row
    # committed before the locks were granted, as separate statements after the locks did. A box
    # whose generation is not the caller's is read from its first row; one missing (a read) yields
    # nothing. It writes nothing but a missing box's row.
    (3, """
        CREATE FUNCTION dovecote_hold(keys text[], gens int4[], seqs int8[], write boolean)
        RETURNS TABLE (n int4, number int4, generation int4, seq int8, line bytea)
        LANGUAGE plpgsql VOLATILE AS $fn$
        DECLARE
            i int4;
            b record;
        BEGIN
            IF write THEN
                FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
                    PERFORM pg_advisory_xact_lock(hashtextextended(current_schema() || ':' || keys[i], 0));
                END LOOP;
            END IF;
            FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
                SELECT x.id, x.generation INTO b FROM dovecote_boxes x WHERE x.box = keys[i];
                IF NOT FOUND THEN
                    CONTINUE WHEN NOT write;
                    INSERT INTO dovecote_boxes (box) VALUES (keys[i]) ON CONFLICT DO NOTHING;
                    SELECT x.id, x.generation INTO b FROM dovecote_boxes x WHERE x.box = keys[i];
                END IF;
                n := i; number := b.id; generation := b.generation; seq := NULL; line := NULL;
                RETURN NEXT;
                RETURN QUERY SELECT i, b.id, b.generation, l.seq, l.line FROM dovecote_letters l
                    WHERE l.box = b.id AND l.generation = b.generation
                    AND l.seq > CASE WHEN b.generation = gens[i] THEN seqs[i] ELSE 0 END
                    ORDER BY l.seq;
            END LOOP;
        END
        $fn$;
    """),
)

#: The newest schema this code knows.
VERSION = MIGRATIONS[-1][0]

_VERSION_TABLE = """CREATE TABLE IF NOT EXISTS dovecote_schema_version (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""

#: The advisory lock migrations take (per schema: the key hashes the schema's name).
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('dovecote:migrate:' || current_schema(), 0))"


def current(conn: psycopg.Connection[tuple[object, ...]]) -> int | None:
    """The schema version of the database ``conn`` is on; None when it was never migrated."""
    row = conn.execute("SELECT to_regclass('dovecote_schema_version') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return None
    got = conn.execute("SELECT max(version) FROM dovecote_schema_version").fetchone()
    return None if got is None or got[0] is None else int(str(got[0]))


def migrate(conn: psycopg.Connection[tuple[object, ...]]) -> tuple[int | None, list[int]]:
    """Apply every missing migration; returns (version before, versions applied). Idempotent."""
    with conn.transaction():
        conn.execute(_LOCK)
        conn.execute(_VERSION_TABLE)
        before = current(conn)
        if before is not None and before > VERSION:
            raise too_new(before)
        applied: list[int] = []
        for version, sql in MIGRATIONS:
            if before is not None and version <= before:
                continue
            conn.execute(sql)
            if version == 1:
                conn.execute("INSERT INTO dovecote_meta VALUES ('store_id', %s)", (secrets.token_hex(8),))
            conn.execute("INSERT INTO dovecote_schema_version (version) VALUES (%s)", (version,))
            applied.append(version)
    return before, applied


def too_new(version: int) -> Refusal:
    return Refusal("schema_too_new", f"the database's dovecote schema is version {version}; this dovecote knows "
                   f"up to {VERSION} (upgrade dovecote before using this database)")


def check(conn: psycopg.Connection[tuple[object, ...]]) -> str:
    """Refuse a database this code cannot use as it is; returns the store's id (its marks' origin)."""
    version = current(conn)
    if version is None or version < VERSION:
        have = "no dovecote schema" if version is None else f"schema version {version}"
        raise Refusal("schema_unmigrated", f"the database has {have}; run `dovecote db migrate` "
                      f"(this dovecote needs version {VERSION})")
    if version > VERSION:
        raise too_new(version)
    row = conn.execute("SELECT value FROM dovecote_meta WHERE key = 'store_id'").fetchone()
    return str(row[0]) if row else ""

"""Making, migrating and copying a home: the handle's functions that run before (or without) a ``Dovecote``.

``init`` writes a fresh roster, ``migrate_store`` brings a PostgreSQL database to this dovecote's
schema, ``copy_store`` copies every ledger between the home's files and a database, and
``merge_ledgers`` is the git merge driver. None opens the home's store as a handle does (a store
not migrated yet would refuse), so none needs one. ``dovecote.handle.api`` re-exports each, and
imports this module when a face first names one: a hook's cold start loads none of it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec.structs import replace

from dovecote.errors import Refusal
from dovecote.model.results import Result
from dovecote.roster import config as roster_mod
from dovecote.roster import edit as roster_edit
from dovecote.roster.home import Layout, find_home

if TYPE_CHECKING:
    from dovecote.ops.admin.store_copy import Copied


def init(
    root: str | os.PathLike[str] | None = None, owner_root: str | None = None, store: str | None = None
) -> tuple[Path, bool]:
    """Create a home with a fresh roster; an existing roster is left as it is.

    ``store``: a PostgreSQL URL the ledgers live in (no password: refused
    ``password_in_config``). Its schema is brought up to date first, as
    ``dovecote db migrate`` does (``migrate_store``, under the same lock): a home
    that says "created" can be used at once. A database that cannot be reached
    or migrated is refused ``schema_unmigrated``, naming the command, and no
    roster is written. Returns (home, created).
    """
    if store is not None:
        roster_mod.check_store(store)
    home = find_home(root)
    layout = Layout(home)
    if layout.config.exists():
        return home, False
    if store is not None:
        _migrate_for_init(store)
    owner = owner_root or (str(home.parent) if home.name == ".dovecote" else str(home))
    owner = os.path.abspath(os.path.expanduser(owner))  # "." is this folder, not the text "."
    fresh = replace(roster_mod.new_roster(owner), store=store)
    created = roster_edit.create(layout.config, roster_mod.dump(fresh))
    return home, created  # False: another init got there first, and theirs stands


def _require_url(url: str, option: str) -> None:
    """Refuse what is not a PostgreSQL URL before any driver sees it: libpq would read it as a
    connection string, and the pool would retry it until its timeout (15 s) before failing."""
    from dovecote.roster.store_url import is_url

    if not is_url(url):
        raise Refusal("invalid_field", f"{option} takes a postgresql:// URL; nothing was read or written")


class Migrated(Result, frozen=True):
    """A database brought to this dovecote's schema: the store (shown without a password), the version it was
    at (None: no dovecote schema yet), the migrations applied now, and the version it is at."""

    store: str
    before: int | None
    applied: list[int]
    version: int


def migrate_store(url: str | None, root: str | os.PathLike[str] | None = None) -> Migrated:
    """Bring the database at ``url`` (default: the home's ``store`` setting) to this dovecote's
    schema (``dovecote db migrate``; idempotent). The home's store is not opened: it would refuse."""
    from dovecote.handle.search import home_of
    from dovecote.roster.store_url import shown
    from dovecote.store.postgres import schema as store_pgschema
    from dovecote.store.postgres.store import connect

    if url is None:
        url = roster_mod.load(Layout(home_of(root)).config).store
        if url is None:
            raise Refusal("invalid_field", "this home keeps its ledgers in files; give --url postgresql://…")

    _require_url(url, "--url")
    with connect(url) as conn:
        before, applied = store_pgschema.migrate(conn)
    return Migrated(shown(url), before, applied, store_pgschema.VERSION)


def _migrate_for_init(url: str) -> None:
    """``migrate_store(url)`` for ``init``: what stops it is a refusal naming the command to run once the
    database can be reached (or by a role that may create its tables); nothing was written yet."""
    from dovecote.errors import StoreError
    from dovecote.store.postgres.driver import DriverError  # refused driver_missing without the postgres extra

    try:
        migrate_store(url)
    except (StoreError, DriverError) as e:
        why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise Refusal("schema_unmigrated", f"could not bring the database's dovecote schema up to date ({why}); "
                      f"no home was created: run `dovecote db migrate --url {url}`, then init again") from None


def copy_store(
    root: str | os.PathLike[str] | None, *, to: str | None = None, source: str | None = None, write: bool = True
) -> Copied:
    """Copy every ledger of the home ``to`` a database, or from ``source`` (a database) into the
    home's files, then compare both sides (``dovecote copy``; see ``ops.admin.store_copy``)."""
    from dovecote.handle.search import home_of
    from dovecote.ops.admin import store_copy
    from dovecote.ops.context import Context
    from dovecote.roster.store_url import shown
    from dovecote.store.files import FileStore
    from dovecote.store.postgres.store import PostgresStore

    if (to is None) == (source is None):
        raise Refusal("invalid_field", "name one side: --to URL (from this home) or --from URL (into its files)")
    _require_url(to or source or "", "--to" if to is not None else "--from")
    ctx = Context.open(Layout(home_of(root)))
    db = PostgresStore(to or source or "", ctx.roster)
    try:
        if to is not None:
            where = "files" if isinstance(ctx.store, FileStore) else "this home's store"
            report = store_copy.copy(ctx, ctx.store, db, (where, shown(to)), write=write)
        else:
            files = FileStore(ctx.layout, ctx.roster)
            report = store_copy.copy(ctx, db, files, (shown(source or ""), "files"), write=write)
    finally:
        db.close()
    return report


def merge_ledgers(ancestor: Path, ours: Path, theirs: Path) -> None:
    """Union two ledgers by id into ``ours`` (the git merge driver; see ``ops.admin.merge``)."""
    from dovecote.ops.admin.merge import merge_files

    merge_files(ancestor, ours, theirs)

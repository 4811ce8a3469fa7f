"""Commands about where the ledgers live: ``db migrate`` and ``copy`` (not verbs of the handle)."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, home_path
from dovecote.cli.output import show
from dovecote.handle.api import copy_store, migrate_store

db_app = Typer(help="The PostgreSQL store's database: its schema.", no_args_is_help=True)


@db_app.command("migrate")
def migrate_cmd(
    url: Annotated[
        Optional[str], typer.Option("--url", help="The database (default: the home's store setting).")
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Create or upgrade the dovecote schema in the database.

    Idempotent: a second run applies nothing.
    """
    show(migrate_store(url, home_path()), json=json, text=_migrated)


def _migrated(r: dict[str, Any]) -> str:
    done = ", ".join(str(v) for v in r["applied"]) or "nothing (already current)"
    return f"{r['store']}: schema version {r['version']}; applied {done}\n"


def copy_cmd(
    to: Annotated[Optional[str], typer.Option("--to", help="Copy this home's ledgers into this database.")] = None,
    source: Annotated[
        Optional[str], typer.Option("--from", help="Copy this database's ledgers into the home's files.")
    ] = None,
    verify_only: Annotated[
        bool, typer.Option("--verify-only", help="Copy nothing: only compare both sides.")
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Copy every ledger between the home and a database.

    Lines are copied byte-identical, so ids are kept; then both sides are compared. Idempotent
    and resumable: a second run copies only what is missing. Exits 1 when the sides still differ.
    """
    report = copy_store(home_path(), to=to, source=source, write=not verify_only)
    show(report, json=json, text=_copied)
    if not report.identical:
        raise typer.Exit(1)


def _copied(r: dict[str, Any]) -> str:
    lines = [f"{r['source']} -> {r['target']}: {r['copied']} copied, {r['letters']} letters in "
             f"{len(r['boxes'])} boxes; {'identical' if r['identical'] else 'DIFFERENT'}"]
    for b in r["boxes"]:
        if b["missing"] or b["extra"] or not b["same_order"]:
            lines.append(f"  {b['box']}: {b['missing']} missing, {b['extra']} extra, "
                         f"{'same' if b['same_order'] else 'other'} order")
    lines += [f"  unreachable: {u}" for u in r["unreachable"]]
    return "\n".join(lines) + "\n"


def register(app: Typer) -> None:
    app.add_typer(db_app, name="db")
    app.command("copy")(copy_cmd)

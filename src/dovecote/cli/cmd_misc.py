"""Commands that are not verbs of the handle: ``init``, ``demo`` and the git ``merge-driver``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from dovecote.cli import render
from dovecote.cli.actor import bound_actor
from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, home_path
from dovecote.cli.output import invocation, show
from dovecote.handle.api import init, merge_ledgers, open_home
from dovecote.verbs import Direction, Inbox, Sweep


def init_cmd(
    owner_root: Annotated[
        Optional[str], typer.Option("--owner-root", help="The owner's own root (projectless letters go home).")
    ] = None,
    store: Annotated[
        Optional[str],
        typer.Option("--store", help="Keep the ledgers in this PostgreSQL database (postgresql://…, no password)."),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Create a dovecote home (an existing one is kept).

    It writes a fresh config.toml (the roster); an existing home is kept as it is.
    """
    home, created = init(home_path(), owner_root, store)
    show({"home": str(home), "created": created}, json=json,
         text=lambda r: f"{'created' if r['created'] else 'already a home:'} {r['home']}\n")


def merge_driver_cmd(
    ancestor: Annotated[Path, typer.Argument(help="%O: the common ancestor.")],
    ours: Annotated[Path, typer.Argument(help="%A: ours; the union is written here.")],
    theirs: Annotated[Path, typer.Argument(help="%B: theirs.")],
    path: Annotated[Optional[str], typer.Argument(help="%P: the path in the tree (ignored).")] = None,
) -> None:
    """Git merge driver for ledgers: a union by id.

    Never a conflict, never a lost letter.

    Set up: git config merge.dovecote.driver "dovecote merge-driver %O %A %B"
    and in .gitattributes: letters.jsonl merge=dovecote
    """
    merge_ledgers(ancestor, ours, theirs)


def demo_cmd(
    path: Annotated[Path, typer.Argument(help="Where to build the demo home.")] = Path("demo-home"),
) -> None:
    """Build a demo home; print its sweep, doctor and inbox.

    The home has projects, letters of every fate and an entity inbox."""
    from dovecote.cli.demo import build_demo, look_around, mcp_config
    from dovecote.cli.texts import inbox_injection, inbox_text

    home = build_demo(path, bound_actor())
    dc = open_home(home)
    c = render.con()
    c.print(f"[bold]demo home:[/bold] {home}\n")
    render.receipt(dc.distribute().to_dict())
    render.sweep(dc.sweep(Sweep(distribute=False)).to_dict())
    render.doctor(dc.doctor().to_dict())
    inbox = dc.inbox(Inbox(entity_id="ent_builder", current_tic=107, direction=Direction.both)).to_dict()
    c.print("\n[bold]entity mail[/bold] (at tic 107)")
    sys.stdout.write(inbox_text(inbox))
    sys.stdout.write(inbox_injection(inbox))
    sys.stdout.flush()
    first = inbox["items"][0]["id"] if inbox["items"] else "ID"
    c.print("\n" + look_around(home, first, invocation()), markup=False)
    program = os.path.realpath(sys.argv[0]) if os.path.exists(sys.argv[0]) else sys.argv[0]
    c.print("\n" + mcp_config(home.resolve(), [e.id for e in dc.entities()], program), markup=False, soft_wrap=True)


def register_init(app: Typer) -> None:
    app.command("init")(init_cmd)


def register(app: Typer) -> None:
    app.command("merge-driver")(merge_driver_cmd)
    app.command("demo")(demo_cmd)

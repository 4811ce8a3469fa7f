"""Reading entity mail: ``inbox``, ``show``, ``view``, ``import inbox-tree``, ``search``,
``stale-check`` and ``organize``.

Each option is a field of its verb (``dovecote.verbs``), and its help is that
field's doc; ``--format`` and ``--detailed`` choose a rendering, not an answer.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Optional

import typer

from dovecote.cli import texts
from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, LimitOpt, NoLimitOpt, home_path, opened
from dovecote.cli.options import argument, option
from dovecote.cli.output import show
from dovecote.verbs import ImportInboxTree, Inbox, Organize, Search, Show, StaleCheck, View

import_app = Typer(help="Adopt data written by other tools.", no_args_is_help=True)


class Format(StrEnum):
    text = "text"
    json = "json"
    injection = "injection"


def inbox_cmd(
    args: Annotated[
        Optional[list[str]], typer.Argument(metavar="[ENTITY] [status]", help="The entity; 'status' for counts only.")
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="text, json or injection.")] = Format.text,
    current_tic: Optional[int] = option(Inbox, "current_tic", "--current-tic"),
    direction: str = option(Inbox, "direction", "--direction"),
    detailed: Annotated[bool, typer.Option("--detailed/--compact", help="Every open item, or flagged ones.")] = False,
    include_terminal: bool = option(Inbox, "include_terminal", "--include-terminal", "--all"),
    json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
    rows: LimitOpt = None,
    every: NoLimitOpt = False,
) -> None:
    """Audit an entity's inbox: counts, flags and open items.

    Open items are listed by priority, then age.
    """
    from dovecote.cli.quick import run_inbox

    run_inbox(home_path(), list(args or []), fmt.value, current_tic, direction, detailed, include_terminal, json,
              rows, every)


def show_cmd(
    entity_id: str = argument(Show, "entity_id", metavar="ENTITY"),
    ref: str = argument(Show, "ref", metavar="ID"),
    current_tic: Optional[int] = option(Show, "current_tic", "--current-tic"),
    json: JsonOpt = False,
) -> None:
    """Read one message whole, with its thread and history.

    Its envelope, body, thread and lifecycle history.
    """
    show(opened().show(Show(entity_id=entity_id, ref=ref, current_tic=current_tic)), json=json, text=texts.show_text)


def view_cmd(
    entity_id: Optional[str] = argument(View, "entity_id", metavar="[ENTITY]"),
    current_tic: Optional[int] = option(View, "current_tic", "--current-tic"),
    rebuild: bool = option(View, "rebuild", "--rebuild"),
    json: JsonOpt = False,
) -> None:
    """Write the /inbox folder layout of an entity's ledger.

    It is written under views/agent-mailboxes/ (a cache).

    Files you put there (inside entries too) are never touched; an entry you move to another folder is
    adopted as its verb, or reported and put back when the lifecycle refuses the move.
    """
    result = opened().view(View(entity_id=entity_id, current_tic=current_tic, rebuild=rebuild))
    show(result, json=json, text=texts.view_text)


@import_app.command("inbox-tree")
def import_inbox_tree_cmd(
    path: Path = argument(ImportInboxTree, "path"),
    entity_id: Optional[str] = option(ImportInboxTree, "entity_id", "--entity-id", "--entity"),
    current_tic: Optional[int] = option(ImportInboxTree, "current_tic", "--current-tic"),
    json: JsonOpt = False,
) -> None:
    """Adopt an existing /inbox tree with its states.

    Flat, directory and bare-drop envelopes alike.

    A re-import appends nothing; a move the lifecycle forbids is reported, never forced.
    """
    result = opened().import_inbox_tree(ImportInboxTree(path=str(path), entity_id=entity_id, current_tic=current_tic))
    show(result, json=json, text=texts.import_text)


def search_cmd(
    query: list[str] = argument(Search, "query", metavar="QUERY"),
    entity_id: Optional[str] = option(Search, "entity_id", "--entity-id", "--entity"),
    include_terminal: bool = option(Search, "include_terminal", "--include-terminal"),
    limit: int = option(Search, "limit", "--limit"),
    json: JsonOpt = False,
) -> None:
    """Full-text search over entity mail, newest first.

    It searches subjects, bodies and text artifacts.

    The index (cache/search.sqlite) is a cache: it catches up with the ledgers
    before each answer and is rebuilt from them when missing or replaced.
    """
    v = Search(query=" ".join(query), entity_id=entity_id, include_terminal=include_terminal, limit=limit)
    show(opened().search(v), json=json, text=texts.search_text)


def stale_check_cmd(
    current_tic: Optional[int] = option(StaleCheck, "current_tic", "--current-tic"),
    emit_signals: bool = option(StaleCheck, "emit_signals", "--emit-signals"),
    json: JsonOpt = False,
) -> None:
    """Attention debt: the stale items of every inbox.

    Items stale in WAIT or ACTIVE: their counts and the oldest.
    """
    result = opened().stale_check(StaleCheck(current_tic=current_tic, emit_signals=emit_signals))
    show(result, json=json, text=texts.stale_text)


def organize_cmd(
    entity_id: str = argument(Organize, "entity_id", metavar="ENTITY"),
    apply: bool = option(Organize, "apply", "--apply"),
    current_tic: Optional[int] = option(Organize, "current_tic", "--current-tic"),
    json: JsonOpt = False,
) -> None:
    """Report loose files, expired items and duplicates.

    Also files over 10 MiB, each with a proposed action.
    """
    result = opened().organize(Organize(entity_id=entity_id, apply=apply, current_tic=current_tic))
    show(result, json=json, text=texts.organize_text)


def register(app: Typer) -> None:
    app.command("inbox")(inbox_cmd)
    app.command("show")(show_cmd)
    app.command("view")(view_cmd)
    app.add_typer(import_app, name="import")
    app.command("search")(search_cmd)
    app.command("stale-check")(stale_check_cmd)
    app.command("organize")(organize_cmd)

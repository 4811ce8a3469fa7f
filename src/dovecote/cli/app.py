"""The ``dovecote`` command line: the Typer app, its callback, and the command groups.

No rule lives here or in the command modules. Every command opens the home,
builds its verb's typed input (``dovecote.verbs``) from its options, makes one
call on the handle and shows the answer (``output.show``: JSON with ``--json``,
a summary otherwise). The commands live in one module per group:

- ``cmd_roster``: project and entity add/remove/list
- ``cmd_reports``: report, distribute, sweep, box, doctor, verify
- ``cmd_cases``: receipt, cases, case, sentinels, claims, monitor add, monitors
- ``cmd_mail``: send, draft, outbox send, and the lifecycle moves
- ``cmd_inbox``: inbox, show, view, import inbox-tree, search, stale-check, organize
- ``cmd_misc``: init, demo, merge-driver (not verbs of the handle)
- ``cmd_vnext``: import vnext
- ``cmd_agentmail_import``: import agent-mail
- ``cmd_mcp``: mcp, the MCP face on stdio or HTTP
- ``cmd_delivery``: intake, mailman, ack, trackers, presence, status, and send's work options
- ``cmd_store``: db migrate, copy (the PostgreSQL store)
- ``cmd_missions``: block add/bump, blocks, mission post/show/archive, missions, receipt import
- ``cmd_gestures``: gesture-key set (the passphrase human gestures need)
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer
import typer.main

import dovecote
from dovecote.cli import (
    cmd_agentmail_import,
    cmd_agents,
    cmd_cases,
    cmd_delivery,
    cmd_gestures,
    cmd_inbox,
    cmd_leases,
    cmd_mail,
    cmd_mcp,
    cmd_misc,
    cmd_missions,
    cmd_reports,
    cmd_roster,
    cmd_serve,
    cmd_store,
    cmd_vnext,
)
from dovecote.cli.actor import bound_actor
from dovecote.cli.boundary import Group, Typer
from dovecote.cli.common import home_path, opened, set_home

__all__ = ["app", "bound_actor", "run"]

app = Typer(
    name="dovecote",
    help="A durable, file-first mailbox and case-intelligence system for agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        print(f"dovecote {dovecote.__version__}")
        raise typer.Exit()


@app.callback()
def main(
    home: Annotated[
        Optional[str],
        typer.Option("--home", help="The dovecote home (default: $DOVECOTE_HOME, nearest .dovecote/, ~/.dovecote)."),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """dovecote files every letter into exactly one box and derives its state at read time."""
    set_home(home)


# The order of registration is the order of the help within each panel (cli.panels).
cmd_misc.register_init(app)
cmd_roster.register(app)
cmd_reports.register(app)
cmd_cases.register(app)  # receipt, cases, case, sentinels, claims, monitors
cmd_misc.register(app)
cmd_mail.register(app)
cmd_inbox.register(app)
cmd_vnext.register(cmd_inbox.import_app)  # import vnext
cmd_agentmail_import.register(cmd_inbox.import_app)  # import agent-mail
cmd_agents.register(app, opened, home_path)  # token, wait, hooks, hook
cmd_cases.register_hooks(app)  # hook post-tool (abandonment)
cmd_serve.register(app, opened)  # the HTTP face behind it loads only when it runs
cmd_mcp.register(app, opened)  # mcp (the MCP face)
cmd_delivery.register(app)  # intake, mailman, ack, trackers, presence, status
cmd_store.register(app)  # db migrate, copy
cmd_missions.register(app)  # block, blocks, mission, missions, receipt import
cmd_gestures.register(app)  # gesture-key set
cmd_leases.register(app)  # lease take|renew|release|list|check, lease guard install


def _place_in_panels() -> None:
    """Each top-level command's ``rich_help_panel``, from the one table of panels (``panels``)."""
    from dovecote.cli.panels import PANEL_OF

    for info in app.registered_commands:
        assert info.callback is not None
        info.rich_help_panel = PANEL_OF.get(info.name or typer.main.get_command_name(info.callback.__name__))
    for group in app.registered_groups:
        assert isinstance(group.name, str), "every sub-app is added with its name"
        group.rich_help_panel = PANEL_OF.get(group.name)


_place_in_panels()


class _LazyGroup(Group):
    """The top group, which builds a subcommand's click command only when it is asked for.

    Typer builds a command by reading the type hints of every parameter of its
    function (~80 ms for the whole tree, paid by every new process, which is how
    users and agents run the CLI). One call runs one subcommand, so only that
    one is built; ``--help`` and the shell listing still ask for every name, in
    the order of registration, and get all of them.
    """

    #: name -> a function building that subcommand (set right after Typer builds the group)
    builders: dict[str, Callable[[], Any]]

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.builders)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in self.builders:
            self.commands[cmd_name] = self.builders[cmd_name]()
        return self.commands.get(cmd_name)


def _builders() -> dict[str, Callable[[], Any]]:
    """What each of ``app``'s subcommands is built by, by its name, in the order of registration
    (commands first, then groups: the order Typer itself lists them in)."""
    style: dict[str, Any] = {"pretty_exceptions_short": app.pretty_exceptions_short,
                             "rich_markup_mode": app.rich_markup_mode}
    out: dict[str, Callable[[], Any]] = {}
    for info in app.registered_commands:
        assert info.callback is not None
        name = info.name or typer.main.get_command_name(info.callback.__name__)
        out[name] = functools.partial(typer.main.get_command_from_info, info, **style)
    for group in app.registered_groups:
        assert isinstance(group.name, str), "every sub-app is added with its name"
        out[group.name] = functools.partial(
            typer.main.get_group_from_info, group, suggest_commands=app.suggest_commands, **style)
    return out


@functools.cache
def command() -> Any:  # typer's own (vendored) click Command
    """The click command tree of ``app``, its subcommands built on demand (``_LazyGroup``); a
    process that runs the CLI more than once (the test suite does, thousands of times) keeps
    what it built. ``entry.main`` handles every exception itself, so Typer's own ``__call__``
    (which only installs its traceback hook) adds nothing."""
    shell = copy.copy(app)  # the top group alone: its callback and options, no subcommand yet
    shell.registered_commands, shell.registered_groups = [], []
    shell.info = copy.copy(app.info)
    shell.info.cls = _LazyGroup
    group = typer.main.get_command(shell)
    assert isinstance(group, _LazyGroup)
    group.builders = _builders()
    return group


def run() -> Any:
    return command()(prog_name="dovecote")

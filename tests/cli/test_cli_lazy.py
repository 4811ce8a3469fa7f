"""The CLI's command tree is built lazily (``cli.app.command``): a call builds only the subcommand it
runs, and what users see (the help, the listing, the errors) is what Typer's whole tree shows."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
import typer.main

from dovecote.cli import app as cli_app


def _out(cmd: Any, args: list[str]) -> tuple[str, int]:
    buf, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        try:
            cmd.main(args, prog_name="dovecote", standalone_mode=True)
        except SystemExit as e:
            code = int(e.code or 0)
    return buf.getvalue() + err.getvalue(), code


@pytest.mark.parametrize("args", [["--help"], ["project", "--help"], ["send", "--help"], ["mission", "--help"],
                                  ["nosuch"], ["project", "nosuch"]], ids=" ".join)
def test_the_lazy_tree_answers_what_the_whole_tree_answers(args: list[str]) -> None:
    eager = typer.main.get_command(cli_app.app)
    cli_app.command.cache_clear()
    try:
        assert _out(cli_app.command(), args) == _out(eager, args)
    finally:
        cli_app.command.cache_clear()


def test_every_command_is_listed_in_registration_order() -> None:
    eager = typer.main.get_command(cli_app.app)
    assert isinstance(eager, typer.core.TyperGroup)
    assert cli_app.command().list_commands(None) == list(eager.commands)


def test_one_call_builds_only_the_command_it_runs(tmp_path: Path) -> None:
    cli_app.command.cache_clear()
    try:
        root = cli_app.command()
        assert root.commands == {}
        out, code = _out(root, ["--home", str(tmp_path / ".dovecote"), "init"])
        assert code == 0, out
        assert list(root.commands) == ["init"]
        out, code = _out(root, ["--home", str(tmp_path / ".dovecote"), "project", "list"])
        assert code == 0, out
        assert list(root.commands) == ["init", "project"]
    finally:
        cli_app.command.cache_clear()

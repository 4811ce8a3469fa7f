"""The ``inbox`` command without Typer (``cli.quick``): the same bytes, the same refusals.

A session-start hook runs ``dovecote inbox ENTITY --format injection`` in every
new session, so the console script parses that command's simple argv itself
and never imports Typer or Rich for it. Whatever it prints, Typer's command
prints too (both call ``quick.run_inbox``); whatever it does not recognise is
Typer's to parse.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dovecote.cli import quick
from dovecote.cli.app import app
from helpers import cli_env, run_cli
from mailhelpers import ENTITY, mail_home, send

SIMPLE = [
    ["inbox", ENTITY],
    ["inbox", ENTITY, "--format", "injection", "--current-tic", "110"],
    ["inbox", ENTITY, "--format=json", "--current-tic=3", "--all"],
    ["inbox", "--json", ENTITY, "--direction", "both"],
    ["inbox", ENTITY, "status", "--detailed"],
    ["inbox", ENTITY, "--compact", "--format", "text", "--direction=outbound"],
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    dc = mail_home(tmp_path)
    for k in range(4):
        send(dc, f"subject {k}", priority="urgent" if k % 2 else "normal")
    return dc.layout.root


@pytest.mark.parametrize("argv", SIMPLE)
def test_the_quick_path_prints_what_the_typer_command_prints(tmp_path: Path, home: Path, argv: list[str]) -> None:
    assert quick.parse(argv) is not None
    env = {**cli_env(tmp_path, home), "PYTHONPROFILEIMPORTTIME": "1"}
    got = run_cli(tmp_path, *argv, env=env)
    assert got.returncode == 0, got.stderr.decode()
    imported = got.stderr.decode()
    assert " typer" not in imported and " rich" not in imported  # nothing heavy on the hook's path
    typer_run = CliRunner().invoke(app, ["--home", str(home), *argv], env={**os.environ, **cli_env(tmp_path, home)})
    assert typer_run.exit_code == 0, typer_run.output
    assert got.stdout == typer_run.stdout_bytes


@pytest.mark.parametrize("argv", [
    ["inbox", "--help"], ["inbox", "--format", "yaml"], ["inbox", "--current-tic", "ten"],
    ["inbox", "--current-tic", str(2**53)], ["inbox", "--no-such-option"], ["inbox", "--format"],
    ["inbox", "ok\udcffok"], ["report", "x"], [], ["--home"],
])
def test_anything_else_is_left_to_typer(argv: list[str]) -> None:
    assert quick.parse(argv) is None


def test_a_refusal_on_the_quick_path_is_the_commands_refusal(tmp_path: Path, home: Path) -> None:
    r = run_cli(tmp_path, "inbox", ENTITY, "extra", home=home)
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.decode().startswith("Error: invalid_field: unexpected arguments: extra")
    r = run_cli(tmp_path, "inbox", "ent_nobody", home=home)
    assert r.returncode == 2 and r.stderr.decode().startswith("Error: unknown_entity:")

"""``dovecote --help`` lists every command in one panel, each summary whole at 80 columns, and a word no
command expects is refused naming the command it was given to and what it takes (real processes)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import typer.main

from dovecote.cli.app import app
from dovecote.cli.panels import PANELS
from helpers import DOVECOTE_BIN

ROOT = typer.main.get_command(app)
GROUPS = [(), *((name,) for name, cmd in ROOT.commands.items() if hasattr(cmd, "commands"))]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "COLUMNS": "80",
           "HOME": "/nonexistent", "DOVECOTE_HOME": "/nonexistent/.dovecote"}
    return subprocess.run([str(DOVECOTE_BIN), *args], env=env, capture_output=True, text=True, timeout=60,
                          check=False)


def _sections(help_text: str) -> dict[str, list[tuple[str, str]]]:
    """The help's command sections: title -> [(name, summary)] (a summary's wrapped lines joined)."""
    out: dict[str, list[tuple[str, str]]] = {}
    title = None
    for line in help_text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":") and not line.startswith("Usage"):
            title = line[:-1] if line[:-1] not in ("Options", "Arguments", "Example", "Examples") else None
            if title is not None:
                out[title] = []
        elif title is not None and (m := re.match(r"^  (\S+)\s{2,}(.*)$", line)):
            out[title].append((m[1], m[2]))
        elif title is not None and line.startswith("    ") and out[title]:
            name, text = out[title][-1]
            out[title][-1] = (name, f"{text} {line.strip()}")
    return out


def test_every_top_level_command_is_in_exactly_one_panel_and_each_panel_fits_a_screen() -> None:
    res = _run("--help")
    assert res.returncode == 0, res.stderr
    sections = _sections(res.stdout)
    assert list(sections) == list(PANELS)  # the panels, in their order; no catch-all "Commands"
    shown = [name for rows in sections.values() for name, _ in rows]
    assert sorted(shown) == sorted(ROOT.commands) and len(shown) == len(set(shown))
    for title, rows in sections.items():
        assert [name for name, _ in rows] == list(PANELS[title])
        assert len(rows) <= 20, f"panel {title} has {len(rows)} rows"
    assert all(len(line) <= 80 for line in res.stdout.splitlines()), res.stdout


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: " ".join(g) or "dovecote")
def test_every_summary_is_whole_at_80_columns(group: tuple[str, ...]) -> None:
    """Click cuts a summary too long for the terminal with "..."; every one must fit and end a sentence."""
    res = _run(*group, "--help")
    assert res.returncode == 0, res.stderr
    rows = [row for rows in _sections(res.stdout).values() for row in rows]
    assert rows, res.stdout
    for name, summary in rows:
        assert not summary.endswith("...") and summary.endswith("."), f"{' '.join(group)} {name}: {summary!r}"


STRAY = [
    (["receipt", "--answers", "a", "b"], "dovecote receipt: unexpected argument 'b'; receipt takes options or a "
     "subcommand (subcommands: import)"),
    (["nosuch"], "dovecote: unexpected argument 'nosuch'; expected a command"),
    (["mission", "pots"], "dovecote mission: unexpected argument 'pots'; mission takes a subcommand (subcommands: "
     "post, show, archive); did you mean 'post'?"),
    (["project", "ls"], "dovecote project: unexpected argument 'ls'; project takes a subcommand"),
    (["token", "nope"], "dovecote token: unexpected argument 'nope'; token takes a subcommand"),
    (["gesture-key", "get"], "dovecote gesture-key: unexpected argument 'get'; gesture-key takes a subcommand "
     "(subcommands: set)"),
    (["sweep", "atlas"], "dovecote sweep: unexpected argument 'atlas'; sweep takes options only"),
    (["doctor", "now"], "dovecote doctor: unexpected argument 'now'; doctor takes options only"),
    (["claim", "ent_a", "abc", "extra"], "dovecote claim: unexpected argument 'extra'; claim takes "),
    (["box", "home", "project:atlas"], "dovecote box: unexpected argument 'project:atlas'; box takes "),
    (["project", "list", "all"], "dovecote project list: unexpected argument 'all'; list takes options only"),
    (["mission", "show", "m1", "m2"], "dovecote mission show: unexpected argument 'm2'; show takes "),
    (["token", "revoke", "t1", "t2"], "dovecote token revoke: unexpected argument 't2'; revoke takes "),
]


@pytest.mark.parametrize(("args", "said"), STRAY, ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_a_stray_word_names_its_command_and_what_it_takes(args: list[str], said: str) -> None:
    res = _run(*args)
    assert res.returncode == 2, res.stderr
    error = res.stderr.strip().splitlines()[-1]
    assert error.startswith("Error: invalid_field: " + said), res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""

"""Docs that cannot drift: the README's generated sections match the code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer.main

from dovecote.cli.app import app
from dovecote.errors import REASONS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_readme_generated_sections_are_current() -> None:
    """`cog --check` fails when a command's --help, the keyword table or the layer map changed without its page."""
    cog = Path(sys.executable).parent / "cog"
    for page in ("README.md", "docs/architecture.md"):
        res = subprocess.run([str(cog), "--check", page], cwd=ROOT, capture_output=True, text=True)
        assert res.returncode == 0, f"{page} is stale; run `.venv/bin/cog -r {page}`\n{res.stdout}{res.stderr}"


def _commands(cmd: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path] if path else []
    for name, sub in getattr(cmd, "commands", {}).items():
        out += _commands(sub, (*path, name))
    return out


def test_every_command_has_help_and_a_reference_entry() -> None:
    commands = _commands(typer.main.get_command(app))
    assert len(commands) > 10
    for path in commands:
        title = " ".join(("dovecote", *path))
        assert f"### `{title}`" in README, f"{title} is missing from the CLI reference"


def test_every_refusal_keyword_is_documented() -> None:
    for keyword in REASONS:
        assert f"`{keyword}`" in README, f"refusal keyword {keyword} is not in the README"


def test_readme_shows_the_two_commands() -> None:
    assert "make run" in README and "make test" in README


def test_no_source_or_help_cites_a_tracker_number() -> None:
    """Comments, docstrings and --help say the rule itself: a reader of this repository has no tracker to look
    "issue 9" up in (the README's generated CLI reference carries the help texts, so it is checked too)."""
    import re

    cite = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for path in [*sorted((ROOT / "src").rglob("*.py")), ROOT / "README.md"]
             for n, line in enumerate(path.read_text().splitlines(), 1) if cite.search(line)]
    assert found == [], "\n".join(found)

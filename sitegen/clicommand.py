"""The click command behind the Typer app, for mkdocs-click to walk: every command, subcommand and option."""

from __future__ import annotations

import typer.main

from dovecote.cli.app import app

cli = typer.main.get_command(app)

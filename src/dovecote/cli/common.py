"""What every command module shares: the home and actor this process binds, and the common options.

The CLI binds two things no verb carries: which home (``--home``) and who acts
(``bound_actor``). Everything else a command takes is a field of its verb
(``dovecote.verbs``), made from it by ``cli.options``; ``tests/handle/test_verb_drift.py``
holds the two to each other.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from dovecote.cli.actor import bound_actor
from dovecote.cli.listing import DEFAULT_LIMIT
from dovecote.handle.api import Dovecote, open_home

_home: dict[str, Optional[str]] = {"path": None}

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (stable, documented) instead of a summary.")]
#: A long text listing's rows (``cli.listing``); never the JSON's.
LimitOpt = Annotated[
    Optional[int],
    typer.Option("--limit", min=1, help=f"Text: list at most N rows (default {DEFAULT_LIMIT}); --json lists all."),
]
NoLimitOpt = Annotated[bool, typer.Option("--no-limit", help="Text: list every row.")]


def set_home(path: Optional[str]) -> None:
    _home["path"] = path


def home_path() -> Optional[str]:
    """The home named by ``--home`` (None: found the way git finds a repository)."""
    return _home["path"]


def opened() -> Dovecote:
    """The handle on this process's home, with its actor bound."""
    return open_home(_home["path"], actor=bound_actor())

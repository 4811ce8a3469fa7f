"""What every command module shares: the home and actor this process binds, and the common options.

The CLI binds two things no verb carries: which home (``--home``) and who acts
(``bound_actor``). Everything else a command takes is a field of its verb
(``dovecote.verbs``); ``tests/test_verb_drift.py`` holds the two to each other.
"""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from dovecote.api import Actor, Dovecote, open_home
from dovecote.verbs import Verb, choices

_home: dict[str, Optional[str]] = {"path": None}

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (stable, documented) instead of a summary.")]


def one_of(verb: type[Verb], field: str) -> str:
    """The metavar of an option that takes a closed vocabulary: ``[a|b|c]``.

    Such an option takes text and the verb decodes it, so a value outside the
    vocabulary is refused ``invalid_field`` (exit 2) exactly as over MCP.
    """
    return "[" + "|".join(choices(verb, field)) + "]"


def repeated(text: str, how: str) -> str:
    """The help of an option given once per value: the field's doc, and how to repeat it."""
    return f"{text.rstrip('.')} ({how})."


def set_home(path: Optional[str]) -> None:
    _home["path"] = path


def home_path() -> Optional[str]:
    """The home named by ``--home`` (None: found the way git finds a repository)."""
    return _home["path"]


def bound_actor() -> Actor:
    """Who acts for this process: the one place the CLI reads its identity from the environment.

    ``$DOVECOTE_AGENT`` names the agent (a report's author, a transition's actor;
    ``--agent`` and ``--actor`` override it per call), ``$DOVECOTE_ENTITY`` the
    entity it speaks for (the default inbox and sender), ``$USER`` the login
    (a report's author when no agent is named).
    """
    env = os.environ.get
    return Actor(agent=env("DOVECOTE_AGENT") or None, entity=env("DOVECOTE_ENTITY") or None, user=env("USER") or None)


def opened() -> Dovecote:
    """The handle on this process's home, with its actor bound."""
    return open_home(_home["path"], actor=bound_actor())

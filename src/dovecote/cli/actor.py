"""Who acts for this CLI process, read from the environment (light: no Typer, no Rich)."""

from __future__ import annotations

import os

from dovecote.handle.search import Actor  # not dovecote.handle.api: the cold search path stays light


def bound_actor() -> Actor:
    """Who acts for this process: the one place the CLI reads its identity from the environment.

    ``$DOVECOTE_AGENT`` names the agent (a report's author, a transition's actor;
    ``--agent`` and ``--actor`` override it per call), ``$DOVECOTE_ENTITY`` the
    entity it speaks for (the default inbox and sender), ``$USER`` the login
    (a report's author when no agent is named).
    """
    env = os.environ.get
    return Actor(agent=env("DOVECOTE_AGENT") or None, entity=env("DOVECOTE_ENTITY") or None, user=env("USER") or None)

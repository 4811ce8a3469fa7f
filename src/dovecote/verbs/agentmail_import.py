"""The verb of importing an mcp_agent_mail database: ``import agent-mail PATH [--write]``."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from dovecote.verbs.base import Verb
from dovecote.verbs.limits import PathText


class ImportAgentMail(Verb, frozen=True):
    """Read an mcp_agent_mail database; with write, import its projects, agents, messages and reservations."""

    path: Annotated[
        PathText, Meta(min_length=1, description="Their storage root (holding storage.sqlite3) or the SQLite file.")
    ]
    write: Annotated[
        bool, Meta(description="Register the names and append the letters (default: a dry run).")
    ] = False

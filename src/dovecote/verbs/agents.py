"""The verbs of waking agents that are operator work at a terminal: tokens and hook configurations.

They are verbs like the others (the CLI is checked against them), but no
remote face offers them: a token is never issued, listed or revoked over MCP
or REST (whoever holds a token could otherwise mint more, or see who else has
one), and a hook configuration is a file in a project on this machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar

from msgspec import Meta

from dovecote.model.vocab import HookAgent, TokenRole
from dovecote.verbs.base import Name, Verb
from dovecote.verbs.limits import ID, PathText


class TokenIssue(Verb, frozen=True):
    """Issue a token bound to an entity; it is shown once, and only its hash is stored."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    entity_id: Annotated[Name, Meta(description="The entity the token acts as.")]
    role: Annotated[TokenRole, Meta(description="agent (its own box only) or operator.")] = TokenRole.agent


class TokenList(Verb, frozen=True):
    """Every issued token (id, entity, role, created, revoked), never the token itself."""


class TokenRevoke(Verb, frozen=True):
    """Revoke a token by id (an appended record; the token stops working at once)."""

    token_id: Annotated[
        str, Meta(min_length=1, max_length=ID, description="The token's id, as `token list` shows it.")
    ]


class HooksInstall(Verb, frozen=True):
    """Write an agent's hook configuration so its hooks call `dovecote hook`."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    agent: Annotated[HookAgent, Meta(description="claude-code or codex.")]
    entity_id: Annotated[Name, Meta(description="The entity whose mail the agent is told of.")]
    project_dir: Annotated[
        PathText, Meta(min_length=1, description="The project the agent runs in (default: here).")
    ] = "."
    dry_run: Annotated[bool, Meta(description="Print the diff; write nothing.")] = False

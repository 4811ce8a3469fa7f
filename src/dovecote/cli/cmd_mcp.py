"""``dovecote mcp``: the MCP face on stdio (for an agent's config) or on HTTP (``--http``).

Who the connection acts as is bound here, once: a token (``--token`` or
``$DOVECOTE_TOKEN``) is resolved through the handle to its entity and role;
``--as ENTITY`` without a token is the local user acting as that entity, with an
agent's rights (its own box only); neither is the local operator (every box,
like the CLI itself, and the folders of this machine: ``import_vnext``). Over
HTTP each request carries its own bearer token instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Optional

import typer

from dovecote.cli.actor import bound_actor
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote, Principal


def principal_for(dc: Dovecote, entity: Optional[str], token: Optional[str]) -> Principal:
    """The principal a stdio connection is bound to (see the module doc)."""
    if token:
        p = dc.authenticate(token)
        if entity is not None and entity != p.entity:
            raise Refusal("forbidden", f"the token is bound to {p.entity}, not {entity}")
        return p
    if entity is not None:
        if not any(e.id == entity for e in dc.entities()):
            raise Refusal("unknown_entity", f"{entity!r} is not a registered entity (dovecote entity add)")
        return Principal(entity, "agent")
    return Principal(bound_actor().sender(), "operator", local=True)


def register(app: typer.Typer, open_home: Callable[[], Dovecote]) -> None:
    """Add `mcp` to ``app``; ``open_home`` opens the home the global options name."""

    @app.command("mcp")
    def mcp_cmd(
        entity: Annotated[
            Optional[str], typer.Option("--as", help="Act as this entity: its own box only (the agent's rights).")
        ] = None,
        token: Annotated[
            Optional[str], typer.Option("--token", envvar="DOVECOTE_TOKEN", show_envvar=True,
                                        help="Act as this token's entity and role.")
        ] = None,
        read_only: Annotated[bool, typer.Option("--read-only", help="Refuse every tool that writes.")] = False,
        http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP at /mcp instead of stdio.")] = False,
        host: Annotated[str, typer.Option("--host", help="With --http: the address to listen on.")] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", help="With --http: the port.")] = 8848,
        profile: Annotated[str, typer.Option(
            "--profile", help="dovecote's own tools, or agent-mail: mcp_agent_mail's core tools (stdio).")
        ] = "dovecote",
    ) -> None:
        """Serve the MCP face: agent tools and box resources.

        Tools over the agent verbs, and inbox:// and box:// resources with subscribe.

        On stdio the connection is bound to --as / --token; over --http each request sends
        Authorization: Bearer <token>.
        """
        if profile not in ("dovecote", "agent-mail"):
            raise Refusal("invalid_field", f"--profile must be dovecote or agent-mail, not {profile!r}")
        dc = open_home()
        if profile == "agent-mail":
            if http:
                raise Refusal("invalid_field", "--profile agent-mail runs on stdio; over HTTP, dovecote serve "
                                               "serves it at /agent-mail/mcp")
            from dovecote.mcp import agentmail

            agentmail.run_stdio(dc, principal_for(dc, entity, token))
            return
        if http:
            from dovecote.mcp import http as mcp_http

            mcp_http.run(dc, host=host, port=port, read_only=read_only)
            return
        from dovecote.mcp import server

        server.run_stdio(dc, principal_for(dc, entity, token), read_only=read_only)

"""The MCP face over streamable HTTP: an ASGI app whose every request carries a bearer token.

``app(dc)`` is what ``dovecote serve`` mounts at ``/mcp`` and what
``dovecote mcp --http`` runs on its own. The middleware authenticates the
``Authorization: Bearer <token>`` of each request through the handle (a revoked
token stops working at once) and leaves the principal in the request's state,
where the tool and resource handlers find it; a request without a valid token is
answered 401 with the one error shape (``Refusal.body``), before MCP sees it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.handle.remote import bearer
from dovecote.http.headers import secured
from dovecote.mcp.server import PRINCIPAL_KEY, Face, build

if TYPE_CHECKING:
    from dovecote.mcp.agentmail import AgentMailFace


class BearerAuth:
    """ASGI middleware: the principal of each HTTP request's bearer token, or 401.

    ``optional``: a request with no ``Authorization`` header passes with no principal (the agent-mail profile
    on a loopback server, whose calls carry their agents' tokens)."""

    def __init__(self, inner: ASGIApp, face: Face | AgentMailFace, *, optional: bool = False) -> None:
        self.inner = inner
        self.face = face
        self.optional = optional

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        send = secured(send)  # the headers every answer of the server carries, its refusals' included
        headers = dict(scope.get("headers", []))
        given = headers.get(b"authorization")
        if given is None and self.optional:
            await self.inner(scope, receive, send)
            return
        try:
            token = bearer(given.decode("latin-1") if given is not None else "") or ""  # no header: refused there
            principal = self.face.dc.authenticate_cached(token) or await self.face.run(
                self.face.dc.authenticate, token)  # a worker reads a changed token file
        except Refusal as r:
            await _reply(send, r.status, r.body())
            return
        scope.setdefault("state", {})[PRINCIPAL_KEY] = principal
        await self.inner(scope, receive, send)


async def _reply(send: Send, status: int, body: dict[str, Any]) -> None:
    data = orjson.dumps(body)
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
        (b"www-authenticate", b"Bearer"),
    ]})
    await send({"type": "http.response.body", "body": data})


def app(
    dc: Dovecote, *, read_only: bool = False, path: str = "/mcp", host: str = "127.0.0.1", stateless: bool = False
) -> BearerAuth:
    """The streamable-HTTP ASGI app of ``dc``'s MCP face, at ``path``; tokens bind each request.

    ``host`` is what the server listens on: on loopback the SDK's DNS-rebinding
    guard admits only loopback Host and Origin headers. ``stateless``: no MCP
    session outlives its request (``serve --workers N``: the next request may
    reach another process), so subscriptions are refused (``Face.stateless``).
    """
    face = build(dc, read_only=read_only)
    face.stateless = stateless
    face.server.middleware = []  # the SDK's default OpenTelemetry span per message: no exporter here
    inner = face.server.streamable_http_app(streamable_http_path=path, host=host, json_response=True,
                                            stateless_http=stateless)
    return BearerAuth(inner, face)


def agent_mail_app(dc: Dovecote, *, host: str = "127.0.0.1", port: int = 0, tokenless: bool = False) -> BearerAuth:
    """The agent-mail profile's streamable-HTTP ASGI app at ``/agent-mail/mcp``: stateless, JSON answers (as
    mcp_agent_mail serves), a bearer token optional on a loopback server (``tokenless``), required otherwise."""
    from dovecote.mcp.agentmail import PATH, AgentMailFace

    face = AgentMailFace(dc, where=f"{host}:{port}")
    face.server.middleware = []  # the SDK's default OpenTelemetry span per message: no exporter here
    inner = face.server.streamable_http_app(streamable_http_path=PATH, host=host, json_response=True,
                                            stateless_http=True)
    return BearerAuth(inner, face, optional=tokenless)


class InFront:
    """The MCP faces in front of another ASGI app (``dovecote serve``: the web faces).

    Requests under ``/mcp`` go to MCP (its own bearer tokens), those under each
    of ``more``'s paths to that app (the agent-mail profile at ``/agent-mail/mcp``);
    everything else goes to ``other``, which has no lifespan of its own. The
    lifespan is each MCP app's session manager, closed before shutdown is reported
    complete (so a Ctrl-C ends quietly).
    """

    def __init__(self, mcp: BearerAuth, other: ASGIApp, path: str = "/mcp",
                 more: tuple[tuple[str, BearerAuth], ...] = ()) -> None:
        self.mcp, self.other, self.path = mcp, other, path
        self.mounts = ((path, mcp), *more)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        path = scope.get("path", "")
        if scope["type"] == "http":
            for at, mounted in self.mounts:
                if path == at or path.startswith(at + "/"):
                    await mounted(scope, receive, send)
                    return
        await self.other(scope, receive, send)


    async def _lifespan(self, receive: Receive, send: Send) -> None:
        async with contextlib.AsyncExitStack() as stack:
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    try:
                        for _, mounted in self.mounts:
                            inner: Any = mounted.inner
                            await stack.enter_async_context(inner.router.lifespan_context(inner))
                    except Exception as e:  # reported to the server, which then refuses to start
                        await send({"type": "lifespan.startup.failed", "message": f"mcp: {e}"})
                        return
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await stack.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return


def in_front_of(
    other: ASGIApp, dc: Dovecote, *, read_only: bool = False, host: str = "127.0.0.1", stateless: bool = False,
    port: int = 0, tokenless: bool = False,
) -> InFront:
    """``other`` with the MCP face of ``dc`` at ``/mcp`` and the agent-mail profile at ``/agent-mail/mcp``
    (see ``InFront``; ``tokenless``: a loopback server, where the profile admits a request with no token). A
    read-only server does not mount the profile: every one of its sends, reads and marks would go through
    writes it refuses elsewhere, and it has no deny list of its own."""
    from dovecote.mcp.agentmail import PATH

    mcp = app(dc, read_only=read_only, host=host, stateless=stateless)
    more = () if read_only else ((PATH, agent_mail_app(dc, host=host, port=port, tokenless=tokenless)),)
    return InFront(mcp, other, more=more)


def run(dc: Dovecote, *, host: str = "127.0.0.1", port: int = 8848, read_only: bool = False) -> None:
    """Serve the MCP face on ``host:port`` until interrupted (``dovecote mcp --http``)."""
    import uvicorn

    from dovecote.http.shield import Protocol, Shield

    uvicorn.run(Shield(app(dc, read_only=read_only, host=host)), http=Protocol, host=host, port=port,
                log_level="warning", lifespan="on")

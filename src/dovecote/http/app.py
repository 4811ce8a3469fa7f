"""The HTTP face: one Starlette app over one warm handle.

Law: the app holds one ``Dovecote`` for its whole life (warm folds, warm
readers) and calls it only through ``Runner`` (``runner.py``): in worker
threads, several calls at once, never on the event loop (a durable write's
fsync, or a cold read of a big ledger, must not stall the event streams).
Mounted here:

    /api/v1/...        REST (``rest.ROUTES``) and /api/v1/events (``events``)
    /openapi.json      the OpenAPI 3.1 document (``openapi``)
    /, /triage, ...    the Human View (``pages``), /static its CSS and script
    /login/{token}     the one-time login link (``session``)

``read_only`` switches off every route in ``WRITES`` (today the login, the only
state the server keeps; the write routes join the list when they land).
``token`` set (a non-loopback bind) means every request needs
``Authorization: Bearer <token>``, except the login link and the requests of
the session it opened; ``hosts`` set means a request naming another Host is
refused (a loopback server must not answer a page that rebound its DNS).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from dovecote.api import Dovecote
from dovecote.errors import DovecoteError, Refusal
from dovecote.http import errors, events, openapi, rest
from dovecote.http.pages import Pages
from dovecote.http.runner import Runner
from dovecote.http.session import LOGIN_PATH, Sessions

#: Routes that change state, by name: refused ``read_only`` under ``--read-only``.
WRITES = frozenset({"login"})


class Guard:
    """The checks before any route: the Host, and the bearer token of a server open to the network."""

    def __init__(self, app: ASGIApp, *, token: str | None, hosts: Sequence[str] | None, sessions: Sessions) -> None:
        self.app = app
        self.token = token
        self.hosts = frozenset(h.lower() for h in hosts) if hosts is not None else None
        self.sessions = sessions

    def refusal(self, request: Request) -> Refusal | None:
        if self.hosts is not None and (request.url.hostname or "").lower() not in self.hosts:
            return Refusal("invalid_field", f"the Host header {request.headers.get('host', '')!r} is not this server")
        if self.token is None or request.url.path.startswith("/login/"):
            return None
        given = request.headers.get("authorization", "")
        if given.startswith("Bearer ") and hmac.compare_digest(given[7:].encode(), self.token.encode()):
            return None
        if self.sessions.person(request) is not None:
            return None
        return Refusal("unauthorized", "this server is open to the network: send Authorization: Bearer <token>")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope)
            refused = self.refusal(request)
            if refused is not None:
                response = await errors.handle(request, refused)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _read_only(request: Request) -> Response:
    raise Refusal("read_only", f"{request.method} {request.url.path} changes state; this server runs --read-only")


def create_app(
    handle: Dovecote,
    *,
    read_only: bool = False,
    token: str | None = None,
    hosts: Sequence[str] | None = None,
    sessions: Sessions | None = None,
    interval: float = events.INTERVAL,
) -> Starlette:
    """The app over ``handle`` (see the module docstring); ``sessions`` holds the login links it honours."""
    run = Runner(handle)
    table = sessions if sessions is not None else Sessions()
    pages = Pages(run, table)
    spec = openapi.document()

    async def events_endpoint(request: Request) -> Response:
        return await events.stream(request, run, interval=interval)

    async def openapi_endpoint(request: Request) -> Response:
        rest.parse(rest.NoParams, request)
        return rest.json_response(spec)

    def guarded(path: str, endpoint: Callable[..., Any], name: str) -> Route:
        return Route(path, _read_only if read_only and name in WRITES else endpoint, methods=["GET"], name=name)

    api: list[BaseRoute] = [*rest.routes(run), Route(events.PATH, events_endpoint, methods=["GET"], name="events")]
    routes: list[BaseRoute] = [
        Mount("/api/v1", routes=api),
        Route("/openapi.json", openapi_endpoint, methods=["GET"], name="openapi"),
        guarded("/", pages.overview, "overview"),
        guarded("/triage", pages.triage, "triage"),
        guarded("/search", pages.search, "search"),
        guarded("/entities/{id}", pages.entity, "entity"),
        guarded("/entities/{id}/items/{ref}", pages.item, "item"),
        guarded(LOGIN_PATH, pages.login, "login"),
        Mount("/static", StaticFiles(packages=[("dovecote.http", "static")]), name="static"),
    ]
    handlers: dict[Any, Any] = {Exception: errors.handle, HTTPException: errors.handle, DovecoteError: errors.handle,
                                OSError: errors.handle}
    app = Starlette(routes=routes, exception_handlers=handlers)
    app.state.sessions = table
    app.state.read_only = read_only
    app.add_middleware(Guard, token=token, hosts=hosts, sessions=table)
    return app

"""The HTTP face: one Starlette app over one warm handle.

Law: the app holds one ``Dovecote`` for its whole life (warm folds, warm
readers) and calls it only through ``Runner`` (``runner.py``): in worker
threads, several calls at once, never on the event loop (a durable write's
fsync, or a cold read of a big ledger, must not stall the event streams).
Mounted here:

    /api/v1/...        REST (``rest.ROUTES``) and /api/v1/events (``events``)
    /openapi.json      the OpenAPI 3.1 document (``openapi``)
    /, /triage, ...    the Human View (``pages``; /cases ``pages_cases``), /static its CSS and script
    /delivery          the delivery page (``pages_delivery``)
    /missions          the missions page, and POST /missions/{mission_id}/{gesture}: the signed-in person's
                       archive and receipt import (``pages_missions``)
    /leases            per project, who holds which paths until when (``pages_leases``)
    /login/{token}     the one-time login link (``session``)
    POST /entities/{entity_id}/items/{ref}/{kind}   the signed-in person's moves (``pages.act``)
    /compose, POST /entities/{entity_id}/items/{ref}/reply   the person's letters (``pages_write``)

``read_only`` refuses every route whose verb writes, by the one deny list
(``verbs.writes``, the function MCP asks): the REST writes and the page's
actions are lifecycle moves and sends. The login link is not a verb but it
changes the server's own state (it opens a session), so it is denied as server
state (``SERVER_STATE``), and a read-only server prints no link.

Who a request is (``Guard``): a request carrying ``Authorization: Bearer
<token>`` is the token's principal (``Dovecote.authenticate`` over the token
file, the check MCP's ``BearerAuth`` makes: one rule), and a bad token is
``unauthorized`` whatever the route. On loopback, a request without a token
reads (``remote``: it writes nothing). With ``remote`` (``--allow-remote``)
every request needs a valid token, or the session of the login link (the
person at the screen reads pages and events; it writes only through the page's
forms); the login link itself needs neither. ``hosts`` set means a request
naming another Host is refused (a loopback server must not answer a page that
rebound its DNS). Every answer carries the headers of ``headers`` (no site may
frame a page; no inline script runs), added outside everything (``App``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from dovecote.errors import DovecoteError, Refusal
from dovecote.handle.api import Dovecote, Principal
from dovecote.handle.remote import bearer
from dovecote.http import (
    dispatch,
    errors,
    events,
    headers,
    openapi,
    pages_delivery,
    pages_leases,
    pages_missions,
    pages_needs,
    pages_write,
    rest,
)
from dovecote.http.pages import Pages
from dovecote.http.pages_cases import cases_page
from dovecote.http.runner import Pool, Runner
from dovecote.http.session import LOGIN_PATH, Sessions

#: Page routes that are no verb but change the server's own state (a session): refused under ``--read-only``.
SERVER_STATE = frozenset({"login"})


class Guard:
    """The checks before any route: the Host, and who the request is (see the module docstring).

    It reads the scope's headers itself (no ``Request`` and no URL is built for a
    request that passes), then hands a REST request straight to its route
    (``dispatch.Index``) and anything else to the rest of the app.
    """

    def __init__(self, app: ASGIApp, *, handle: Dovecote, remote: bool, hosts: Sequence[str] | None,
                 sessions: Sessions, index: dispatch.Index | None = None) -> None:
        self.app = app
        self.handle = handle
        self.remote = remote
        self.hosts = frozenset(h.lower() for h in hosts) if hosts is not None else None
        self.sessions = sessions
        self.index = index
        self._checks = Pool(4, "dovecote-auth")  # a token file read: never the handle's worker

    async def principal(self, scope: Scope, headers: dict[bytes, bytes]) -> Principal | None:
        """The principal of the request's bearer token; None without one; refuses what it cannot admit."""
        if self.hosts is not None and host_name(scope, headers) not in self.hosts:
            given = headers.get(b"host", b"").decode("latin-1")
            raise Refusal("wrong_host", f"the Host header {given!r} is not this server")
        given_token = headers.get(b"authorization")
        token = bearer(given_token.decode("latin-1") if given_token is not None else None)
        if token is not None:
            cached = self.handle.authenticate_cached(token)  # a stat: the file as last read
            if cached is not None:
                return cached
            found: Principal = await self._checks(self.handle.authenticate, token)
            return found
        if self.remote and not scope["path"].startswith("/login/") and self.sessions.person(Request(scope)) is None:
            raise Refusal("unauthorized", "this server is open to the network: send Authorization: Bearer <token> "
                                          "(dovecote token issue), or open the login link")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                who = await self.principal(scope, dict(reversed(scope["headers"])))  # the first of a repeated header
            except Refusal as refused:
                response = await errors.handle(Request(scope), refused)
                await response(scope, receive, send)
                return
            scope.setdefault("state", {})[rest.PRINCIPAL] = who
            if self.index is not None and (route := self.index.find(scope)) is not None:
                await self.index.serve(route, scope, receive, send)
                return
        await self.app(scope, receive, send)


def host_name(scope: Scope, headers: dict[bytes, bytes]) -> str:
    """The host a request names, lower case, without port or IPv6 brackets (as Starlette's
    ``request.url.hostname``): its Host header, else the address it came in on."""
    given = headers.get(b"host")
    if given is None:
        server = scope.get("server")
        return str(server[0]).lower() if server else ""
    return (urlsplit("//" + given.decode("latin-1")).hostname or "").lower()


class App(Starlette):
    """Starlette with ``headers.Secured`` outside everything, its last-resort 500 page included."""

    def build_middleware_stack(self) -> ASGIApp:
        return headers.Secured(super().build_middleware_stack())


async def _read_only(request: Request) -> Response:
    raise Refusal("read_only", f"{request.method} {request.url.path} changes state; this server runs --read-only")


def create_app(
    handle: Dovecote,
    *,
    read_only: bool = False,
    remote: bool = False,
    hosts: Sequence[str] | None = None,
    sessions: Sessions | None = None,
    interval: float = events.INTERVAL,
) -> Starlette:
    """The app over ``handle`` (see the module docstring); ``sessions`` holds the login links it honours."""
    run = Runner(handle)
    table = sessions if sessions is not None else Sessions()
    pages = Pages(run, table, read_only=read_only)
    stamps = Pool(4, "dovecote-stamp")

    async def stamp(address: str) -> Any:  # a stat of one ledger: never the handle's worker (see longpoll)
        return await stamps(handle.stamp, address)
    spec = openapi.document()

    async def events_endpoint(request: Request) -> Response:
        return await events.stream(request, run, interval=interval)

    async def cases_endpoint(request: Request) -> Response:
        return await cases_page(pages, request)

    async def openapi_endpoint(request: Request) -> Response:
        rest.parse(rest.NoParams, request)
        return rest.json_response(spec)

    def guarded(path: str, endpoint: Callable[..., Any], name: str) -> Route:
        return Route(path, _read_only if read_only and name in SERVER_STATE else endpoint, methods=["GET"],
                     name=name)

    missions_page, missions_gesture = pages_missions.endpoints(pages)
    compose_form, compose_send, reply = pages_write.endpoints(pages)
    api: list[BaseRoute] = [*rest.routes(run, read_only=read_only, stamp=stamp),
                            Route(events.PATH, events_endpoint, methods=["GET"], name="events")]
    routes: list[BaseRoute] = [
        Mount("/api/v1", routes=api),
        Route("/openapi.json", openapi_endpoint, methods=["GET"], name="openapi"),
        guarded("/", pages.overview, "overview"),
        guarded("/needs", pages_needs.endpoint(pages), "needs"),
        guarded("/triage", pages.triage, "triage"),
        guarded("/cases", cases_endpoint, "cases"),
        guarded("/search", pages.search, "search"),
        guarded("/delivery", pages_delivery.endpoint(pages), "delivery"),
        guarded("/missions", missions_page, "missions"),
        guarded("/leases", pages_leases.endpoint(pages), "leases"),
        Route("/missions/{mission_id}/{gesture}", missions_gesture, methods=["POST"], name="mission_gesture"),
        guarded("/entities/{entity_id}", pages.entity, "entity"),
        guarded("/entities/{entity_id}/items/{ref}", pages.item, "item"),
        Route("/compose", compose_form, methods=["GET"], name="compose"),
        Route("/compose", compose_send, methods=["POST"], name="compose_send"),
        Route("/entities/{entity_id}/items/{ref}/reply", reply, methods=["POST"], name="reply"),
        Route("/entities/{entity_id}/items/{ref}/{kind}", pages.act, methods=["POST"], name="act"),
        guarded(LOGIN_PATH, pages.login, "login"),
        Mount("/static", StaticFiles(packages=[("dovecote.http", "static")]), name="static"),
    ]
    handlers: dict[Any, Any] = {Exception: errors.handle, HTTPException: errors.handle, DovecoteError: errors.handle,
                                OSError: errors.handle}
    app = App(routes=routes, exception_handlers=handlers)
    app.state.sessions = table
    app.state.read_only = read_only
    app.add_middleware(Guard, handle=handle, remote=remote, hosts=hosts, sessions=table,
                       index=dispatch.Index("/api/v1", [r for r in api if isinstance(r, Route)]))
    return app

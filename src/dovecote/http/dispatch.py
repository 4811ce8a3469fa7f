"""The REST routes reached straight from the app's guard: one dictionary look-up, no middleware walk.

Why: a send through Starlette's stack walked its error and exception
middlewares, then matched the path against every route before it (the Mount,
then each REST route in table order), each step a coroutine frame and a
``get_route_path``: about a third of the event loop's CPU per send (see
``bench/README.md``). ``Index`` finds a request's route by its method and its
first path segment (a few regular expressions at most, the very ones Starlette
compiled for the same routes) and runs its endpoint with the app's one
exception handler (``errors.handle``) around it.

Law: the same routes, the same answers. ``Index`` is built from the Starlette
routes the app also mounts (``rest.routes``), so there is no second table; a
request it does not find (another method on a REST path: 405; a trailing
slash: the redirect; every page) goes on to the Starlette app unchanged, and
every failure of an endpoint is rendered by the same handler Starlette calls.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from dovecote.http import errors


def _first_segment(path: str) -> str:
    return path[1:].partition("/")[0]


class Index:
    """The REST routes by (method, first segment) under ``prefix`` (see the module docstring)."""

    def __init__(self, prefix: str, routes: Sequence[Route]) -> None:
        self.prefix = prefix
        self._routes: dict[tuple[str, str], list[Route]] = {}
        for r in routes:
            head = _first_segment(r.path)
            if head.startswith("{"):  # a parameter first: no key can find it, so Starlette serves it
                continue
            for method in r.methods or ():
                self._routes.setdefault((method, head), []).append(r)

    def find(self, scope: Scope) -> Route | None:
        """The route that answers ``scope`` with its path parameters put in the scope, or None."""
        path: str = scope["path"]
        if not path.startswith(self.prefix) or scope.get("root_path"):
            return None
        rest = path[len(self.prefix):]
        for r in self._routes.get((scope["method"], _first_segment(rest)), ()):
            match = r.path_regex.match(rest)
            if match is not None:
                found = match.groupdict()
                scope["path_params"] = {k: r.param_convertors[k].convert(v) for k, v in found.items()}
                scope["endpoint"] = r.endpoint
                return r
        return None

    async def serve(self, route: Route, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer with ``route``'s endpoint; any failure as the app's exception handler renders it."""
        request = Request(scope, receive, send)
        try:
            response = await route.endpoint(request)
        except Exception as exc:  # the one handler of every failure (errors.py), as Starlette would call it
            response = await errors.handle(request, exc)
        await response(scope, receive, send)


"""The guard's direct REST dispatch (``http/dispatch.py``) finds the route Starlette would, or none."""

from __future__ import annotations

import re

import pytest
from starlette.routing import Match, Route

from dovecote.http import dispatch, rest
from dovecote.http.app import host_name


async def _run(*_: object) -> object:
    return {}


ROUTES = [r for r in rest.routes(_run) if isinstance(r, Route)]


def scope(method: str, path: str) -> dict[str, object]:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}


def concrete(template: str) -> str:
    """A path of ``template`` with every parameter given a value."""
    return re.sub(r"{(\w+)(:\w+)?}", lambda m: "a/b" if m.group(2) == ":path" else "ent_x", template)


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_every_rest_route_is_found_as_starlette_matches_it(route: Route) -> None:
    index = dispatch.Index("/api/v1", ROUTES)
    method = sorted(route.methods or ())[0]
    s = scope(method, "/api/v1" + concrete(route.path))
    found = index.find(s)
    inner = {**scope(method, concrete(route.path))}
    first = next(r for r in ROUTES if r.matches(inner)[0] == Match.FULL)  # Starlette's own first full match
    assert found is first
    assert s["path_params"] == first.matches(inner)[1]["path_params"]


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/api/v1/entities/ent_x/messages"),  # a POST route: Starlette answers 405
    ("GET", "/api/v1/boxes/"),  # Starlette's redirect of the trailing slash
    ("GET", "/api/v1/nope"),
    ("GET", "/boxes"),  # not under the prefix: a page or a 404
    ("GET", "/api/v1"),
])
def test_what_it_does_not_find_goes_on_to_starlette(method: str, path: str) -> None:
    assert dispatch.Index("/api/v1", ROUTES).find(scope(method, path)) is None


@pytest.mark.parametrize(("host", "name"), [
    (b"127.0.0.1:8765", "127.0.0.1"), (b"LOCALHOST", "localhost"), (b"[::1]:8765", "::1"), (b"[::1]", "::1"),
    (b"evil.example:80", "evil.example"),
])
def test_host_name_is_starlettes_hostname(host: bytes, name: str) -> None:
    assert host_name({"server": ("10.0.0.1", 80)}, {b"host": host}) == name


def test_without_a_host_header_the_name_is_the_address_it_came_in_on() -> None:
    assert host_name({"server": ("127.0.0.1", 8765)}, {}) == "127.0.0.1"

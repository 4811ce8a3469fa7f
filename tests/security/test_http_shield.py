"""Every error a real ``dovecote serve`` answers is the one JSON error shape, whichever layer meets it, and REST
and MCP are held to the same request limits (``http/shield.py``).

Raw requests over a socket to one running server: what uvicorn refuses before the app runs (a request it cannot
parse, a URL past what httptools reads, a request head over ``MAX_HEAD``), what the shield refuses (a query string
or a body over the limits table, declared or chunked), what the MCP SDK answers in plain text (a wrong Host or
Origin, a wrong content type, a path it has no route for), MCP's own 401, and a wrong Host on REST: each is the
shape with its keyword, and nothing is written. An exception that escapes the app before it answers is
``internal_error`` (in process).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from dovecote.http.shield import Shield
from dovecote.verbs import MAX_BODY, MAX_HEAD, MAX_QUERY
from helpers import snapshot
from serverhelpers import ENTITY, SENDER, Server, assert_error_shape, served_home, serving

pytestmark = pytest.mark.files_only


@dataclass
class Answer:
    """A raw HTTP answer, read the way ``assert_error_shape`` reads a client's response."""

    status_code: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Served:
    server: Server
    token: str
    root: Path

    def raw(self, data: bytes, body: bytes = b"") -> Answer:
        """Send ``data`` (a request head), then ``body`` while the server still reads it; the answer."""
        host, port = self.server.url.split("//")[1].rsplit(":", 1)
        pieces = [data[at:at + 65536] for at in range(0, len(data), 65536)]
        pieces += [body[at:at + 65536] for at in range(0, len(body), 65536)]
        wait = {len(pieces) - len(range(0, len(body), 65536))} if len(body) > MAX_BODY else set()
        with socket.create_connection((host, int(port)), timeout=20) as s:
            for n, piece in enumerate(pieces):  # stop sending once the server answers (it may refuse early)
                if select.select([s], [], [], 1.0 if n in wait else 0.01)[0]:
                    break
                try:
                    s.sendall(piece)
                except OSError:  # it answered and closed between the look and the send: its answer is read below
                    break
            got = b""
            with contextlib.suppress(ConnectionResetError):
                while b"\r\n\r\n" not in got or len(got) < _length(got):
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    got += chunk
        head, _, rest = got.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
        return Answer(int(lines[0].split()[1]), headers, rest[:_length(got) - len(head) - 4])

    def request(self, method: str, path: str, body: bytes = b"", *, host: str | None = None,
                extra: tuple[str, ...] = (), token: bool = True) -> Answer:
        given = host if host is not None else self.server.url.split("//")[1]
        head = [f"{method} {path} HTTP/1.1", f"Host: {given}", "Accept: application/json, text/event-stream",
                "Connection: close", *extra] + ([f"Authorization: Bearer {self.token}"] if token else [])
        if body and not any(x.lower().startswith("transfer-encoding") for x in extra):
            head.append(f"Content-Length: {len(body)}")
        if body and not any(x.lower().startswith("content-type") for x in extra):
            head.append("Content-Type: application/json")
        return self.raw(("\r\n".join(head) + "\r\n\r\n").encode(), body)


def _length(got: bytes) -> int:
    head, sep, _ = got.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(head) + len(sep) + int(line.split(b":")[1])
    return 1 << 62


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("shield")
    dc = served_home(tmp)
    token = dc.token_issue(SENDER, "operator").token
    with serving(tmp, dc.layout.root) as server:
        yield Served(server, token, dc.layout.root)


def _ledgers(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in snapshot(root).items() if k.endswith(".jsonl")}


def _call(arguments: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "send", "arguments": arguments}}).encode()


def test_a_request_uvicorn_cannot_parse_is_bad_request_in_the_shape(served: Served) -> None:
    assert_error_shape(served.raw(b"GARBAGE\r\n\r\n"), 400, "bad_request")


@pytest.mark.parametrize("size", [MAX_QUERY + 1, 100_000])
def test_an_over_long_query_string_is_too_large_in_the_shape(served: Served, size: int) -> None:
    for path in ("/api/v1/boxes", "/mcp", "/"):
        assert_error_shape(served.request("GET", f"{path}?q={'a' * size}"), 413, "too_large")


def test_an_over_long_request_head_is_too_large_in_the_shape(served: Served) -> None:
    for size in (MAX_HEAD, 2_000_000):
        big = served.request("GET", "/api/v1/doctor", extra=(f"X-Big: {'a' * size}",))
        assert_error_shape(big, 413, "too_large")
    assert served.request("GET", "/api/v1/doctor", extra=(f"X-Fits: {'a' * (MAX_HEAD // 2)}",)).status_code == 200


def test_mcp_and_rest_refuse_a_body_over_the_one_limit_and_store_nothing(served: Served) -> None:
    before = _ledgers(served.root)
    big = _call({"recipient": ENTITY, "subject": "big", "body": "b" * int(3.9 * (1 << 20))})
    for path in ("/mcp", f"/api/v1/entities/{ENTITY}/messages"):
        assert_error_shape(served.request("POST", path, big), 413, "too_large")
    over = _call({"recipient": ENTITY, "subject": "just over", "body": "b" * MAX_BODY})
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (over[i:i + 65536] for i in range(0, len(over), 65536)))
    answer = served.request("POST", "/mcp", chunked + b"0\r\n\r\n", extra=("Transfer-Encoding: chunked",))
    assert_error_shape(answer, 413, "too_large")
    assert _ledgers(served.root) == before


def test_what_the_mcp_sdk_answers_in_plain_text_is_the_shape(served: Served) -> None:
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    assert_error_shape(served.request("POST", "/mcp", ping, host="evil.example"), 421, "wrong_host")
    assert_error_shape(served.request("POST", "/mcp", ping, extra=("Origin: http://evil.example",)), 421,
                       "wrong_host")
    assert_error_shape(served.request("POST", "/mcp", ping, extra=("Content-Type: text/plain",)), 400, "bad_request")
    assert_error_shape(served.request("GET", "/mcp/nowhere"), 404, "not_found")
    assert_error_shape(served.request("POST", "/mcp", ping, token=False), 401, "unauthorized")


def test_a_wrong_host_is_the_same_refusal_on_rest_as_on_mcp(served: Served) -> None:
    assert_error_shape(served.request("GET", "/api/v1/boxes", host="evil.example"), 421, "wrong_host")


async def _broken(scope: Any, receive: Any, send: Any) -> None:
    raise RuntimeError("a bug")


async def _bug(request: Any) -> Any:
    raise RuntimeError("a bug")


@pytest.mark.parametrize("app", [_broken, Starlette(routes=[Route("/mcp", _bug)])], ids=["bare", "starlette"])
def test_an_exception_that_escapes_the_app_is_internal_error_in_the_shape(app: Any) -> None:
    """A bare app's exception, and Starlette's own plain-text 500 (which it sends, then raises again)."""
    c = TestClient(Shield(app), raise_server_exceptions=False)
    assert_error_shape(c.get("/mcp"), 500, "internal_error")

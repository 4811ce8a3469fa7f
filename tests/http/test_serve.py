"""``dovecote serve`` as a user starts it: the addresses it prints answer, the login link works once,
a non-loopback bind is refused without --allow-remote, and Ctrl-C stops it."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx2 as httpx
import pytest

from dovecote.cli.cmd_serve import is_loopback
from dovecote.verbs import TokenIssue, TokenRevoke, TokenRole
from helpers import run_cli
from serverhelpers import served_home, serving

pytestmark = pytest.mark.files_only


def test_serve_prints_where_to_look_and_each_address_answers(tmp_path: Path) -> None:
    home = served_home(tmp_path).layout.root
    with serving(tmp_path, home) as server:
        assert server.lines[0] == f"dovecote serve: {home}"
        assert server.line("page") == server.url + "/"
        assert server.line("api") == server.url + "/api/v1"
        page = httpx.get(server.line("page"))
        assert page.status_code == 200 and "Not signed in" in page.text
        assert httpx.get(server.line("api") + "/doctor").json()["mailbox"]["available"] is True
        assert httpx.get(server.url + "/openapi.json").json()["openapi"].startswith("3.1")
        login = server.line("login")
        with httpx.Client(follow_redirects=True) as browser:
            r = browser.get(login)
            assert r.status_code == 200 and "Signed in as <strong>alice</strong>" in r.text  # $USER, after the redirect
        assert httpx.get(login).status_code == 403  # once only
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(timeout=10) == 130  # stopped by Ctrl-C, as a shell counts it
        assert server.proc.stderr is not None and server.proc.stderr.read() == b""  # and quietly


def test_read_only_prints_no_login_link(tmp_path: Path) -> None:
    home = served_home(tmp_path).layout.root
    with serving(tmp_path, home, "--read-only") as server:
        assert not any("login:" in x for x in server.lines)
        assert any("read-only" in x for x in server.lines)
        assert httpx.get(server.url + "/api/v1/boxes").status_code == 200


def test_a_non_loopback_host_is_refused_without_allow_remote(tmp_path: Path) -> None:
    home = served_home(tmp_path).layout.root
    r = run_cli(tmp_path, "serve", "--host", "0.0.0.0", "--port", "0", home=home)
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.decode().startswith("Error: remote_not_allowed: 0.0.0.0 is not a loopback address")


def test_allow_remote_needs_a_token_of_the_token_file_on_every_request(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    token = dc.token_issue(TokenIssue(entity_id="ops", role=TokenRole.operator)).token
    revoked = dc.token_issue(TokenIssue(entity_id="ops", role=TokenRole.operator))
    dc.token_revoke(TokenRevoke(token_id=revoked.row.id))
    # Bound to every address, but this test only ever talks to the loopback one.
    with serving(tmp_path, dc.layout.root, "--host", "0.0.0.0", "--allow-remote") as server:
        assert "token issue" in server.line("tokens") or any("dovecote token issue" in x for x in server.lines)
        local = server.url.replace("0.0.0.0", "127.0.0.1")
        assert httpx.get(local + "/api/v1/doctor").status_code == 401
        assert httpx.get(local + "/", follow_redirects=False).status_code == 401
        bad = httpx.get(local + "/api/v1/doctor", headers={"Authorization": f"Bearer {revoked.token}"})
        assert bad.status_code == 401 and bad.json()["reason"] == "unauthorized"
        ok = httpx.get(local + "/api/v1/doctor", headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.0.1", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("0.0.0.0", False), ("10.0.0.1", False), ("example.org", False), ("::", False),
])
def test_what_counts_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_an_idle_keep_alive_connection_outlives_the_clients_own_expiry(tmp_path: Path) -> None:
    """A connection idle for 6 s (past httpx's and the MCP client's 5 s expiry, and uvicorn's default)
    still carries the next request: the server never closes it under a client about to reuse it."""
    import socket
    import time
    from urllib.parse import urlsplit

    from dovecote.cli.cmd_serve import KEEP_ALIVE_SECONDS

    assert KEEP_ALIVE_SECONDS > 5
    home = served_home(tmp_path).layout.root
    with serving(tmp_path, home) as server:
        port = urlsplit(server.url).port
        assert port is not None
        request = f"GET /api/v1/doctor HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            answers = []
            for pause in (0.0, 6.0):
                time.sleep(pause)
                conn.sendall(request)
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(65536)
                    assert chunk, "the server closed the idle connection"
                    head += chunk
                answers.append(head.split(b"\r\n", 1)[0])
                fields = head.split(b"\r\n")
                length = int(next(h.split(b":")[1] for h in fields if h.lower().startswith(b"content-length")))
                body = head.split(b"\r\n\r\n", 1)[1]
                while len(body) < length:
                    body += conn.recv(65536)
        assert answers == [b"HTTP/1.1 200 OK", b"HTTP/1.1 200 OK"]

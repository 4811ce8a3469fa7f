"""``dovecote serve --workers N``: N processes on one port that behave as one server.

Real processes throughout: every acknowledged send is in the ledger whichever worker took it,
the login link works once across all of them and its session on any of them, MCP answers
statelessly (a subscription is refused, not silently dropped), a worker that dies ends the
server, and Ctrl-C stops every worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2 as httpx
import pytest
from mcp.shared.exceptions import MCPError

from dovecote.handle.api import open_home
from dovecote.model.addresses import entity
from dovecote.verbs import TokenIssue
from mailhelpers import ENTITY, SENDER
from mcphelpers import LEGACY, http_client
from serverhelpers import send_each, served_home, serving

pytestmark = pytest.mark.files_only


def workers_of(pid: int) -> list[int]:
    """The child processes of ``pid`` (from /proc)."""
    out: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        out += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return out


def forked(pid: int, n: int) -> list[int]:
    """The ``n`` workers of server ``pid``, once it has forked them (it prints its addresses first)."""
    deadline = time.monotonic() + 10
    while len(found := workers_of(pid)) < n:
        assert time.monotonic() < deadline, found
        time.sleep(0.02)
    return found


def test_every_send_through_any_worker_is_durable_and_ctrl_c_stops_them_all(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    token = dc.token_issue(TokenIssue(entity_id=SENDER)).token
    with serving(tmp_path, dc.layout.root, "--workers", "2") as server:
        assert any(x.strip().startswith("workers: 2 processes") for x in server.lines)
        workers = forked(server.proc.pid, 2)
        assert len(workers) == 2

        acked = send_each(server, token, ENTITY, [f"worker send {i}" for i in range(60)])
        assert len(set(acked)) == 60
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(timeout=15) == 130
        assert server.proc.stderr is not None and server.proc.stderr.read() == b""
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    box = open_home(dc.layout.root).store.read(entity(ENTITY)).index
    assert set(acked) <= set(box)  # acknowledged by either worker: in the ledger, read cold
    subjects = [box[i].data()["content"]["subject"] for i in acked]
    assert sorted(subjects) == sorted(f"worker send {i}" for i in range(60))


def test_the_login_link_works_once_across_workers_and_its_session_on_every_one(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    with serving(tmp_path, dc.layout.root, "--workers", "2") as server:
        login = server.line("login")

        def visit(_: int) -> httpx.Response:
            with httpx.Client(follow_redirects=False) as c:
                return c.get(login)

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(visit, range(12)))
        opened = [r for r in answers if r.status_code < 400]
        assert len(opened) == 1, [r.status_code for r in answers]
        assert all(r.status_code == 403 and "invalid_login" in r.text for r in answers if r not in opened)
        cookie = opened[0].cookies

        def page(_: int) -> str:
            with httpx.Client(cookies=cookie) as c:
                return c.get(server.line("page")).text

        with ThreadPoolExecutor(4) as pool:
            pages = list(pool.map(page, range(12)))
        assert all("Signed in as <strong>alice</strong>" in p for p in pages)
        forged = httpx.Cookies({k: v[:-1] + ("0" if v[-1] != "0" else "1") for k, v in cookie.items()})
        with httpx.Client(cookies=forged) as c:
            assert "Not signed in" in c.get(server.line("page")).text  # a session is its signature


@LEGACY
@pytest.mark.anyio
async def test_mcp_answers_statelessly_and_refuses_a_subscription(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    agent = dc.token_issue(TokenIssue(entity_id=ENTITY)).token
    with serving(tmp_path, dc.layout.root, "--workers", "2") as server:
        for _ in range(3):  # each client session may meet either worker; none needs the other's memory
            async with http_client(server.line("mcp"), agent) as c:
                inbox = await c.call_tool("inbox", {"entity_id": ENTITY})
                assert not inbox.is_error and inbox.structured_content is not None
                assert inbox.structured_content["counts"]
        async with http_client(server.line("mcp"), agent) as c:
            with pytest.raises(MCPError, match="unsupported: this server runs several workers"):
                async with c.listen(resource_subscriptions=[f"inbox://{ENTITY}"]):
                    pass
        async with http_client(server.line("mcp"), agent, mode="legacy") as c:  # and the 2025-era subscribe
            with pytest.raises(MCPError, match="unsupported: this server runs several workers"):
                await c.subscribe_resource(f"inbox://{ENTITY}")


def test_a_worker_that_dies_ends_the_server_and_says_so(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    with serving(tmp_path, dc.layout.root, "--workers", "2") as server:
        first, _ = forked(server.proc.pid, 2)
        os.kill(first, signal.SIGKILL)
        assert server.proc.wait(timeout=60) == 1  # a hang guard (a stop lost in a fork once hung it here)
        assert server.proc.stderr is not None
        said = server.proc.stderr.read().decode()
        assert f"worker {first} failed; stopping the server" in said
        deadline = time.monotonic() + 5
        while workers_of(server.proc.pid) if Path(f"/proc/{server.proc.pid}").exists() else []:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_two_forked_copies_of_the_sessions_burn_a_link_once_and_honour_each_others_cookie(tmp_path: Path) -> None:
    """What each worker holds after the fork, without relying on which worker the kernel hands a connection:
    two copies of one ``Sessions`` (same links, same key, one burnt folder)."""
    from starlette.requests import Request

    from dovecote.errors import Refusal
    from dovecote.http.session import COOKIE, Sessions

    parent = Sessions(burnt=tmp_path)
    link = parent.issue("alice")
    def forked() -> Sessions:  # the fork: each worker its own copy of the links, the same key and folder
        return Sessions(links=dict(parent.links), burnt=parent.burnt, _key=parent._key)

    first, second = forked(), forked()
    cookie, person = first.redeem(link)
    assert person == "alice"
    with pytest.raises(Refusal, match="invalid_login"):
        second.redeem(link)  # burnt by the other worker
    request = Request({"type": "http", "headers": [(b"cookie", f"{COOKIE}={cookie}".encode())]})
    assert second.person(request) == "alice"  # a session any worker opened is good on every one
    lone = Sessions()  # another server's key: the cookie means nothing there
    assert lone.person(request) is None


#: A supervisor of one worker whose stop signal arrives in the moment after its fork, before it has its own
#: signal handling (a sibling that died at once has the supervisor stop every worker): the child sends the
#: signal to itself just before it sets its first handler.
RACE = """
import os, signal, sys, time
from dovecote.cli import cmd_serve

parent, real = os.getpid(), signal.signal

def racing(sig, handler):
    if os.getpid() != parent and sig == signal.SIGINT:
        os.kill(os.getpid(), signal.SIGTERM)
    return real(sig, handler)

signal.signal = racing
began = time.monotonic()
code = cmd_serve._supervise(1, lambda: time.sleep(30))  # a worker that serves for 30 s unless stopped
print(code, round(time.monotonic() - began, 1))
"""


def test_a_stop_that_reaches_a_worker_as_it_is_forked_stops_it(tmp_path: Path) -> None:
    # Unheld, the child ran the supervisor's inherited handler, which passes the stop on to the workers the
    # child knows of (none) and returns: the worker then served on, and the server with it (exit 0 after 30 s).
    done = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    code, took = done.stdout.split()
    assert float(took) < 10 and code == "1", done.stdout + done.stderr  # stopped, and said as a worker's end
    assert "worker" in done.stderr and "stopping the server" in done.stderr

"""Helpers for the HTTP face's tests: a home with mail, the in-process app, and a real ``dovecote serve``."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx

from dovecote.errors import REASONS
from dovecote.handle.api import Dovecote
from dovecote.verbs import Move
from helpers import DOVECOTE_BIN, add_project, cli_env, rep
from mailhelpers import ENTITY, SENDER, mail_home, send

#: The keys of the one error shape; and the failures that are not refusals.
SHAPE = {"ok", "error", "reason", "detail", "status"}
NOT_REFUSALS = {"io_error": 503, "internal_error": 500}


def assert_error_shape(response: Any, status: int, reason: str | None = None) -> dict[str, Any]:
    """The response is the one JSON error shape, its status in the keyword table."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert SHAPE <= set(body) <= SHAPE | {"details"}, body
    assert body["ok"] is False and body["status"] == status
    assert isinstance(body["detail"], str) and body["detail"]
    if reason is not None:
        assert body["reason"] == reason, body
    expected = REASONS[body["reason"]][0] if body["reason"] in REASONS else NOT_REFUSALS[body["reason"]]
    assert expected == status, body
    return body


def served_home(tmp: Path) -> Dovecote:
    """A home with a project, field reports of two fates, and an entity inbox with two items."""
    dc = mail_home(tmp)
    add_project(dc, tmp, "atlas")
    filed = dc.report([rep(repo="atlas", what="seek returned nothing"), rep(repo="atlas", tool="north")], actor="p")
    dc.report([rep(repo="atlas", what="looking", klass="friction", answers=[filed[1][0]])], actor="helper")
    dc.distribute()
    first = send(dc, "index rebuild failed", priority="urgent", category="directive")
    send(dc, "weekly numbers are in")
    dc.move(Move(kind="seen", entity_id=ENTITY, ref=first, current_tic=101))
    return dc


@dataclass
class Server:
    """A running ``dovecote serve``: its base URL, the lines it printed, its process."""

    url: str
    lines: list[str]
    proc: subprocess.Popen[bytes]

    def line(self, label: str) -> str:
        return next(x.split(None, 1)[1].split()[0] for x in self.lines if x.strip().startswith(label + ":"))


@contextmanager
def serving(tmp: Path, home: Path, *args: str, exe: Path = DOVECOTE_BIN) -> Iterator[Server]:
    """Start ``dovecote serve --port 0`` on ``home``, wait for its addresses, stop it (SIGINT) afterwards;
    ``exe`` is the ``dovecote`` to run (another install's, for the packaging test)."""
    env = cli_env(tmp, home, USER="alice")
    proc = subprocess.Popen([str(exe), "serve", "--port", "0", *args], env=env, cwd=tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 30
    fd = proc.stdout.fileno()
    buf = b""
    try:
        while not any(x.startswith("Ctrl-C") for x in lines):
            left = deadline - time.monotonic()
            if left <= 0 or proc.poll() is not None:
                raise AssertionError(f"serve did not start: {lines} {proc.stderr.read() if proc.stderr else ''!r}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                buf += chunk
                *done, buf = buf.split(b"\n")
                lines += [d.decode() for d in done]
        url = re.search(r"http://[^/\s]+", lines[1])
        assert url is not None, lines
        yield Server(url.group(0), lines, proc)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


__all__ = ["ENTITY", "SENDER", "Server", "assert_error_shape", "served_home", "serving"]


def send_each(server: Server, token: str, recipient: str, subjects: list[str]) -> list[str]:
    """POST one message per subject to a running server, 8 at once, each on a new connection (so
    whichever worker accepts it answers); every one must be acknowledged (201): the new ids."""
    def send(subject: str) -> str:
        with httpx.Client(timeout=30) as c:
            r = c.post(f"{server.line('api')}/entities/{recipient}/messages", json={"subject": subject, "body": "b"},
                       headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(send, subjects))

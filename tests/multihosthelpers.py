"""Hosts for the multi-host tests: separate homes and rosters over one PostgreSQL schema.

A "host" here is a home of its own (its own roster, tokens and caches) whose
``store`` is the shared database, with the same entities and project
registered in each roster, as a team's machines would have. Where the machine
allows it (``unshare --net`` works: root, or a user namespace), every process
of a host runs in a network namespace of its own, with no network at all, and
reaches PostgreSQL through its Unix socket: the hosts share nothing but the
database. Elsewhere they are separate processes on loopback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from dovecote.handle import api
from dovecote.verbs import EntityAdd, ProjectAdd
from helpers import DOVECOTE_BIN, cli_env

ENTITIES = ("aya", "tariq", "kimi")
#: Where the machine's PostgreSQL listens on a Unix socket (Debian's default).
SOCKET_DIR = Path(os.environ.get("DOVECOTE_TEST_PG_SOCKET", "/var/run/postgresql"))


def namespaces() -> bool:
    """Can a host's processes run in network namespaces of their own, reaching the database by its socket?"""
    if shutil.which("unshare") is None or not any(SOCKET_DIR.glob(".s.PGSQL.*")):
        return False
    return subprocess.run(["unshare", "--net", "true"], capture_output=True, check=False).returncode == 0


NETNS = namespaces()
#: What a host's process is started under: a new network namespace, when there can be one.
PREFIX = ["unshare", "--net"] if NETNS else []


def by_socket(url: str) -> str:
    """``url`` (a TCP URL of the machine's server) through its Unix socket instead, the query kept."""
    parts = urlsplit(url)
    query = f"host={SOCKET_DIR}&port={parts.port or 5432}" + (f"&{parts.query}" if parts.query else "")
    return f"postgresql://{parts.path}?{query}"

#: A host's writer in a loop: one send at a time, each id printed once the send returned (acknowledged).
#: With ``retry`` a failed send (the server restarting) is tried again after a pause under the same
#: idempotency key (saying so on stderr), so a send that committed before its answer was lost is not
#: made twice.
SENDER = """
import sys, time
from dovecote.handle.api import open_home
from dovecote.errors import StoreError
from dovecote.verbs import Message
tag, count, retry = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "retry"
dc = open_home()
for n in range(count):
    while True:
        try:
            d = dc.send(Message(recipient="kimi", sender="aya", subject=f"{tag} #{n}", body="b",
                                idempotency_key=f"{tag}-{n}" if retry else None))
            break
        except StoreError:
            if not retry:
                raise
            print("retried", file=sys.stderr, flush=True)
            time.sleep(0.1)
    print(d.id, flush=True)
    if retry:
        time.sleep(0.02)  # paced, so the writing outlasts a server restart
"""


@dataclass
class Host:
    """One host: its home and the environment its CLI processes run in."""

    home: Path
    env: dict[str, str]

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([*PREFIX, str(DOVECOTE_BIN), *args], env=self.env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=self.home.parent)

    def sender(self, tag: str, count: int, *, retry: bool = False) -> subprocess.Popen[bytes]:
        """The writer loop (``SENDER``) as a process of this host."""
        # unbuffered: a test reads the first id with readline, and communicate() then reads the pipe
        # itself, so a buffer holding lines past the first would lose them
        return subprocess.Popen([*PREFIX, sys.executable, "-c", SENDER, tag, str(count), "retry" if retry else "once"],
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)


def hosts(tmp: Path, url: str, n: int) -> list[Host]:
    """``n`` homes on the database at ``url`` (through its socket when the hosts have namespaces of
    their own), each with the same entities and project ``repo-a``."""
    out = []
    url = by_socket(url) if NETNS else url
    for i in range(n):
        root = tmp / f"host{i}"
        (root / "repo-a").mkdir(parents=True)
        home, created = api.init(root / ".dovecote", owner_root=str(root), store=url)
        assert created
        dc = api.open_home(home)
        for e in ENTITIES:
            dc.add_entity(EntityAdd(entity_id=e))
        dc.add_project(ProjectAdd(name="repo-a", root=str(root / "repo-a")))
        out.append(Host(home, cli_env(tmp, home, DOVECOTE_AGENT="agent-a")))
    return out


def finish(procs: list[tuple[subprocess.Popen[bytes], bytes | None]]) -> list[tuple[int, bytes, bytes]]:
    """Feed each process its stdin and wait for all: (exit code, stdout, stderr) each."""
    got = []
    for p, data in procs:
        out, err = p.communicate(data, timeout=120)
        got.append((p.returncode, out, err))
    return got


def reads(host_list: list[Host], *commands: tuple[str, ...]) -> list[list[Any]]:
    """Each host's answers to the read ``commands`` (all run at once), as JSON, host by host."""
    procs = [(h.start(*c, "--json"), None) for h in host_list for c in commands]
    results = finish(procs)
    assert all(code == 0 for code, _, _ in results), [err for code, _, err in results if code]
    answers = [orjson.loads(out) for _, out, _ in results]
    for a in answers:
        if isinstance(a, dict):
            a.pop("spool_path", None)  # the one field that names the host's own home
    k = len(commands)
    return [answers[i * k:(i + 1) * k] for i in range(len(host_list))]


def acknowledged(out: bytes) -> set[str]:
    """The ids a killed writer printed in full (a half-printed id was never acknowledged)."""
    done = out[: out.rfind(b"\n") + 1]
    return {x.decode() for x in done.split(b"\n") if x}

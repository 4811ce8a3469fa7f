"""PostgreSQL restarted under two hosts' writers (``make stress``; never in the default run).

A restart ends every session on the server, other tests' too, so this module
is marked ``stress`` and deselected unless asked for (``pytest -m stress``).
Two hosts send in a loop, retrying a failed send under its idempotency key;
the cluster is restarted (``pg_ctlcluster``) while they write. Afterwards
both were still writing when the server came back, both finished, every
acknowledged send is in the box once, and a send that committed before its
answer was lost was not made twice.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from test_multihost import kimi_subjects

from dovecote.handle import api
from dovecote.model.addresses import entity
from dovecote.store.postgres import schema as store_pgschema
from dovecote.store.postgres.store import release
from multihosthelpers import acknowledged, hosts
from pghelpers import reach, url_for

pytestmark = [pytest.mark.stress, pytest.mark.files_only]

SENDS = 100


@pytest.fixture
def url() -> Iterator[str]:
    """A schema of the test's own, made and dropped on connections of their own (a restart in
    between ends every session, so none is held across it)."""
    name = f"dovecote_stress_{secrets.token_hex(6)}"
    with reach() as admin:
        admin.execute(f"CREATE SCHEMA {name}")
    u = url_for(name)
    try:
        with psycopg.connect(u) as conn:
            store_pgschema.migrate(conn)
        yield u
    finally:
        release(u)
        with reach() as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def restart_postgres() -> None:
    """Restart the machine's cluster (the version under /etc/postgresql) and wait until it answers."""
    assert shutil.which("pg_ctlcluster"), "make stress restarts the local PostgreSQL cluster: pg_ctlcluster is needed"
    version = os.environ.get("DOVECOTE_PG_VERSION") or sorted(os.listdir("/etc/postgresql"))[-1]
    subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"], check=True,
                   timeout=60, capture_output=True)
    deadline = time.monotonic() + 30
    while subprocess.run(["pg_isready", "-q", "-h", "127.0.0.1"], check=False).returncode != 0:
        assert time.monotonic() < deadline, "PostgreSQL did not come back"
        time.sleep(0.2)


def test_a_postgres_restart_mid_run_loses_nothing_and_both_hosts_go_on(tmp_path: Path, url: str) -> None:
    one, two = hosts(tmp_path, url, 2)
    writers = [h.sender(f"host{i}", SENDS, retry=True) for i, h in enumerate((one, two))]
    firsts = []
    for w in writers:  # both are writing before the server goes away
        assert w.stdout is not None
        firsts.append(w.stdout.readline())
        assert firsts[-1].endswith(b"\n")
    restart_postgres()
    assert all(w.poll() is None for w in writers), "both were still writing when the server came back"
    acked: set[str] = set()
    for w, first in zip(writers, firsts, strict=True):
        out, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
        got = acknowledged(first + out)
        assert len(got) == SENDS, "each host went on to the end"
        acked |= got
        # a send either waited for the pool's new session or failed and was retried: both are fine
    box = api.open_home(one.home).store.read(entity("kimi")).index
    assert not acked - box.keys(), "an acknowledged letter is missing after the restart"
    subjects = kimi_subjects(url)
    assert sorted(subjects) == sorted(f"host{i} #{n}" for i in range(2) for n in range(SENDS)), (
        "every send once: none lost, none made twice by a retry"
    )

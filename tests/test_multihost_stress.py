"""PostgreSQL restarted under two hosts' writers (``make stress``; never in the default run).

A restart ends every session on the server, other tests' too, so this module
is marked ``stress`` and deselected unless asked for (``pytest -m stress``).
Two hosts send in a loop, retrying a failed send under its idempotency key;
the cluster is restarted (``pg_ctlcluster``) while they write. Afterwards
both finished, every acknowledged send is in the box once, and a send that
committed before its answer was lost was not made twice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dovecote import api
from dovecote.addresses import entity
from dovecote.store_postgres import release
from multihosthelpers import acknowledged, hosts
from pghelpers import schema
from test_multihost import kimi_subjects

pytestmark = [pytest.mark.stress, pytest.mark.files_only]

SENDS = 60


@pytest.fixture
def url() -> Iterator[str]:
    with schema() as u:
        yield u
        release(u)


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
    acked: set[str] = set()
    for w, first in zip(writers, firsts, strict=True):
        out, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
        got = acknowledged(first + out)
        assert len(got) == SENDS, "each host went on to the end"
        acked |= got
    box = api.open_home(one.home).store.read(entity("kimi")).index
    assert not acked - box.keys(), "an acknowledged letter is missing after the restart"
    subjects = kimi_subjects(url)
    assert sorted(subjects) == sorted(f"host{i} #{n}" for i in range(2) for n in range(SENDS)), (
        "every send once: none lost, none made twice by a retry"
    )

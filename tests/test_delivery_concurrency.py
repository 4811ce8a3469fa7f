"""Two mailmen at once (real processes, 1,000 envelopes): never deliver twice, never mint two trackers,
never reping, time out or escalate twice (notes B13.4, B13.5, B13.7)."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from deliveryhelpers import AGENTS, box_letters, delivery_home, drop, envelope, intake_files
from helpers import DOVECOTE_BIN, cli_env

pytestmark = pytest.mark.files_only

N = 1000


def _pair(tmp: Path, home: Path) -> None:
    """Two ``mailman --once`` processes started together; both must succeed."""
    env = cli_env(tmp, home)
    procs = [subprocess.Popen([str(DOVECOTE_BIN), "mailman", "--once", "--json"], cwd=tmp, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err


def test_two_mailmen_over_a_thousand_envelopes_do_everything_exactly_once(tmp_path: Path) -> None:
    dc = delivery_home(tmp_path)
    workers = [a for a in AGENTS if a != "aya"]
    policy = {"ack_required": True, "ack_timeout_s": 1, "max_repings": 1, "reping_interval_s": 1,
              "escalation_target": "aya"}
    sent = [envelope(to=workers[i % len(workers)], ack_policy=policy, ts="2026-01-01T00:00:00Z")
            for i in range(N)]
    for env in sent:
        drop(dc, env)
    home = dc.layout.root
    _pair(tmp_path, home)
    assert intake_files(dc, "pending") == [] and len(intake_files(dc, "processed")) == N
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        _pair(tmp_path, home)
        escalated = sum(1 for x in box_letters(dc, "aya") if x.get("escalates"))
        if escalated >= N:
            break
        time.sleep(1.1)  # the next step is due a second after the last
    letters = [x for w in workers for x in box_letters(dc, w)]
    tasks = Counter(x["envelope_id"] for x in letters if x.get("kind") == "task")
    assert len(tasks) == N and set(tasks.values()) == {1}  # delivered once each
    for kind in ("reping", "ack_timeout", "escalation"):
        per = Counter(x["ref"] for x in letters if x.get("kind") == kind)
        assert len(per) == N and set(per.values()) == {1}, kind
    messages = Counter(x["escalates"] for x in box_letters(dc, "aya") if x.get("escalates"))
    assert len(messages) == N and set(messages.values()) == {1}
    rows = dc.trackers()["trackers"]
    assert len(rows) == N and all(t["escalated"] and t["reping_count"] == 1 for t in rows)

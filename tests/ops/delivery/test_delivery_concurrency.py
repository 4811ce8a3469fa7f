"""Two mailmen at once (real processes, 1,000 envelopes): never deliver twice, never mint two trackers,
never reping, time out or escalate twice (notes B13.4, B13.5, B13.7)."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from deliveryhelpers import AGENTS, box_letters, delivery_home, drop, envelope, intake_files
from dovecote.model.results import builtins
from helpers import DOVECOTE_BIN, cli_env

pytestmark = pytest.mark.files_only

N = 1000


def _pair(tmp: Path, home: Path) -> None:
    """Two ``mailman --once`` processes started together; both must succeed."""
    env = cli_env(tmp, home)
    procs = [subprocess.Popen([str(DOVECOTE_BIN), "mailman", "--once", "--json"], cwd=tmp, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    try:
        errs = [p.communicate(timeout=120)[1] for p in procs]
    finally:
        for p in procs:  # one that failed leaves no process behind for a later test to trip over
            if p.poll() is None:
                p.kill()
                p.communicate()
    for p, err in zip(procs, errs, strict=True):
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
    rows = builtins(dc.trackers())["trackers"]
    assert len(rows) == N and all(t["escalated"] and t["reping_count"] == 1 for t in rows)


def test_a_step_that_needs_a_box_the_first_look_did_not_is_taken_with_that_box_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between a mailman's first look (a reping due, no escalation box needed) and its lock, another
    mailman repings: under the lock the step is the timeout, escalating to aya, whose box the first
    look did not ask for. It is held then, and the escalation written once (CI: KeyError on aya's box)."""
    from contextlib import contextmanager

    from dovecote.handle.api import open_home
    from dovecote.ops.delivery import mailman as mailman_op
    from dovecote.util.timeutil import parse_time

    dc = delivery_home(tmp_path)
    t0 = parse_time("2026-01-01T00:00:00Z")
    assert t0 is not None
    policy = {"ack_required": True, "ack_timeout_s": 300, "max_repings": 1, "reping_interval_s": 300,
              "escalation_target": "aya"}
    drop(dc, envelope(to="tariq", ack_policy=policy, ts="2026-01-01T00:00:00Z"))
    dc.intake(now=t0)
    other = open_home(dc.layout.root)
    real_book = mailman_op.book
    interleaved: list[bool] = []

    @contextmanager
    def book_then_the_other_mailman(ctx: Any, entity_id: str, held: Any = None) -> Iterator[Any]:
        with real_book(ctx, entity_id, held) as b:
            yield b
        if entity_id == "tariq" and held is None and not interleaved:
            interleaved.append(True)  # the other mailman's own looks go straight through
            other.mailman(now=t0 + timedelta(seconds=300))  # the reping, due at t0 + 300

    monkeypatch.setattr(mailman_op, "book", book_then_the_other_mailman)
    (run,) = dc.mailman(now=t0 + timedelta(seconds=700))  # its first look: the reping (due at t0 + 300)
    assert interleaved == [True]
    assert run.reconciled.errors == [] and run.reconciled.timeouts == 1 and run.reconciled.escalations == 1
    kinds = Counter(x.get("kind") for x in box_letters(dc, "tariq"))
    assert kinds["reping"] == 1 and kinds["ack_timeout"] == 1 and kinds["escalation"] == 1
    assert sum(1 for x in box_letters(dc, "aya") if x.get("escalates")) == 1

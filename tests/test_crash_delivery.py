"""Crash at every file operation of the delivery machinery: an ack, the mailman's repings, timeout and
escalation, and an outbox send (``crashsweep``: a sample in ``make test``, every point in ``make stress``).

After each crash every ledger reads cleanly, every letter acknowledged before
the crash is there once, and the next run (the same call again) converges on
exactly the letters a run with no crash writes, with ``verify`` passing. A
second ack of one delivery is refused ``already_acked`` (the first stands), so
the retry of an ack that landed is that refusal.

Found by this sweep: an ack and its ``notify`` letter (the record that the
sender was told, or that telling is disabled) are one append of two lines; a
power cut that keeps the first line and tears the second leaves the ack
without its notify record, and the retry, refused ``already_acked``, never
writes it. Nothing acknowledged is lost (the ack was never acknowledged, and
notify letters are assistive, never delivery truth: DESIGN 3), so the check
lets a ``notify`` letter be missing after an ack's crash, and only that.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from crashsweep import DEPTHS, SWEEPS, Sweeper, acknowledge, based, converging
from deliveryhelpers import T0, delivery_home
from dovecote.api import Dovecote
from dovecote.errors import Refusal
from dovecote.verbs import Ack, Mailman, Message, OutboxSend, Send
from mailhelpers import ENTITY, SENDER, mail_home

pytestmark = pytest.mark.files_only


def _home(tree: Path) -> Path:
    return tree / "owner" / ".dovecote"


def _ok(root: Path) -> bool:
    return Dovecote(_home(root)).verify(now=T0 + timedelta(hours=1)).ok


def _task(dc: Dovecote, key: str, **more: object) -> str:
    s = dc.send(Send(type="task", recipient="tariq", sender="aya", subject=key, work_item_id=f"wi-{key}",
                     idempotency_key=key, **more), now=T0)  # type: ignore[arg-type]
    return str(s.deliveries[0]["id"])


# -- two acks (the second of another delivery) ---------------------------------------------------


def _acks(tree: Path, acked: list[str]) -> None:
    dc = Dovecote(_home(tree))
    for ref in (tree / "refs").read_text().split():
        try:
            dc.ack(Ack(entity_id="tariq", ref=ref), now=T0 + timedelta(minutes=1))
        except Refusal as e:  # the retry of an ack that landed: the first ack stands
            if e.reason == "disk_full":
                raise  # the injected fault itself: the sweep counts the refusal
            assert e.reason == "already_acked", e
        acknowledge(tree, acked)


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_two_acks(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    def build(work: Path) -> None:
        dc = delivery_home(work)
        (work / "refs").write_text(" ".join(_task(dc, k) for k in ("one", "two")))

    base, work = based(tmp_path, build)
    check = converging(_home, _acks, _ok, may_miss=frozenset({"notify"}))
    points = sweeper("two acks", base, work, _acks, check, depth)
    assert points.count("fsync") >= 2, points


# -- the mailman: reping 1, reping 2, then timeout and escalation ---------------------------------


def _mailman(tree: Path, acked: list[str]) -> None:
    dc = Dovecote(_home(tree))
    for minutes in (5, 10, 16):
        dc.mailman(Mailman(), now=T0 + timedelta(minutes=minutes))
        acknowledge(tree, acked)


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_repings_timeout_and_escalation(
    tmp_path: Path, depth: str, sweeper: Sweeper, request: pytest.FixtureRequest
) -> None:
    if depth == "full" and sweeper is SWEEPS[1].values[0]:
        # Open: the full fault sweep found a run (a crash dropping the unsynced writes at point 20 after a
        # healed fault) that converges on two letters no fault-free run writes. Not yet explained; it runs,
        # and is reported, rather than being left out.
        # strict: the sweep is deterministic, so the day this passes it fails until the marker goes
        request.applymarker(pytest.mark.xfail(reason="open: mailman convergence after a fault, point 20",
                                              strict=True))
    base, work = based(tmp_path, lambda w: _task(delivery_home(w), "late"))
    points = sweeper("mailman (two repings, timeout, escalation)", base, work, _mailman,
                   converging(_home, _mailman, _ok), depth)
    assert points.count("fsync") >= 3, points


# -- an outbox send: two drafts delivered, each recorded -----------------------------------------


def _outbox(tree: Path, acked: list[str]) -> None:
    Dovecote(_home(tree)).outbox_send(OutboxSend(sender=SENDER), now=T0)
    acknowledge(tree, acked)


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_an_outbox_send(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    def build(work: Path) -> None:
        dc = mail_home(work)
        for subject in ("first draft", "second draft"):
            dc.draft(Message(sender=SENDER, recipient=ENTITY, subject=subject, body="b"), now=T0)

    base, work = based(tmp_path, build)
    points = sweeper("outbox send (two drafts)", base, work, _outbox, converging(_home, _outbox, _ok), depth)
    assert points.count("fsync") >= 4, points

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

The mailman's I/O faults are checked by the steps taken, not by letter ids. A
fault that is healed at once (EIO or ENOSPC on one call) refuses that pass for
the box it hit: the pass names the box in its ``errors`` and writes nothing
there, and the next pass, ten minutes on, finds the reping still due and sends
it, dated then. Its id is not the fault-free run's (the time is in its bytes),
and the reping after it falls due an interval after it was sent (the tracker
fold's law: the recipient always gets the whole interval after a reping), so
the timeout and escalation come one pass later too. So the full sweep's "two
letters no fault-free run writes" (a fault at call 10, 11, 12 or 13: reping 1
at 10:10 and reping 2 at 10:16, in place of 10:05 and 10:10) are the one
reping 1 and the one reping 2, each sent once, late: no duplicate (a retry that
finds a reping on disk derives the next step, never the same one again) and
nothing lost (the refused pass acknowledged nothing). The check asks exactly
that: each step the fault-free run takes (a letter's ledger, kind, delivery,
count, ``about``, target and outcome) is there once, never earlier than in the
fault-free run, none it does not take; after later passes every one is there;
and each escalation marker names a message that is on disk.
"""

from __future__ import annotations

import errno
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from crashsweep import (
    DEPTHS,
    SWEEPS,
    Check,
    Op,
    Sweeper,
    acknowledge,
    all_ids,
    based,
    converging,
    ledgers,
    sweep,
    where,
)
from deliveryhelpers import T0, box_letters, delivery_home, kinds
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.util import fileops
from dovecote.verbs import Ack, Mailman, Message, OutboxSend, Send
from faultfs import FaultFS
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


#: The swept passes (minutes after the task: reping 1, reping 2, the timeout and its escalation are each due at
#: one), and the later ones a pass refused by a fault needs: the steps after a late reping are late too.
PASSES = (5, 10, 16)
LATER = (22, 28)


def _passes(minutes: tuple[int, ...]) -> Op:
    def run(tree: Path, acked: list[str]) -> None:
        dc = Dovecote(_home(tree))
        for m in minutes:
            dc.mailman(Mailman(), now=T0 + timedelta(minutes=m))
            acknowledge(tree, acked)

    return run


_mailman = _passes(PASSES)

Step = tuple[str, ...]


def _steps(root: Path) -> dict[Step, list[str]]:
    """Every letter of the home's ledgers as the step it is, with its time left out, and the times it was
    written at (more than one: a step taken twice)."""
    out: dict[Step, list[str]] = {}
    for name, r in ledgers(_home(root)):
        for x in r.letters:
            d = x.data()
            key = (name, *(str(d.get(f)) for f in ("kind", "ref", "escalates", "count", "about", "target",
                                                   "outcome")))
            out.setdefault(key, []).append(x.ts)
    return out


def _taken_once(got: dict[Step, list[str]], reference: dict[Step, list[str]], fs: FaultFS | None) -> None:
    assert got.keys() <= reference.keys(), f"a step no run takes {where(fs)}: {got.keys() - reference.keys()}"
    twice = {k: ts for k, ts in got.items() if len(ts) > 1}
    assert not twice, f"a step taken twice {where(fs)}: {twice}"
    early = {k: ts for k, ts in got.items() if ts[0] < reference[k][0]}
    assert not early, f"a step taken before it was due {where(fs)}: {early}"


def _escalations_sent(root: Path, fs: FaultFS | None) -> None:
    """Each escalation marker names a message on disk (the marker follows the fsynced message)."""
    ids = all_ids(_home(root))
    for _, r in ledgers(_home(root)):
        for x in r.letters:
            if x.data().get("kind") == "escalation":
                assert x.data().get("message") in ids, f"a marker without its message {where(fs)}: {x.data()}"


def _late_but_once() -> Check:
    """The check of the mailman's I/O faults (see the module docstring): the steps of a run with no fault,
    each once and none early, and all of them once later passes have run."""
    reference: dict[Step, list[str]] = {}

    def check(root: Path, fs: FaultFS | None, acked: list[str]) -> None:
        if fs is None:
            reference.update(_steps(root))
        assert set(acked) <= all_ids(_home(root)), f"an acknowledged letter was lost {where(fs)}"
        _taken_once(_steps(root), reference, fs)
        _escalations_sent(root, fs)
        if fs is not None:
            _passes(PASSES + LATER)(root, [])
            again = _steps(root)
            _taken_once(again, reference, fs)
            never = reference.keys() - again.keys()
            assert not never, f"a step never taken {where(fs)}: {never}"
            _escalations_sent(root, fs)
        assert _ok(root), f"a cache does not rebuild identical {where(fs)}"

    return check


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_repings_timeout_and_escalation(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    base, work = based(tmp_path, lambda w: _task(delivery_home(w), "late"))
    # a crash's retry runs the same passes again, so it must write the very same bytes; a refused pass is late
    check = converging(_home, _mailman, _ok) if sweeper is sweep else _late_but_once()
    points = sweeper("mailman (two repings, timeout, escalation)", base, work, _mailman, check, depth)
    assert points.count("fsync") >= 3, points


def test_a_pass_refused_by_a_fault_sends_its_reping_late_and_once(tmp_path: Path) -> None:
    """The sweep's finding, by name: EIO opening the box at the first pass names the box, writes nothing;
    the next passes send reping 1 and 2 an interval apart, then time out, each once."""
    base, work = based(tmp_path, lambda w: _task(delivery_home(w), "late"))
    root = work.parent / "run"
    shutil.copytree(base, root, symlinks=True)
    dc = Dovecote(_home(root))
    fs = FaultFS(fail_call=10, fail_errno=errno.EIO)
    with fileops.installed(fs):
        (first,) = dc.mailman(Mailman(), now=T0 + timedelta(minutes=5))
    assert fs.fault == "EIO once at call 10 (open letters.jsonl)"  # the box's ledger, under the lock
    assert [e["box"] for e in first.reconciled.errors] == ["entity:tariq"]
    assert first.reconciled.repings == 0 and kinds(dc, "tariq", "reping") == []
    for m in (10, 16, 22):
        dc.mailman(Mailman(), now=T0 + timedelta(minutes=m))
    sent = [(x["kind"], x["ts"][11:16], x.get("count")) for x in box_letters(dc, "tariq")
            if x["kind"] in ("reping", "ack_timeout")]
    assert sent == [("reping", "10:10", 1), ("reping", "10:16", 2), ("ack_timeout", "10:22", None)]
    assert len(kinds(dc, "aya", "message")) == 1


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

"""Sending writes two boxes: the delivery and the sender's record (issue 6, item 4).

A retry must converge: a delivered draft is a function of the draft, a keyed
send finds the message its key names, and a failure between the two appends
says exactly what was delivered. Without a key every send is a new message.
"""

from __future__ import annotations

import errno
import itertools
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dovecote.errors import PartialWrite, Refusal, StoreError
from dovecote.handle.api import Dovecote, open_home
from dovecote.ledger.append import LockedLedger
from dovecote.model import envelope
from dovecote.model.addresses import entity
from dovecote.model.results import builtins
from dovecote.verbs import Message, OutboxSend
from helpers import cli_env, run_cli
from mailhelpers import mail_home

A, B, C = "ent_a", "ent_b", "ent_c"


def letters(dc: Dovecote, who: str, kind: str) -> list[dict[str, Any]]:
    """The letters of one kind in a box, as the reader sees them (each id once)."""
    read = open_home(dc.layout.root).store.read(entity(who))
    return [x.data() for x in read.letters if x.kind == kind]


def fail_appends_to(monkeypatch: pytest.MonkeyPatch, dc: Dovecote, who: str) -> None:
    """Make every append to ``who``'s box fail like a full disk (after it was opened and locked)."""
    path = dc.store.path(entity(who))
    real = LockedLedger.append

    def append(self: LockedLedger, lines: Any) -> list[tuple[str, bool]]:
        if self.reader.path == path:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, lines)

    monkeypatch.setattr(LockedLedger, "append", append)


@given(st.lists(st.integers(min_value=0, max_value=2**63), min_size=2, max_size=20, unique=True))
def test_uuid7_ids_sort_by_their_time_and_are_well_formed(times: list[int]) -> None:
    made = []
    for ns in sorted(times):
        real = envelope.time.time_ns
        envelope.time.time_ns = lambda ns=ns: ns  # type: ignore[misc]
        try:
            u = envelope.uuid7()
        finally:
            envelope.time.time_ns = real  # type: ignore[misc]
        assert u.version == 7 and u.variant == "specified in RFC 4122"
        made.append((ns * 4096 // 1_000_000, str(u)))
    # ids of distinct sub-millisecond ticks (1/4096 ms) sort as their times do
    for (t1, a), (t2, b) in itertools.pairwise(made):
        if t1 != t2:
            assert a < b


def test_a_keyed_message_id_is_a_function_of_sender_recipient_and_key() -> None:
    k = envelope.keyed_message_id
    assert k(A, B, "x") == k(A, B, "x")
    assert len({k(A, B, "x"), k(A, C, "x"), k(B, A, "x"), k(A, B, "y")}) == 4


@pytest.mark.files_only  # reads or breaks the ledger files themselves
def test_two_identical_sends_are_two_messages_with_sortable_ids(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, A, B)
    first = dc.send(Message(sender=A, recipient=B, subject="same", body="same"))
    second = dc.send(Message(sender=A, recipient=B, subject="same", body="same"))
    assert first.appended and second.appended and first.id != second.id
    msgs = letters(dc, B, "message")
    assert len(msgs) == 2 and [m["message_id"] for m in msgs] == [first.message_id, second.message_id]
    assert all(m["message_id"].startswith("msg_") and "idempotency_key" not in m for m in msgs)
    assert first.message_id is not None and second.message_id is not None
    assert first.message_id < second.message_id  # uuid7: sortable by creation time
    assert msgs[0]["routing"]["thread_id"] != msgs[1]["routing"]["thread_id"]  # each starts its own thread
    assert len(letters(dc, A, "sent")) == 2
    d1 = dc.draft(Message(sender=A, recipient=B, subject="same"))
    d2 = dc.draft(Message(sender=A, recipient=B, subject="same"))
    assert d1.appended and d2.appended and d1.id != d2.id  # drafts too


def test_the_cli_says_two_identical_sends_are_two(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, A, B)
    args = ("send", "--from", A, "--to", B, "--subject", "twice")
    one, two = (run_cli(tmp_path, *args, home=dc.layout.root) for _ in range(2))
    assert one.returncode == two.returncode == 0
    assert one.stdout != two.stdout and b"already present" not in one.stdout + two.stdout
    assert len(letters(dc, B, "message")) == 2


@pytest.mark.files_only  # reads or breaks the ledger files themselves
def test_a_keyed_send_is_one_message_however_often_it_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dc = mail_home(tmp_path, A, B, C)
    first = dc.send(Message(sender=A, recipient=B, subject="once", idempotency_key="job-7", current_tic=100))
    later = datetime(2031, 1, 1, tzinfo=UTC)
    again = dc.send(Message(
        sender=A, recipient=B, subject="once", idempotency_key="job-7", current_tic=101
    ), now=later)  # another tic
    assert (again.id, again.appended, again.sent_record) == (first.id, False, first.sent_record)
    (msg,) = letters(dc, B, "message")
    assert msg["idempotency_key"] == "job-7" and msg["message_id"].startswith("msg_key_")
    assert len(letters(dc, A, "sent")) == 1
    # a key is scoped to (sender, recipient): the same key to another recipient is another message
    other = dc.send(Message(sender=A, recipient=C, subject="once", idempotency_key="job-7"))
    assert other.appended and other.message_id != first.message_id


@pytest.mark.files_only  # reads or breaks the ledger files themselves
def test_a_key_reused_for_another_message_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, A, B)
    dc.send(Message(sender=A, recipient=B, subject="deploy", idempotency_key="k1"))
    dc.draft(Message(sender=A, recipient=B, subject="deploy", idempotency_key="k2"))
    before = {w: dc.store.path(entity(w)).read_bytes() for w in (A, B)}  # type: ignore[union-attr]
    with pytest.raises(Refusal) as e:
        dc.send(Message(sender=A, recipient=B, subject="rollback", idempotency_key="k1"))
    assert e.value.reason == "idempotency_conflict" and "content" in e.value.detail
    with pytest.raises(Refusal, match="idempotency_conflict"):
        dc.draft(Message(sender=A, recipient=B, subject="rollback", idempotency_key="k2"))
    assert dc.draft(Message(sender=A, recipient=B, subject="deploy", idempotency_key="k2")).appended is False
    assert {w: dc.store.path(entity(w)).read_bytes() for w in (A, B)} == before  # type: ignore[union-attr]
    with pytest.raises(Refusal, match="invalid_field"):
        dc.send(Message(sender=A, recipient=B, subject="deploy", idempotency_key=" "))


@pytest.mark.files_only  # reads or breaks the ledger files themselves
def test_a_failed_sent_record_says_what_was_delivered_and_the_keyed_retry_completes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dc = mail_home(tmp_path, A, B)
    with monkeypatch.context() as m:
        fail_appends_to(m, dc, A)
        with pytest.raises(PartialWrite) as e:
            dc.send(Message(sender=A, recipient=B, subject="half", idempotency_key="k"))
    (msg,) = open_home(dc.layout.root).store.read(entity(B)).letters
    mid = msg.id
    assert str(e.value).startswith(f"delivered {mid} to entity:{B}; the sent record was not written")
    assert "without delivering again" in str(e.value)
    assert e.value.details["delivered"] == [{"draft": None, "from": A, "to": B, "delivered": True, "message": mid,
                                             "sent_record": None}]
    assert letters(dc, A, "sent") == []
    retry = dc.send(Message(sender=A, recipient=B, subject="half", idempotency_key="k"))
    assert (retry.id, retry.appended) == (mid, False) and retry.sent_record is not None
    assert len(letters(dc, B, "message")) == 1 and len(letters(dc, A, "sent")) == 1
    # without a key the error says the message is delivered and a second send is a second message
    with monkeypatch.context() as m:
        fail_appends_to(m, dc, A)
        with pytest.raises(PartialWrite, match="sending it again would deliver a second one"):
            dc.send(Message(sender=A, recipient=B, subject="unkeyed"))


@pytest.mark.files_only  # reads or breaks the ledger files themselves
def test_a_sender_box_that_cannot_be_opened_fails_before_anything_is_delivered(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, A, B)
    path = dc.store.path(entity(A))
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.mkdir()  # the ledger cannot be opened (root ignores permission bits, not this)
    with pytest.raises(StoreError, match=r"cannot open .*; nothing was delivered"):
        dc.send(Message(sender=A, recipient=B, subject="nowhere to record"))
    dc.draft(Message(sender=B, recipient=A, subject="other way"))  # B's outbox, A's box is the broken one
    with pytest.raises(PartialWrite, match="was not delivered"):
        dc.outbox_send(OutboxSend(sender=B))
    assert letters(dc, B, "message") == [] and letters(dc, B, "sent") == []


@pytest.mark.files_only  # spies on the file store
def test_a_file_store_send_is_two_guarded_sections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No rule of a send reads the sender's box: the delivery holds the recipient's box alone,
    then the record's section holds the sender's (not a third section over both first)."""
    from dovecote.store.files import FileStore

    dc = mail_home(tmp_path, A, B)
    dc.send(Message(sender=A, recipient=B, subject="warm"))
    held: list[str] = []
    real = FileStore.guarded

    def spy(self: FileStore, where: Any) -> Any:
        held.append(str(where))
        return real(self, where)

    monkeypatch.setattr(FileStore, "guarded", spy)
    d = dc.send(Message(sender=A, recipient=B, subject="counted"))
    assert held == [str(entity(B)), str(entity(A))]
    assert d.sent_record in dc.store.read(entity(A)).index and d.id in dc.store.read(entity(B)).index


@pytest.mark.files_only  # reads or breaks the ledger files themselves
def test_the_outbox_after_a_partial_failure_delivers_each_draft_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dc = mail_home(tmp_path, A, B)
    drafts = [dc.draft(Message(sender=A, recipient=B, subject=f"d{i}")).id for i in range(3)]
    real = LockedLedger.append
    calls = {"n": 0}
    path_a = dc.store.path(entity(A))

    def append(self: LockedLedger, lines: Any) -> list[tuple[str, bool]]:
        if self.reader.path == path_a:
            calls["n"] += 1
            if calls["n"] == 2:  # the second draft's sent record
                raise OSError(errno.EIO, "Input/output error")
        return real(self, lines)

    with monkeypatch.context() as m:
        m.setattr(LockedLedger, "append", append)
        with pytest.raises(PartialWrite) as e:
            dc.outbox_send(OutboxSend(sender=A))
    msg = str(e.value)
    assert msg.startswith("delivered ") and "the sent record was not written" in msg
    assert f"before it this run delivered {drafts[0]}" in msg
    assert [d["draft"] for d in e.value.details["delivered"]] == drafts[:2]  # type: ignore[union-attr]
    assert e.value.details["failed"] == drafts[1]
    out = builtins(dc.outbox_send(OutboxSend(sender=A)))
    assert [o["draft"] for o in out] == drafts[1:]
    delivered = Counter(m["content"]["subject"] for m in letters(dc, B, "message"))
    assert delivered == {"d0": 1, "d1": 1, "d2": 1}
    assert sorted(s["ref"] for s in letters(dc, A, "sent")) == sorted(drafts)
    assert dc.outbox_send(OutboxSend(sender=A)) == []


@pytest.mark.files_only  # reads or breaks the ledger files themselves
def test_a_delivered_draft_is_the_draft_itself(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, A, B)
    d = dc.draft(Message(sender=A, recipient=B, subject="as drafted", idempotency_key="kd"))
    ((out,),) = [builtins(dc.outbox_send(OutboxSend(sender=A)))]
    (draft,) = letters(dc, A, "draft")
    (msg,) = letters(dc, B, "message")
    assert msg == {**draft, "kind": "message"}  # no fresh ts or id at delivery
    assert out["message"] != d.id and msg["message_id"] == draft["message_id"]
    # a keyed send of the same key after the draft went out is that message, not a second
    again = dc.send(Message(sender=A, recipient=B, subject="as drafted", idempotency_key="kd"))
    assert again.appended is False and again.id == out["message"]


# -- crashes, with real processes ---------------------------------------------------------


def _size(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())


def _kill_until_done(cmd: list[str], env: dict[str, str], watch: list[Path], rng: random.Random, kills: int) -> int:
    """Run ``cmd``, SIGKILL it at a random moment once it has started writing ``watch``,
    and re-run it, ``kills`` times; then let it finish. Returns how many runs were cut short."""
    cut = 0
    for _ in range(kills):
        before = _size(watch)
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while p.poll() is None and _size(watch) == before:
            time.sleep(0.001)
        time.sleep(rng.uniform(0, 0.03))
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            cut += 1
        p.wait()
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return cut


@pytest.mark.files_only  # reads or breaks the ledger files themselves
def test_sigkilled_outbox_runs_deliver_each_draft_exactly_once(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, A, B, C)
    n = 200
    drafts = [dc.draft(Message(sender=A, recipient=(B, C)[i % 2], subject=f"draft {i}")).id for i in range(n)]
    env = cli_env(tmp_path, dc.layout.root)
    cmd = [str(Path(sys.executable).parent / "dovecote"), "outbox", "send", "--from", A]
    watch = [p for p in (dc.store.path(entity(B)), dc.store.path(entity(C))) if p is not None]
    assert _kill_until_done(cmd, env, watch, random.Random(6), kills=10) >= 6  # cut short mid-delivery
    delivered = Counter(m["content"]["subject"] for who in (B, C) for m in letters(dc, who, "message"))
    assert delivered == {f"draft {i}": 1 for i in range(n)}
    sent = Counter(s["ref"] for s in letters(dc, A, "sent"))
    assert sent == dict.fromkeys(drafts, 1)
    assert open_home(dc.layout.root).outbox_send(OutboxSend(sender=A)) == []


#: A child that SIGKILLs itself right after its Nth append (0: never): a crash at
#: exactly the worst moments, between a delivery and its record among them. Run
#: k reads the clock as second k: a retry comes later than the run it retries.
_CRASHER = """
import os, signal, sys
import dovecote.ops.mail.send
from dovecote.handle.api import open_home
from dovecote.ledger.append import LockedLedger
home, crash_at, what, n, run = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
from datetime import UTC, datetime
real, done = LockedLedger.append, [0]
def append(self, lines):
    out = real(self, lines)
    done[0] += 1
    if done[0] == crash_at:
        os.kill(os.getpid(), signal.SIGKILL)
    return out
LockedLedger.append = append
dc = open_home(home, clock=lambda: datetime(2030, 1, 1, 0, 0, run, tzinfo=UTC))
from dovecote.verbs import Message, OutboxSend
if what == "outbox":
    dc.outbox_send(OutboxSend(sender="ent_a"))
else:
    for i in range(n):
        dc.send(Message(sender="ent_a", recipient="ent_b", subject=f"job {i}", idempotency_key=f"job-{i}"))
"""


def _crash_and_retry(dc: Dovecote, tmp: Path, what: str, n: int, rng: random.Random, crashes: int) -> int:
    """Run the crasher ``crashes`` times at random appends, then once to the end; return real crashes."""
    env = {**cli_env(tmp, dc.layout.root), "PYTHONPATH": os.pathsep.join(sys.path)}
    crashed = 0
    for run, crash_at in enumerate([*(rng.randint(1, 2 * n // crashes) for _ in range(crashes)), 0]):
        args = [str(dc.layout.root), str(crash_at), what, str(n), str(run)]
        r = subprocess.run([sys.executable, "-c", _CRASHER, *args], env=env, capture_output=True, timeout=60)
        assert r.returncode in ((0, -signal.SIGKILL) if crash_at else (0,)), r.stderr.decode()
        crashed += r.returncode == -signal.SIGKILL
    return crashed


@pytest.mark.files_only  # reads or breaks the ledger files themselves
def test_an_outbox_killed_between_delivery_and_record_delivers_each_draft_once(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, A, B, C)
    n = 120
    drafts = [dc.draft(Message(sender=A, recipient=(B, C)[i % 2], subject=f"draft {i}")).id for i in range(n)]
    assert _crash_and_retry(dc, tmp_path, "outbox", n, random.Random(10), crashes=10) == 10
    delivered = Counter(m["content"]["subject"] for who in (B, C) for m in letters(dc, who, "message"))
    assert delivered == {f"draft {i}": 1 for i in range(n)}
    assert Counter(s["ref"] for s in letters(dc, A, "sent")) == dict.fromkeys(drafts, 1)


def test_keyed_sends_killed_at_random_appends_and_retried_deliver_each_key_once(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, A, B)
    n = 120
    assert _crash_and_retry(dc, tmp_path, "send", n, random.Random(11), crashes=10) == 10
    delivered = Counter(m["idempotency_key"] for m in letters(dc, B, "message"))
    assert delivered == {f"job-{i}": 1 for i in range(n)}
    sent = letters(dc, A, "sent")
    assert len(sent) == n and len({s["message"] for s in sent}) == n
    # and the CLI, asked again with one of the keys, answers with the delivered message
    r = run_cli(tmp_path, "send", "--from", A, "--to", B, "--subject", "job 3", "--idempotency-key", "job-3",
                home=dc.layout.root)
    assert r.returncode == 0 and b"already present" in r.stdout
    assert len(letters(dc, B, "message")) == n

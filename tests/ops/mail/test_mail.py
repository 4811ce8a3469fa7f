"""Entity mail: send, drafts, outbox, and the guarded lifecycle verbs (library level)."""

from __future__ import annotations

import multiprocessing as mp
import threading
from pathlib import Path
from typing import Any

import msgspec.structs
import orjson
import pytest

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote, init
from dovecote.model.addresses import entity
from dovecote.model.results import builtins
from dovecote.roster import config as roster_mod
from dovecote.verbs import EntityAdd, Inbox, Message, Move, OutboxSend
from helpers import box_bytes, open_home

pytestmark = pytest.mark.both_stores


def home(tmp_path: Path, *entities: str) -> Dovecote:
    h, _ = init(tmp_path / ".dovecote", owner_root=str(tmp_path))
    dc = open_home(h)
    for e in entities or ("ent_a", "ent_b"):
        dc.add_entity(EntityAdd(entity_id=e))
    return dc


def ledger_bytes(dc: Dovecote, who: str) -> bytes:
    return box_bytes(dc, entity(who))


def lines(dc: Dovecote, who: str) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in ledger_bytes(dc, who).splitlines()]


def send(dc: Dovecote, **kw: Any) -> str:
    kw.setdefault("sender", "ent_a")
    kw.setdefault("recipient", "ent_b")
    kw.setdefault("subject", "hello")
    return dc.send(Message(**kw)).id


def state(dc: Dovecote, who: str, item: str, tic: int | None = None) -> str:
    view = builtins(dc.inbox(Inbox(entity_id=who, current_tic=tic, include_terminal=True)))
    (row,) = [r for r in view["items"] if r["id"] == item]
    return str(row["state"])


def test_send_writes_every_envelope_block(tmp_path: Path) -> None:
    dc = home(tmp_path)
    mid = send(dc, body="the body", priority="high", category="query", trust_level="operator",
               expires_at_tic=120, reminder_tic=110, current_tic=100)
    (msg,) = lines(dc, "ent_b")
    assert msg["kind"] == "message" and msg["envelope_version"] == "1.0"
    for block in ("sender", "recipient", "routing", "content", "lifecycle", "provenance"):
        assert isinstance(msg[block], dict), block
    assert msg["sender"]["entity_id"] == "ent_a" and msg["recipient"]["entity_id"] == "ent_b"
    assert msg["routing"]["priority"] == "high" and msg["routing"]["category"] == "query"
    assert msg["routing"]["trust_level"] == "operator" and msg["routing"]["thread_id"].startswith("thread_")
    assert msg["content"] == {"subject": "hello", "body": "the body", "artifact_refs": [], "envelope_type": None}
    assert msg["lifecycle"] == {"expires_at_tic": 120, "defer_until_tic": None, "reminder_tic": 110}
    assert msg["provenance"]["source_tic"] == 100
    # the sender's own box records that it sent it
    (sent,) = lines(dc, "ent_a")
    assert sent["kind"] == "sent" and sent["message"] == mid and sent["to"] == "ent_b"


@pytest.mark.parametrize(
    ("override", "reason"),
    [
        ({"recipient": "ent_nobody"}, "unknown_recipient"),
        ({"recipient": "../etc"}, "invalid_name"),
        ({"sender": "a/b"}, "invalid_name"),
        ({"priority": "asap"}, "invalid_field"),
        ({"category": "gossip"}, "invalid_field"),
        ({"trust_level": "friend"}, "invalid_field"),
        ({"subject": "  "}, "missing_field"),
        ({"expires_at_tic": -1}, "invalid_field"),
        ({"reply_to": "ffffffffffff"}, "unknown_letter"),
    ],
)
def test_send_refusals_write_nothing(tmp_path: Path, override: dict[str, Any], reason: str) -> None:
    dc = home(tmp_path)
    before = (ledger_bytes(dc, "ent_a"), ledger_bytes(dc, "ent_b"))
    with pytest.raises(Refusal) as e:
        send(dc, **override)
    assert e.value.reason == reason
    assert (ledger_bytes(dc, "ent_a"), ledger_bytes(dc, "ent_b")) == before


def test_large_bodies_go_to_the_artifact_store_and_oversized_are_refused(tmp_path: Path) -> None:
    dc = home(tmp_path)
    big = "x" * (dc.roster.limits.body_inline_max + 1)
    send(dc, body=big)
    (msg,) = lines(dc, "ent_b")
    ref = msg["content"]["body_ref"]
    assert msg["content"]["body"] == "" and ref.startswith("sha256:")
    blob = dc.layout.artifacts / ref[7:9] / ref[7:]
    assert blob.read_text() == big
    huge = tmp_path / "huge.bin"
    with huge.open("wb") as f:
        f.truncate(dc.roster.limits.body_hard_limit + 1)
    before = ledger_bytes(dc, "ent_b")
    with pytest.raises(Refusal, match="too_large"):
        send(dc, body_file=huge)
    with pytest.raises(Refusal, match="too_large"):
        send(dc, artifact_paths=[huge])
    assert ledger_bytes(dc, "ent_b") == before


def test_artifacts_are_content_addressed(tmp_path: Path) -> None:
    dc = home(tmp_path)
    f = tmp_path / "report.txt"
    f.write_text("measured: 42\n")
    send(dc, artifact_paths=[f])
    (msg,) = lines(dc, "ent_b")
    (art,) = msg["content"]["artifacts"]
    assert art["name"] == "report.txt" and art["size"] == 13
    assert msg["content"]["artifact_refs"] == [art["ref"]]
    assert (dc.layout.artifacts / art["ref"][7:9] / art["ref"][7:]).read_bytes() == b"measured: 42\n"
    with pytest.raises(Refusal, match="invalid_field"):
        send(dc, artifact_paths=[tmp_path / "missing.txt"])


def test_replies_inherit_the_thread(tmp_path: Path) -> None:
    dc = home(tmp_path)
    q = send(dc, category="query", thread_id="thread_release")
    r = dc.send(Message(sender="ent_b", recipient="ent_a", subject="re", category="response", reply_to=q[:6]))
    (reply,) = [m for m in lines(dc, "ent_a") if m["kind"] == "message"]
    assert reply["routing"]["thread_id"] == "thread_release"
    assert reply["routing"]["reply_to"] == q  # the prefix was resolved to the full id
    assert r.thread_id == "thread_release"


def test_the_happy_path_and_every_rail(tmp_path: Path) -> None:
    dc = home(tmp_path)
    q = send(dc, category="query")
    with pytest.raises(Refusal, match="illegal_transition"):
        dc.move(Move(kind="complete", entity_id="ent_b", ref=q))  # WAIT -> DONE is illegal
    assert dc.move(Move(kind="claim", entity_id="ent_b", ref=q)).to_state == "ACTIVE"
    with pytest.raises(Refusal, match="already_claimed"):
        dc.move(Move(kind="claim", entity_id="ent_b", ref=q))
    with pytest.raises(Refusal, match="not_seen"):
        dc.move(Move(kind="complete", entity_id="ent_b", ref=q))
    dc.move(Move(kind="seen", entity_id="ent_b", ref=q))
    with pytest.raises(Refusal, match="response_required"):
        dc.move(Move(kind="complete", entity_id="ent_b", ref=q))
    dc.send(Message(sender="ent_b", recipient="ent_a", subject="answer", category="response", reply_to=q))
    t = dc.move(Move(kind="complete", entity_id="ent_b", ref=q, result_ref="sha256:abc"))
    assert (t.from_state, t.to_state) == ("ACTIVE", "DONE")
    assert state(dc, "ent_b", q) == "DONE"
    for verb in ("claim", "seen", "defer", "nack", "undefer"):
        with pytest.raises(Refusal, match="illegal_transition"):
            dc.move(Move(kind=verb, entity_id="ent_b", ref=q, **({"until_tic": 999} if verb == "defer" else {})))


def test_a_notification_needs_no_response_and_no_response_expected_overrides(tmp_path: Path) -> None:
    dc = home(tmp_path)
    n = send(dc, category="notification")
    d = send(dc, subject="do it", category="directive", response_expected=False)
    for item in (n, d):
        dc.move(Move(kind="seen", entity_id="ent_b", ref=item))
        dc.move(Move(kind="claim", entity_id="ent_b", ref=item))
        assert dc.move(Move(kind="complete", entity_id="ent_b", ref=item)).to_state == "DONE"


def test_a_refused_transition_appends_nothing(tmp_path: Path) -> None:
    dc = home(tmp_path)
    q = send(dc)
    before = ledger_bytes(dc, "ent_b")
    moves: tuple[tuple[str, dict[str, Any]], ...] = (("complete", {}), ("nack", {}), ("defer", {}), ("undefer", {}))
    for verb, kw in moves:
        with pytest.raises(Refusal):
            dc.move(Move(kind=verb, entity_id="ent_b", ref=q, **kw))
    with pytest.raises(Refusal, match="unknown_letter"):
        dc.move(Move(kind="claim", entity_id="ent_b", ref="0123456789ab"))
    with pytest.raises(Refusal, match="unknown_entity"):
        dc.move(Move(kind="claim", entity_id="ent_zed", ref=q))
    with pytest.raises(Refusal, match="invalid_field"):
        dc.move(Move(kind="defer", entity_id="ent_b", ref=q, until="tomorrow"))
    with pytest.raises(Refusal, match="invalid_field"):
        dc.move(Move(kind="defer", entity_id="ent_b", ref=q, until_tic=5, current_tic=10))  # a due in the past
    assert ledger_bytes(dc, "ent_b") == before


def test_defer_resurfaces_at_its_tic_without_a_letter(tmp_path: Path) -> None:
    dc = home(tmp_path)
    q = send(dc, current_tic=100)
    dc.move(Move(kind="defer", entity_id="ent_b", ref=q, until_tic=110, current_tic=101))
    n = len(ledger_bytes(dc, "ent_b").splitlines())
    assert state(dc, "ent_b", q, tic=109) == "DEFER"
    assert state(dc, "ent_b", q, tic=110) == "WAIT"
    assert len(ledger_bytes(dc, "ent_b").splitlines()) == n  # derived, nothing written
    assert dc.move(Move(kind="claim", entity_id="ent_b", ref=q, current_tic=111)).from_state == "WAIT"
    assert state(dc, "ent_b", q, tic=111) == "ACTIVE"


def test_undefer_before_the_due(tmp_path: Path) -> None:
    dc = home(tmp_path)
    q = send(dc)
    dc.move(Move(kind="defer", entity_id="ent_b", ref=q, until="2099-01-01T00:00:00Z"))
    assert state(dc, "ent_b", q) == "DEFER"
    assert dc.move(Move(kind="undefer", entity_id="ent_b", ref=q)).to_state == "WAIT"


def test_a_message_sent_with_defer_until_arrives_deferred(tmp_path: Path) -> None:
    dc = home(tmp_path)
    q = send(dc, defer_until_tic=50, current_tic=40)
    assert state(dc, "ent_b", q, tic=45) == "DEFER"
    assert state(dc, "ent_b", q, tic=50) == "WAIT"


def test_drafts_and_the_outbox(tmp_path: Path) -> None:
    dc = home(tmp_path, "ent_a", "ent_b", "ent_c")
    d1 = dc.draft(Message(sender="ent_a", recipient="ent_b", subject="first")).id
    d2 = dc.draft(Message(sender="ent_a", recipient="ent_c", subject="second")).id
    assert ledger_bytes(dc, "ent_b") == b""  # a draft is not delivered
    assert [o["id"] for o in builtins(dc.inbox(Inbox(entity_id="ent_a", direction="outbound")))["outbound"]] == [d1, d2]
    # the roster loses ent_c before delivery: that draft is kept and reported
    kept = tuple(e for e in dc.roster.entities if e.id != "ent_c")
    dc.layout.config.write_bytes(roster_mod.dump(msgspec.structs.replace(dc.roster, entities=kept)))
    dc = open_home(dc.layout.root)
    out = builtins(dc.outbox_send(OutboxSend(sender="ent_a")))
    assert [(o["draft"], o["delivered"]) for o in out] == [(d1, True), (d2, False)]
    assert out[1]["reason"] == "unknown_recipient"
    (msg,) = lines(dc, "ent_b")
    assert msg["kind"] == "message" and msg["content"]["subject"] == "first"
    assert builtins(dc.outbox_send(OutboxSend(
        sender="ent_a"
    ))) == [{"draft": d2, "from": "ent_a", "to": "ent_c", "delivered": False,
                                         "reason": "unknown_recipient"}]
    assert len(lines(dc, "ent_b")) == 1  # delivered once
    assert [o["id"] for o in builtins(dc.inbox(Inbox(entity_id="ent_a", direction="outbound")))["outbound"]] == [d2]


def _claim(home_path: str, item: str, who: str, q: mp.Queue) -> None:  # type: ignore[type-arg]
    dc = open_home(home_path)
    try:
        dc.move(Move(kind="claim", entity_id="ent_b", ref=item), actor=who)
        q.put((who, "ok"))
    except Refusal as r:
        q.put((who, r.reason))


def test_threads_on_their_own_handles_claiming_one_item_exactly_one_wins(tmp_path: Path) -> None:
    """The compare-and-swap on any store: one handle per thread, as one per connection."""
    dc = home(tmp_path)
    item = send(dc, subject="race")
    handles = [open_home(dc.layout.root) for _ in range(4)]
    for h in handles:
        h.inbox(Inbox(entity_id="ent_b"))  # each warm, each about to be out of date
    results: list[str] = []

    def claim(h: Dovecote, who: str) -> None:
        try:
            h.move(Move(kind="claim", entity_id="ent_b", ref=item), actor=who)
            results.append("ok")
        except Refusal as r:
            results.append(r.reason)

    threads = [threading.Thread(target=claim, args=(h, f"ent_w{i}")) for i, h in enumerate(handles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results) == ["already_claimed"] * 3 + ["ok"]
    assert len([x for x in lines(dc, "ent_b") if x["kind"] == "claim"]) == 1


def test_a_warm_handle_decides_from_the_box_under_its_lock_not_from_its_fold(tmp_path: Path) -> None:
    dc = home(tmp_path)
    item = send(dc, subject="one")
    warm = open_home(dc.layout.root)
    assert builtins(warm.inbox(Inbox(entity_id="ent_b")))["items"][0]["state"] == "WAIT"
    open_home(dc.layout.root).move(Move(kind="claim", entity_id="ent_b", ref=item), actor="ent_other")
    with pytest.raises(Refusal) as e:
        warm.move(Move(kind="claim", entity_id="ent_b", ref=item), actor="ent_w")
    assert e.value.reason == "already_claimed"


@pytest.mark.files_only
@pytest.mark.parametrize("round_", range(5))
def test_two_processes_claiming_one_item_exactly_one_wins(tmp_path: Path, round_: int) -> None:
    dc = home(tmp_path)
    item = send(dc, subject=f"race {round_}")
    ctx = mp.get_context("fork")
    q: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [ctx.Process(target=_claim, args=(str(dc.layout.root), item, f"ent_w{i}", q)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    results = sorted(q.get(timeout=5)[1] for _ in procs)
    assert results.count("ok") == 1
    assert set(results) - {"ok"} <= {"already_claimed"}
    claims = [x for x in lines(dc, "ent_b") if x["kind"] == "claim"]
    assert len(claims) == 1


@pytest.mark.files_only
def test_a_git_merged_fork_resolves_to_one_state_and_reports_the_loser(tmp_path: Path) -> None:
    dc = home(tmp_path)
    q = send(dc)
    path = dc.store.path(entity("ent_b"))
    assert path is not None
    base = path.read_bytes()
    dc.move(Move(kind="claim", entity_id="ent_b", ref=q), actor="ent_x")
    ours = path.read_bytes()
    path.write_bytes(base)  # the other machine's history
    dc2 = open_home(dc.layout.root)
    dc2.move(Move(kind="seen", entity_id="ent_b", ref=q), actor="ent_y")
    dc2.move(Move(kind="nack", entity_id="ent_b", ref=q), actor="ent_y")
    theirs = path.read_bytes()
    from dovecote.ops.admin.merge import union

    for merged in (union(ours, theirs), union(theirs, ours)):
        path.write_bytes(merged)
        view = builtins(open_home(dc.layout.root).inbox(Inbox(entity_id="ent_b", include_terminal=True)))
        (row,) = view["items"]
        assert row["conflicts"] >= 1
        states = row["state"]
    assert states in ("ACTIVE", "NACK")
    # both merge orders agree
    path.write_bytes(union(ours, theirs))
    a = builtins(open_home(dc.layout.root).inbox(Inbox(entity_id="ent_b", include_terminal=True)))["items"][0]["state"]
    path.write_bytes(union(theirs, ours))
    b = builtins(open_home(dc.layout.root).inbox(Inbox(entity_id="ent_b", include_terminal=True)))["items"][0]["state"]
    assert a == b

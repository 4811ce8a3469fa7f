"""The tracker fold (``derive.delivery.trackers``) against its reference (``reference_trackers``), and its steps.

Pure: no home, no files. Histories are generated (hypothesis): deliveries with
random ack policies, then acks by the recipient and by others, repings with
counts, timeouts, escalations and notify outcomes, in any order after the
delivery; the fold, fed in random batches, must agree with the reference read
of the whole history.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from deliveryhelpers import T0
from dovecote.derive.delivery.tracker import close_tasks
from dovecote.derive.delivery.trackers import TrackerBook, next_step
from dovecote.model.letters import Letter, make_letter
from dovecote.util.timeutil import format_ts
from reference_trackers import reference

OWNER = "tariq"
ENGINE = "dovecote:engine"
FIELDS = ("ack_state", "ack_late", "timed_out_ts", "reping_count", "escalated", "ack_due_ts", "live_notify_state",
          "ignored_acks", "ack_notice", "timeout_notice")


_STATES = ("disabled", "discovered_only", "nudge_sent", "nudge_failed", "not_attempted")


def _ts(minutes: int) -> str:
    return format_ts(T0 + timedelta(minutes=minutes))


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(1, 3))
    out: list[dict[str, Any]] = []
    for i in range(n):
        policy = draw(st.one_of(
            st.just({}), st.just({"ack_required": False}),
            st.fixed_dictionaries({"ack_required": st.just(True), "ack_timeout_s": st.integers(0, 900),
                                   "max_repings": st.integers(0, 3), "reping_interval_s": st.integers(1, 900),
                                   "escalation_target": st.sampled_from(["aya", "none"])},
                                  optional={"notify_on_ack": st.booleans(), "notify_on_timeout": st.booleans()}),
        ))
        out.append({"ts": _ts(i), "agent": "aya", "kind": draw(st.sampled_from(["task", "response"])),
                    "envelope_id": f"env_{i}", "from": "aya", "to": draw(st.sampled_from([OWNER, OWNER, "kimi"])),
                    "work_item_id": "wi", "ack_policy": policy})
    events = draw(st.lists(st.tuples(
        st.integers(0, n - 1),
        st.sampled_from(["ack", "ack_other", "reping", "ack_timeout", "escalation", "notify", "claim", "notice",
                         "notice_claim"]),
        st.integers(0, 60), st.integers(-1, 4), st.sampled_from(["accepted", "rejected", "maybe"]),
        st.sampled_from(["disabled", "discovered_only", "nudge_sent", "nudge_failed", "bogus"]),
    ), max_size=14))
    for target, kind, minute, count, status, outcome in events:
        ref = _id(out[target])
        base: dict[str, Any] = {"ts": _ts(n + minute), "ref": ref}
        if kind == "ack":
            out.append({**base, "agent": OWNER, "kind": "ack", "status": status})
        elif kind == "ack_other":
            out.append({**base, "agent": "kimi", "kind": "ack", "status": status})
        elif kind == "reping":
            out.append({**base, "agent": ENGINE, "kind": "reping", **({"count": count} if count >= 0 else {})})
        elif kind in ("ack_timeout", "escalation"):
            out.append({**base, "agent": ENGINE, "kind": kind, "n": len(out)})
        elif kind in ("notice", "notice_claim"):
            out.append({**base, "agent": ENGINE, "kind": "notify", "mode": "agent-turn-nudge",
                        "about": ["ack", "timeout", "bogus"][count % 3],
                        "outcome": "claimed" if kind == "notice_claim" else outcome, "n": len(out)})
        else:
            out.append({**base, "agent": ENGINE, "kind": "notify", "mode": "none",
                        "outcome": "claimed" if kind == "claim" else outcome, "n": len(out)})
    return out


def _id(obj: dict[str, Any]) -> str:
    return make_letter(obj).id


def _letters(objs: list[dict[str, Any]]) -> list[Letter]:
    seen: set[str] = set()
    out = []
    for o in objs:
        letter = make_letter(o)
        if letter.id not in seen:  # a ledger holds each line once
            seen.add(letter.id)
            out.append(letter)
    return out


@settings(max_examples=300, deadline=None)
@given(histories(), st.lists(st.integers(1, 5), min_size=1, max_size=6))
def test_the_fold_fed_in_any_batches_equals_the_reference(objs: list[dict[str, Any]], cuts: list[int]) -> None:
    letters = _letters(objs)
    book = TrackerBook(OWNER)
    i = 0
    for c in cuts * 10:
        if i >= len(letters):
            break
        book.add(letters[i:i + c])
        i += c
    book.add(letters[i:])
    want = reference(OWNER, [(x.id, x.data()) for x in letters])
    got = {t.delivery_id: {f: getattr(t, f) for f in FIELDS} for t in book.trackers()}
    assert got == want
    for lid in book.rows:  # the open set is exactly the deliveries the engine may still act on
        t = book.tracker(lid)
        may_act = (t.ack_state == "pending" and t.ack_required) or (
            t.ack_state == "timed_out" and not t.escalated and t.escalation_target not in (None, "none"))
        assert (lid in book.open) == may_act
        for about in ("ack", "timeout"):  # a notice is unclaimed exactly while no notify letter about it is read
            named = any(x.data().get("about") == about and x.ref == lid and x.kind == "notify"
                        and x.data().get("outcome") in ("claimed", *_STATES) for x in letters)
            due = getattr(t, f"{about}_notice") is not None
            assert ((lid, about) in book.unnoticed) == (due and not named)


def _delivery(policy: dict[str, Any], kind: str = "task", **extra: Any) -> Letter:
    return make_letter({"ts": _ts(0), "agent": "aya", "kind": kind, "envelope_id": "env_1", "from": "aya",
                        "to": OWNER, "work_item_id": "wi", "ack_policy": policy, **extra})


def test_the_steps_in_order_reping_reping_timeout_then_escalate() -> None:
    d = _delivery({"ack_required": True, "ack_timeout_s": 300, "max_repings": 2, "reping_interval_s": 60,
                   "escalation_target": "aya"})
    book = TrackerBook(OWNER)
    book.add([d])
    assert next_step(book, d.id, T0 + timedelta(minutes=4)) is None
    s = next_step(book, d.id, T0 + timedelta(minutes=5))
    assert s is not None and (s.action, s.count) == ("reping", 1)
    book.add([make_letter({"ts": _ts(5), "agent": ENGINE, "kind": "reping", "ref": d.id, "count": 1})])
    assert next_step(book, d.id, T0 + timedelta(minutes=5, seconds=59)) is None
    s = next_step(book, d.id, T0 + timedelta(minutes=6))
    assert s is not None and (s.action, s.count) == ("reping", 2)
    book.add([make_letter({"ts": _ts(6), "agent": ENGINE, "kind": "reping", "ref": d.id, "count": 2})])
    s = next_step(book, d.id, T0 + timedelta(minutes=7))
    assert s is not None and (s.action, s.target) == ("timeout", "aya")
    book.add([make_letter({"ts": _ts(7), "agent": ENGINE, "kind": "ack_timeout", "ref": d.id})])
    s = next_step(book, d.id, T0 + timedelta(minutes=7))
    assert s is not None and s.action == "escalate"  # the timeout's pass escalates, or the next one does
    book.add([make_letter({"ts": _ts(7), "agent": ENGINE, "kind": "escalation", "ref": d.id, "target": "aya"})])
    assert next_step(book, d.id, T0 + timedelta(days=9)) is None and d.id not in book.open


def test_an_ack_by_someone_else_is_never_applied() -> None:
    d = _delivery({"ack_required": True})
    book = TrackerBook(OWNER)
    book.add([d, make_letter({"ts": _ts(1), "agent": "kimi", "kind": "ack", "ref": d.id, "status": "accepted"})])
    t = book.tracker(d.id)
    assert (t.ack_state, t.ignored_acks) == ("pending", 1)


def test_close_tasks_only_by_the_worker_and_by_a_completed_result() -> None:
    task = make_letter({"ts": _ts(0), "agent": "aya", "kind": "task", "envelope_id": "env_t", "from": "aya",
                        "to": OWNER, "work_item_id": "wi"})
    worker = TrackerBook(OWNER)
    worker.add([task])
    requester = TrackerBook("aya")

    def result(sender: str, status: str = "completed", n: int = 0) -> Letter:
        return make_letter({"ts": _ts(1 + n), "agent": sender, "kind": "response", "envelope_id": f"env_r{n}",
                            "from": sender, "to": "aya", "work_item_id": "wi", "parent_id": "env_t",
                            "response_type": "result", "status": status})

    requester.add([result("kimi", n=0), result(OWNER, "partial_complete", n=1)])
    rows = [*worker.trackers(), *requester.trackers()]
    assert close_tasks(rows) == {}
    requester.add([result(OWNER, n=2)])
    closed = close_tasks([*worker.trackers(), *requester.trackers()])
    assert list(closed) == [task.id] and closed[task.id].envelope_id == "env_r2"


_HUGE = st.one_of(st.integers(0, 900), st.integers(10**9, 2**63 - 1))  # a ledger line holds 64-bit integers


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({"ack_required": st.just(True), "ack_timeout_s": _HUGE, "reping_interval_s": _HUGE,
                              "max_repings": st.one_of(st.integers(0, 3), st.integers(2**40, 2**63 - 1)),
                              "escalation_target": st.just("aya")}),
       st.sampled_from(["2026-03-18T10:00:00Z", "9999-12-31T23:59:59Z", "9999-12-31T23:00:00+00:00",
                        "0001-01-01T00:00:00Z"]),
       st.lists(st.sampled_from(["reping", "ack_timeout", "ack"]), max_size=4))
def test_a_huge_imported_span_or_a_last_date_never_crashes_a_read(
    policy: dict[str, Any], ts: str, then: list[str]
) -> None:
    """An imported ack_timeout_s of 2**62 (or a delivery dated 9999-12-31) overflowed ``timedelta`` in the
    fold: every read of the box crashed. The fold reads a span past a century as a century, a due past the
    last datetime as never due, and still agrees with the reference."""
    d = make_letter({"ts": ts, "agent": "aya", "kind": "task", "envelope_id": "env_1", "from": "aya", "to": OWNER,
                     "work_item_id": "wi", "ack_policy": policy})
    objs: list[dict[str, Any]] = [d.data()]
    for i, kind in enumerate(then):
        agent = OWNER if kind == "ack" else ENGINE
        objs.append({"ts": ts, "agent": agent, "kind": kind, "ref": d.id, "n": i,
                     **({"count": i + 1} if kind == "reping" else {})})
    letters = _letters(objs)
    book = TrackerBook(OWNER)
    book.add(letters)
    t = book.tracker(d.id)  # the snapshot, with its due time
    for now in (T0, T0 + timedelta(days=365 * 200)):
        book.due_steps(now)
        next_step(book, d.id, now)
    want = reference(OWNER, [(x.id, x.data()) for x in letters])
    assert {x.delivery_id: {f: getattr(x, f) for f in FIELDS} for x in book.trackers()} == want
    assert t.reping_interval_s <= 100 * 366 * 24 * 3600


def test_the_default_ack_policy_and_the_delivery_time() -> None:
    # a policy that only asks for an ack waits 300 s, repings twice 300 s apart, escalates to no one
    d = _delivery({"ack_required": True})
    book = TrackerBook(OWNER)
    book.add([d, _delivery({}, envelope_id="env_2"), _delivery({"escalation_target": "aya"}, envelope_id="env_3"),
              _delivery({"notify_on_ack": False, "ack_required": False}, envelope_id="env_4")])
    t = book.tracker(d.id)
    assert (t.delivered_ts, t.ack_required, t.ack_state) == (_ts(0), True, "pending")
    assert (t.max_repings, t.reping_interval_s, t.escalation_target) == (2, 300, None)
    assert t.ack_due_ts == format_ts(T0 + timedelta(seconds=300)) and t.notify_on == ("ack", "timeout")
    by_env = {x.envelope_id: x for x in book.trackers()}
    assert (by_env["env_2"].ack_required, by_env["env_2"].ack_state, by_env["env_2"].ack_due_ts) == (
        False, "not_applicable", None)
    assert (by_env["env_3"].ack_required, by_env["env_3"].escalation_target) == (True, "aya")  # any policy asks
    assert (by_env["env_4"].ack_required, by_env["env_4"].notify_on) == (False, ("timeout",))
    assert book.open == {d.id, by_env["env_3"].delivery_id}
    due = T0 + timedelta(seconds=300)
    steps = book.due_steps(due)
    assert [(s.action, s.delivery_id, s.due, s.count) for s in steps] == [
        ("reping", lid, due, 1) for lid in sorted(book.open)  # one due: ordered by id
    ]
    assert book.due_steps(T0 + timedelta(seconds=299)) == []


def test_a_repings_and_an_escalations_times_are_their_letters() -> None:
    d = _delivery({"ack_required": True, "ack_timeout_s": 60, "reping_interval_s": 120, "max_repings": 1,
                   "escalation_target": "aya"})
    book = TrackerBook(OWNER)
    book.add([d, make_letter({"ts": _ts(3), "agent": ENGINE, "kind": "reping", "ref": d.id, "count": 1})])
    t = book.tracker(d.id)
    assert (t.reping_count, t.last_ping_ts) == (1, _ts(3))
    assert t.ack_due_ts == _ts(5)  # the reping restarts the clock: its time plus the interval
    s = next_step(book, d.id, T0 + timedelta(minutes=5))
    assert s is not None and (s.action, s.due, s.target) == ("timeout", T0 + timedelta(minutes=5), "aya")
    book.add([make_letter({"ts": _ts(6), "agent": ENGINE, "kind": "ack_timeout", "ref": d.id})])
    s = next_step(book, d.id, T0 + timedelta(days=1))
    assert s is not None and (s.action, s.due, s.target) == ("escalate", T0 + timedelta(minutes=6), "aya")
    book.add([make_letter({"ts": _ts(8), "agent": ENGINE, "kind": "escalation", "ref": d.id, "message": "m" * 12}),
              make_letter({"ts": _ts(9), "agent": ENGINE, "kind": "escalation", "ref": d.id, "message": "n" * 12})])
    t = book.tracker(d.id)
    assert (t.timed_out_ts, t.escalated, t.escalated_ts, t.escalation_id) == (_ts(6), True, _ts(8), "m" * 12)
    assert (t.ack_state, t.ack_due_ts) == ("timed_out", None)


def test_one_tracker_in_full_as_trackers_prints_it() -> None:
    d = make_letter({"ts": _ts(0), "agent": "relay", "kind": "response", "envelope_id": "env_9", "from": "aya",
                     "to": OWNER, "work_item_id": "wi", "thread_id": "th", "parent_id": "env_1",
                     "response_type": "result", "status": "completed", "legacy_fields_preserved": True,
                     "schema_drift": ["ack_policy", 3], "ack_policy": {"ack_required": True, "notify_on_timeout": False,
                                                                     "escalation_target": "none"}})
    book = TrackerBook(OWNER)
    book.add([d, make_letter({"ts": _ts(2), "agent": OWNER, "kind": "ack", "ref": d.id, "status": "rejected"}),
              make_letter({"ts": _ts(3), "agent": ENGINE, "kind": "notify", "ref": d.id, "mode": "agent-turn-nudge",
                           "outcome": "claimed"}),
              make_letter({"ts": _ts(4), "agent": OWNER, "kind": "ack", "ref": d.id, "status": "accepted"})])
    t = book.tracker(d.id)
    assert t.to_dict() == {
        "schema_version": "mailbox-tracker-v3", "delivery_id": d.id, "envelope_id": "env_9", "kind": "response",
        "sender": "aya", "recipient": OWNER, "work_item_id": "wi", "thread_id": "th", "delivered_ts": _ts(0),
        "ack_required": True, "ack_state": "rejected", "ack_due_ts": None, "ack_ts": _ts(2), "ack_status": "rejected",
        "ack_late": False, "timed_out_ts": None, "reping_count": 0, "max_repings": 2, "reping_interval_s": 300,
        "last_ping_ts": None, "escalation_target": "none", "escalated": False, "escalated_ts": None,
        "escalation_id": None, "notify_mode": "agent-turn-nudge", "live_notify_state": "not_attempted",
        "nudge_claimed": True, "ignored_acks": 1, "parent_id": "env_1", "response_type": "result",
        "status": "completed", "delivery_state": "durably_delivered", "legacy_compat_only": True,
        "schema_drift": ["ack_policy"], "ack_notice": "not_attempted", "timeout_notice": None, "notify_on": ["ack"],
    }
    assert t.is_completed_result and book.open == set() and book.unnotified == set()
    assert book.unnoticed == {(d.id, "ack")}


def test_a_delivery_is_found_by_id_envelope_or_a_unique_prefix() -> None:
    a, b = _delivery({}), _delivery({}, envelope_id="env_2", what="b")
    book = TrackerBook(OWNER)
    book.add([a, b, _delivery({}, envelope_id="env_1", what="same envelope, later")])
    assert (book.find(a.id), book.find("env_1"), book.find("env_2")) == (a.id, a.id, b.id)
    assert book.find(a.id[:4]) == (a.id if not b.id.startswith(a.id[:4]) else None)
    assert book.find(a.id[:3]) is None and book.find("env_3") is None and book.find("") is None
    stranger = make_letter({"ts": _ts(0), "agent": "aya", "kind": "task", "envelope_id": "env_x", "from": "aya",
                            "to": "kimi"})
    book.add([stranger, make_letter({"ts": _ts(1), "agent": OWNER, "kind": "ack", "ref": "0" * 12})])
    assert book.find(stranger.id) is None and book.orphans == 1  # another's delivery; an ack naming nothing


def test_odd_fields_read_as_absent_and_the_steps_name_their_delivery() -> None:
    d = make_letter({"agent": "aya", "kind": "task", "to": OWNER, "work_item_id": 5, "thread_id": ["t"],
                     "schema_drift": "not a list", "ack_policy": {"ack_required": True, "escalation_target": 5,
                                                                  "ack_timeout_s": 0, "max_repings": 0}})
    book = TrackerBook(OWNER)
    book.add([d])
    t = book.tracker(d.id)
    assert (t.delivered_ts, t.envelope_id, t.sender, t.work_item_id, t.thread_id, t.schema_drift) == (
        "", "", "aya", None, None, ())
    assert t.escalation_target is None and t.ack_due_ts is None  # no time: never due
    e = _delivery({"ack_required": True, "ack_timeout_s": 60, "max_repings": 0, "escalation_target": "none"})
    f = make_letter({"ts": _ts(0), "kind": "task", "to": OWNER, "envelope_id": "env_f",
                     "ack_policy": {"ack_required": True, "ack_timeout_s": 60, "max_repings": 0,
                                    "escalation_target": "aya"}})
    book.add([e, f])
    assert book.tracker(f.id).sender == ""
    s = next_step(book, e.id, T0 + timedelta(minutes=1))
    assert s is not None and (s.action, s.delivery_id, s.target) == ("timeout", e.id, None)  # "none": no one
    book.add([make_letter({"ts": _ts(2), "agent": ENGINE, "kind": "ack_timeout", "ref": f.id})])
    s = next_step(book, f.id, T0 + timedelta(minutes=3))
    assert s is not None and (s.action, s.delivery_id, s.due, s.target) == ("escalate", f.id, T0 + timedelta(
        minutes=2), "aya")


def test_engine_letters_only_from_the_engine_and_repeats_change_nothing() -> None:
    d = _delivery({"ack_required": True, "reping_interval_s": 60, "max_repings": 3, "escalation_target": "aya"})
    book = TrackerBook(OWNER)
    book.add([d,
              make_letter({"ts": _ts(1), "agent": "kimi", "kind": "reping", "ref": d.id, "count": 1}),
              make_letter({"ts": _ts(2), "agent": ENGINE, "kind": "reping", "ref": d.id, "count": 1}),
              make_letter({"ts": _ts(3), "agent": ENGINE, "kind": "reping", "ref": d.id, "count": 1, "n": 2}),
              make_letter({"ts": _ts(4), "agent": ENGINE, "kind": "ack_timeout", "ref": d.id}),
              make_letter({"ts": _ts(5), "agent": ENGINE, "kind": "escalation", "ref": d.id, "message": 7}),
              make_letter({"ts": _ts(6), "agent": ENGINE, "kind": "notify", "ref": d.id, "about": "timeout",
                           "outcome": "nudge_sent"}),
              make_letter({"ts": _ts(7), "agent": ENGINE, "kind": "notify", "ref": d.id, "about": "timeout",
                           "outcome": "claimed", "n": 2}),
              make_letter({"ts": _ts(8), "agent": OWNER, "kind": "ack", "ref": "0" * 12}),
              make_letter({"ts": _ts(9), "agent": ENGINE, "kind": "reping", "ref": "1" * 12})])
    t = book.tracker(d.id)
    assert (t.reping_count, t.last_ping_ts) == (1, _ts(2))  # the first letter of a count is its time
    assert (t.escalated, t.escalation_id, t.timeout_notice) == (True, None, "nudge_sent")
    assert book.orphans == 2


def test_a_result_naming_a_work_item_closes_that_items_tasks() -> None:
    def task(env: str, work: str | None) -> Letter:
        return make_letter({"ts": _ts(0), "agent": "aya", "kind": "task", "envelope_id": env, "from": "aya",
                            "to": OWNER, **({"work_item_id": work} if work else {})})

    by_work, other, bare = task("env_a", "wi_1"), task("env_b", "wi_2"), task("env_c", None)
    worker = TrackerBook(OWNER)
    worker.add([by_work, other, bare])
    requester = TrackerBook("aya")
    requester.add([make_letter({"ts": _ts(1), "agent": OWNER, "kind": "response", "envelope_id": "env_r",
                                "from": OWNER, "to": "aya", "parent_id": "wi_1", "response_type": "result",
                                "status": "completed"})])
    closed = close_tasks([*worker.trackers(), *requester.trackers()])
    assert {k: v.envelope_id for k, v in closed.items()} == {by_work.id: "env_r"}

"""The lifecycle table, its rails, and replay of an item's chain (pure, no files)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.derive.lifecycle import (
    ARCHIVING,
    LINK_KINDS,
    PROGRESS,
    TERMINAL,
    TRANSITIONS,
    Link,
    State,
    check_rails,
    check_transition,
    effective,
    is_due,
    move_verb,
    replay,
    steps_between,
)
from dovecote.errors import Refusal

ITEM = "a" * 12


def link(n: int, kind: str, prev: str, *, ts: str = "2026-07-05T10:00:00Z", **kw: object) -> Link:
    return Link(id=f"{n:012x}", kind=kind, ref=ITEM, prev=prev, ts=ts, agent="ent_b", **kw)  # type: ignore[arg-type]


def chain(*kinds: str, **kw: object) -> list[Link]:
    """Links that each follow the previous one, one second apart."""
    out: list[Link] = []
    prev = ITEM
    for n, kind in enumerate(kinds, 1):
        lk = link(n, kind, prev, ts=f"2026-07-05T10:00:{n:02d}Z", **kw)
        out.append(lk)
        prev = lk.id
    return out


def test_the_table_is_the_documented_machine() -> None:
    legal = {(s, k) for s, moves in TRANSITIONS.items() for k in moves}
    assert (State.WAIT, "claim") in legal and (State.ACTIVE, "complete") in legal
    assert (State.WAIT, "complete") not in legal  # the tic-312 lesson: WAIT -> DONE is illegal
    assert (State.DEFER, "undefer") in legal and (State.DEFER, "claim") not in legal
    for s in TERMINAL:
        assert TRANSITIONS[s] == {}, f"{s} must be terminal"
    assert TRANSITIONS[State.WAIT]["seen"] is State.WAIT


@pytest.mark.parametrize("state", list(State))
@pytest.mark.parametrize("kind", sorted(LINK_KINDS))
def test_check_transition_matches_the_table(state: State, kind: str) -> None:
    expected = TRANSITIONS[state].get(kind)
    if expected is not None:
        assert check_transition(state, kind, ITEM) is expected
        return
    with pytest.raises(Refusal) as e:
        check_transition(state, kind, ITEM)
    want = "already_claimed" if (state, kind) == (State.ACTIVE, "claim") else "illegal_transition"
    assert e.value.reason == want


def test_unknown_verb_is_illegal() -> None:
    with pytest.raises(Refusal) as e:
        check_transition(State.WAIT, "archive", ITEM)
    assert e.value.reason == "illegal_transition"


def test_rails() -> None:
    ok = {"seen": True, "response_required": False, "responded": False, "until_tic": None, "until": None}
    check_rails("complete", ITEM, **ok)  # type: ignore[arg-type]
    with pytest.raises(Refusal, match="not_seen"):
        check_rails("complete", ITEM, **{**ok, "seen": False})  # type: ignore[arg-type]
    with pytest.raises(Refusal, match="not_seen"):
        check_rails("nack", ITEM, **{**ok, "seen": False})  # type: ignore[arg-type]
    check_rails("claim", ITEM, **{**ok, "seen": False})  # type: ignore[arg-type]
    with pytest.raises(Refusal, match="response_required"):
        check_rails("complete", ITEM, **{**ok, "response_required": True})  # type: ignore[arg-type]
    check_rails("complete", ITEM, **{**ok, "response_required": True, "responded": True})  # type: ignore[arg-type]
    with pytest.raises(Refusal, match="no_due"):
        check_rails("defer", ITEM, **ok)  # type: ignore[arg-type]
    check_rails("defer", ITEM, **{**ok, "until_tic": 9})  # type: ignore[arg-type]
    check_rails("defer", ITEM, **{**ok, "until": "2030-01-01T00:00:00Z"})  # type: ignore[arg-type]


def test_replay_walks_the_chain() -> None:
    r = replay(ITEM, State.WAIT, chain("seen", "claim", "complete"))
    assert r.state is State.DONE
    assert r.seen
    assert [lk.kind for lk in r.applied] == ["seen", "claim", "complete"]
    assert r.head == f"{3:012x}"
    assert r.conflicts == []


def test_an_illegal_link_is_a_conflict_and_changes_nothing() -> None:
    r = replay(ITEM, State.WAIT, chain("complete"))
    assert r.state is State.WAIT
    assert r.head == ITEM
    assert [(lk.kind, why) for lk, why in r.conflicts] == [("complete", "illegal_transition")]


def test_a_fork_picks_the_earliest_legal_sibling_and_reports_the_other() -> None:
    a = link(1, "claim", ITEM, ts="2026-07-05T10:00:05Z")
    b = link(2, "nack", ITEM, ts="2026-07-05T10:00:01Z")  # earlier, but not seen: still legal by the table
    r = replay(ITEM, State.WAIT, [a, b])
    assert r.state is State.NACK
    assert [(lk.id, why) for lk, why in r.conflicts] == [(a.id, "lost_fork")]


def test_links_after_a_losing_sibling_are_orphans() -> None:
    a = link(1, "claim", ITEM, ts="2026-07-05T10:00:01Z")
    b = link(2, "claim", ITEM, ts="2026-07-05T10:00:02Z")
    c = link(3, "complete", b.id, ts="2026-07-05T10:00:03Z")
    r = replay(ITEM, State.WAIT, [c, b, a])
    assert r.state is State.ACTIVE and r.head == a.id
    assert {(lk.id, why) for lk, why in r.conflicts} == {(b.id, "lost_fork"), (c.id, "orphan")}


def test_defer_comes_due_by_tic_and_by_time() -> None:
    r = replay(ITEM, State.WAIT, chain("defer", until_tic=110))
    assert r.state is State.DEFER and r.due_tic == 110
    now = datetime(2026, 7, 5, 12, tzinfo=UTC)
    assert effective(r, 109, now) is State.DEFER
    assert effective(r, 110, now) is State.WAIT
    assert effective(r, None, now) is State.DEFER  # no tic known: a tic due never passes by itself
    r2 = replay(ITEM, State.WAIT, chain("defer", until="2026-07-05T11:00:00Z"))
    assert effective(r2, None, datetime(2026, 7, 5, 10, 59, tzinfo=UTC)) is State.DEFER
    assert effective(r2, None, datetime(2026, 7, 5, 11, 0, tzinfo=UTC)) is State.WAIT
    assert not is_due(None, None, 10**9, now)


def test_a_claim_after_the_due_applies_to_the_resurfaced_item() -> None:
    links = chain("defer", until_tic=110)
    claim = link(9, "claim", links[-1].id, ts="2026-07-05T10:05:00Z", tic=111)
    r = replay(ITEM, State.WAIT, [*links, claim])
    assert r.state is State.ACTIVE and not r.conflicts
    early = link(9, "claim", links[-1].id, ts="2026-07-05T10:05:00Z", tic=105)
    r2 = replay(ITEM, State.WAIT, [*links, early])
    assert r2.state is State.DEFER
    assert [why for _, why in r2.conflicts] == ["illegal_transition"]


def test_seen_in_defer_keeps_the_due() -> None:
    r = replay(ITEM, State.WAIT, chain("defer", "seen", until_tic=110))
    assert r.state is State.DEFER and r.seen and r.due_tic == 110


def test_an_item_that_arrives_deferred_starts_in_defer() -> None:
    r = replay(ITEM, State.DEFER, [], due_tic=120)
    assert effective(r, 119, datetime.now(UTC)) is State.DEFER
    assert effective(r, 120, datetime.now(UTC)) is State.WAIT


_kinds = st.sampled_from(sorted(LINK_KINDS))


@st.composite
def link_sets(draw: st.DrawFn) -> list[Link]:
    """Random links whose prev points at the item or at an earlier link (a tree)."""
    n = draw(st.integers(0, 12))
    out: list[Link] = []
    for i in range(n):
        prev = draw(st.sampled_from([ITEM, *(lk.id for lk in out)]))
        kind = draw(_kinds)
        second = draw(st.integers(0, 59))
        extra: dict[str, object] = {}
        if kind == "defer":
            extra["until_tic"] = draw(st.integers(100, 120))
        tic = draw(st.integers(95, 125))
        out.append(link(i + 1, kind, prev, ts=f"2026-07-05T10:00:{second:02d}Z", tic=tic, **extra))
    return out


@settings(max_examples=300, deadline=None)
@given(links=link_sets(), data=st.data())
def test_replay_is_the_same_for_every_arrival_order(links: list[Link], data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(links))
    a = replay(ITEM, State.WAIT, links)
    b = replay(ITEM, State.WAIT, list(shuffled))
    assert (a.state, a.head, a.seen, a.due_tic) == (b.state, b.head, b.seen, b.due_tic)
    assert [lk.id for lk in a.applied] == [lk.id for lk in b.applied]
    assert sorted((lk.id, w) for lk, w in a.conflicts) == sorted((lk.id, w) for lk, w in b.conflicts)
    # every link is either applied or reported, never silently dropped
    assert {lk.id for lk in a.applied} | {lk.id for lk, _ in a.conflicts} == {lk.id for lk in links}
    # the applied path is a chain from the item, and only ever makes table moves
    prev = ITEM
    for lk in a.applied:
        assert lk.prev == prev
        prev = lk.id


@pytest.mark.parametrize("src", list(State))
@pytest.mark.parametrize("dst", list(State))
def test_the_steps_between_two_states_walk_the_table_and_never_rest_in_defer(src: State, dst: State) -> None:
    from dovecote.derive.lifecycle import TRANSITIONS, move_verb, steps_between

    steps = steps_between(src, dst)
    if steps is None:
        assert move_verb(src, dst) is None, "a single verb is a route"
        return
    state = src
    for n, kind in enumerate(steps):
        assert kind not in ("seen", "resurface"), "a move is never a seen or time's resurfacing"
        state = TRANSITIONS[state][kind]
        assert state is not State.DEFER or n == len(steps) - 1, "a DEFER needs a due the tree did not give"
    assert state is dst
    one = move_verb(src, dst)
    assert (one is not None) == (len(steps) == 1) or src is dst


# -- the tables written out, and what each entry does ---------------------------------------------


def test_the_tables_are_the_documented_ones_written_out() -> None:
    # by hand, not from the tables: one changed entry is one changed rule (DESIGN 3)
    w, a, d, done, nack = State.WAIT, State.ACTIVE, State.DEFER, State.DONE, State.NACK
    assert {
        w: {"claim": a, "defer": d, "nack": nack, "seen": w, "unseen": w},
        a: {"complete": done, "defer": d, "seen": a, "unseen": a},
        d: {"undefer": w, "resurface": w, "seen": d, "unseen": d},
        done: {},
        nack: {},
    } == TRANSITIONS
    assert {done, nack} == TERMINAL
    assert {"complete", "nack"} == ARCHIVING
    assert {"claim", "complete", "defer", "undefer", "resurface", "nack", "seen", "unseen"} == LINK_KINDS


def test_resurface_lands_in_wait_and_clears_the_due() -> None:
    r = replay(ITEM, State.WAIT, chain("defer", "resurface", until_tic=110))
    assert r.state is State.WAIT and not r.conflicts
    assert (r.due_tic, r.due_time) == (None, None)
    assert r.head == f"{2:012x}"
    assert r.entered_ts == "2026-07-05T10:00:02Z"
    claimed = replay(ITEM, State.WAIT, chain("defer", "resurface", "claim", until_tic=110))
    assert claimed.state is State.ACTIVE and not claimed.conflicts


def test_progress_ranks_the_copies_a_tree_import_meets() -> None:
    # a tree holding two copies of one item (a copy, a crashed move) keeps the one further along:
    # an ACTIVE copy beats a DEFER copy beats a WAIT copy; DONE and NACK, both terminal, tie (the first one kept)
    assert PROGRESS == {State.WAIT: 0, State.DEFER: 1, State.ACTIVE: 2, State.DONE: 3, State.NACK: 3}
    ranked = sorted(State, key=lambda s: (PROGRESS[s], list(State).index(s)))
    assert ranked == [State.WAIT, State.DEFER, State.ACTIVE, State.DONE, State.NACK]


def test_nack_is_terminal() -> None:
    r = replay(ITEM, State.WAIT, chain("seen", "nack", "claim", "undefer", until_tic=110))
    assert r.state is State.NACK and r.head == f"{2:012x}"
    assert [(lk.kind, why) for lk, why in r.conflicts] == [("claim", "illegal_transition"), ("undefer", "orphan")]
    for kind in sorted(LINK_KINDS):
        with pytest.raises(Refusal) as e:
            check_transition(State.NACK, kind, ITEM)
        assert e.value.reason == "illegal_transition"


def test_a_claim_after_a_time_based_defer_came_due() -> None:
    links = chain("defer", until="2026-07-05T11:00:00Z")
    late = link(9, "claim", links[-1].id, ts="2026-07-05T11:05:00Z")  # no tic: the time alone decides
    r = replay(ITEM, State.WAIT, [*links, late])
    assert r.state is State.ACTIVE and not r.conflicts
    assert (r.entered_ts, r.due_time) == ("2026-07-05T11:05:00Z", None)
    early = link(9, "claim", links[-1].id, ts="2026-07-05T10:59:59Z")
    r2 = replay(ITEM, State.WAIT, [*links, early])
    assert r2.state is State.DEFER and r2.due_time == "2026-07-05T11:00:00Z"
    assert [why for _, why in r2.conflicts] == ["illegal_transition"]


def test_wait_begins_at_the_due_not_at_the_link_that_noticed_it() -> None:
    # a seen after the due changes no state, but the WAIT it sees began at the due
    by_tic = chain("defer", until_tic=110)
    seen = link(9, "seen", by_tic[-1].id, ts="2026-07-05T12:00:00Z", tic=115)
    r = replay(ITEM, State.WAIT, [*by_tic, seen])
    assert r.state is State.WAIT and r.seen
    assert (r.entered_tic, r.entered_ts) == (110, "2026-07-05T12:00:00Z")
    assert (r.due_tic, r.due_time) == (None, None)
    by_time = chain("defer", until="2026-07-05T11:00:00Z")
    seen = link(9, "seen", by_time[-1].id, ts="2026-07-05T12:00:00Z", tic=115)
    r2 = replay(ITEM, State.WAIT, [*by_time, seen])
    assert r2.state is State.WAIT
    assert (r2.entered_tic, r2.entered_ts) == (115, "2026-07-05T11:00:00Z")
    before = link(9, "seen", by_time[-1].id, ts="2026-07-05T10:30:00Z", tic=101)
    r3 = replay(ITEM, State.WAIT, [*by_time, before])
    assert r3.state is State.DEFER and (r3.entered_tic, r3.entered_ts) == (None, "2026-07-05T10:00:01Z")


def test_is_due_never_guesses_an_unknown_clock() -> None:
    now = datetime(2026, 7, 5, 12, tzinfo=UTC)
    assert not is_due(110, None, None, now)  # no tic known
    assert not is_due(None, "2026-07-05T11:00:00Z", 200, None)  # no time known
    assert not is_due(None, "not a time", 200, now)
    assert not is_due(110, None, 109, now)
    assert is_due(110, None, 110, None)
    assert is_due(110, "2026-07-05T11:00:00Z", 100, now)  # the tic has not come, the time has
    assert not is_due(110, "2026-07-05T12:00:01Z", 100, now)
    assert is_due(None, "2026-07-05T12:00:00Z", None, now)


def test_the_steps_between_states_are_the_shortest_routes() -> None:
    from dovecote.derive.lifecycle import move_verb, steps_between

    assert steps_between(State.DEFER, State.NACK) == ["undefer", "nack"]
    assert steps_between(State.DEFER, State.DONE) == ["undefer", "claim", "complete"]
    assert steps_between(State.WAIT, State.DONE) == ["claim", "complete"]
    assert steps_between(State.ACTIVE, State.DEFER) == ["defer"]
    assert steps_between(State.ACTIVE, State.WAIT) is None
    assert steps_between(State.NACK, State.WAIT) is None
    assert steps_between(State.DONE, State.DONE) == []
    assert move_verb(State.DEFER, State.WAIT) == "undefer"  # never time's resurface
    assert move_verb(State.WAIT, State.WAIT) is None  # never a seen
    assert move_verb(State.WAIT, State.DONE) is None


def test_a_links_fields_read_as_show_prints_them() -> None:
    lk = Link.from_data(ITEM, {
        "kind": "complete", "ref": "b" * 12, "prev": "c" * 12, "ts": "2026-07-05T10:00:00Z", "agent": "ent_b",
        "tic": 7, "until_tic": 9, "until": "2026-07-06T00:00:00Z", "reason": "done by hand", "result_ref": "d" * 12,
    })
    assert lk == Link(
        id=ITEM, kind="complete", ref="b" * 12, prev="c" * 12, ts="2026-07-05T10:00:00Z", agent="ent_b",
        tic=7, until_tic=9, until="2026-07-06T00:00:00Z", reason="done by hand", result_ref="d" * 12,
    )
    odd = Link.from_data(ITEM, {"kind": "seen", "ref": "b" * 12, "tic": True, "until_tic": "9", "reason": 5,
                                "result_ref": ["x"], "ts": 3})
    assert odd == Link(id=ITEM, kind="seen", ref="b" * 12, prev="b" * 12, ts="", agent="")
    assert Link.from_data(ITEM, {}) == Link(id=ITEM, kind="", ref="", prev="", ts="", agent="")


def test_only_a_seen_marks_the_item_read() -> None:
    r = replay(ITEM, State.WAIT, chain("claim", "defer", until_tic=110))
    assert r.state is State.DEFER and not r.seen


def test_an_item_that_arrives_in_a_state_keeps_when_it_entered_it() -> None:
    r = replay(ITEM, State.DEFER, [], entered_ts="2026-07-05T09:00:00Z", entered_tic=90, due_tic=120)
    assert (r.state, r.head, r.entered_ts, r.entered_tic, r.due_tic) == (
        State.DEFER, ITEM, "2026-07-05T09:00:00Z", 90, 120)


def test_each_refusal_says_what_was_refused_and_why() -> None:
    def detail(call: object, *args: object, **kw: object) -> tuple[str, str]:
        with pytest.raises(Refusal) as e:
            call(*args, **kw)  # type: ignore[operator]
        return e.value.reason, e.value.detail

    assert detail(check_transition, State.WAIT, "archive", ITEM) == (
        "illegal_transition", "'archive' is not a lifecycle verb")
    assert detail(check_transition, State.ACTIVE, "claim", ITEM) == (
        "already_claimed", f"item {ITEM} is already ACTIVE")
    assert detail(check_transition, State.WAIT, "complete", ITEM) == (
        "illegal_transition", f"complete is not allowed from WAIT (item {ITEM})")
    ok = {"seen": True, "response_required": False, "responded": False, "until_tic": None, "until": None}
    assert detail(check_rails, "defer", ITEM, **ok) == (
        "no_due", f"defer of {ITEM} needs a due: --until-tic or --until (no dead ends)")
    assert detail(check_rails, "nack", ITEM, **{**ok, "seen": False}) == (
        "not_seen", f"item {ITEM} must be marked seen before it is archived by nack")
    waiting = {**ok, "response_required": True}
    assert detail(check_rails, "complete", ITEM, **waiting) == ("response_required", (
        f"item {ITEM} expects a response sent to its sender (a response, or a reply in its thread, with"
        f" --reply-to {ITEM}); none has been delivered yet"))
    assert "expects a response sent to ent_a (" in detail(check_rails, "complete", ITEM, **waiting,
                                                          response_to="ent_a")[1]


def test_unseen_marks_an_item_unread_again_and_archiving_then_needs_a_new_seen() -> None:
    # the read mark is the last of seen/unseen on the chain; neither changes the state
    r = replay(ITEM, State.WAIT, chain("seen", "unseen"))
    assert r.state is State.WAIT and not r.seen and not r.conflicts
    again = replay(ITEM, State.WAIT, chain("seen", "unseen", "seen", "claim", "unseen"))
    assert again.state is State.ACTIVE and not again.seen and not again.conflicts
    with pytest.raises(Refusal, match="not_seen"):
        check_rails("nack", ITEM, seen=again.seen, response_required=False, responded=False, until_tic=None,
                    until=None)
    closed = replay(ITEM, State.WAIT, chain("seen", "nack", "unseen"))
    assert closed.state is State.NACK and closed.seen  # an archived item is never made unread
    assert [reason for _, reason in closed.conflicts] == ["illegal_transition"]
    assert move_verb(State.WAIT, State.WAIT) is None and "unseen" not in (steps_between(State.WAIT, State.DONE) or [])

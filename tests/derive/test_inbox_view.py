"""The patched view order equals the full sort.

After new letters a kept view takes the items they touched out of its order
and puts them back where their new order places them (``inbox_view._reordered``)
instead of sorting six thousand rows again. The property: over random boxes
whose later letters move, add and re-prioritise items, the patched order is
the order a full sort of the same rows gives, and the whole audit equals a cold
fold's (its expiry never later), whether the view was patched or (many touched) sorted again.
"""

from __future__ import annotations

import gc
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.derive.inbox import snapshot as inbox_snapshot
from dovecote.derive.inbox import view as inbox_view
from dovecote.derive.inbox.book import Clock, InboxBook
from dovecote.derive.inbox.view import current_view, inbox_audit
from dovecote.errors import Refusal
from dovecote.model.results import builtins
from dovecote.roster.config import Limits
from dovecote.verbs import Inbox
from inboxhelpers import _ROW, ENTITY, T0
from inboxhelpers import row_letters_of as letters_of
from mailhelpers import ENTITY as MAIL_ENTITY
from mailhelpers import mail_home, send


@settings(max_examples=120, deadline=None)
@given(
    specs=st.lists(_ROW, min_size=1, max_size=12),
    patch_max=st.sampled_from([0, 1, 3, 64]),
    tic=st.none() | st.integers(min_value=0, max_value=30),
    data=st.data(),
)
def test_the_patched_order_is_the_full_sort(
    specs: list[dict[str, Any]], patch_max: int, tic: int | None, data: st.DataObject
) -> None:
    letters = letters_of(specs)
    split = data.draw(st.integers(min_value=0, max_value=len(letters)))
    clock = Clock(tic, T0 + timedelta(days=1))
    limits = Limits(stale_hours=5, stale_tics=3)
    book = InboxBook(ENTITY)
    book.add(letters[:split])
    current_view(book, clock, limits, False)
    old = inbox_view.PATCH_MAX
    inbox_view.PATCH_MAX = patch_max
    try:
        book.add(letters[split:])
        vs = current_view(book, clock, limits, False)
    finally:
        inbox_view.PATCH_MAX = old
    assert vs.ordered == [iid for iid, _ in sorted(vs.rows.items(), key=lambda pair: pair[1][0])]
    cold = InboxBook(ENTITY)
    cold.add(letters)
    (got, until), (want, want_until) = inbox_audit(book, clock, limits=limits), inbox_audit(cold, clock, limits=limits)
    assert got == want
    assert want_until is None or (until is not None and until <= want_until)  # a kept view may expire earlier


def test_an_inbox_read_leaves_the_collector_as_it_found_it(tmp_path: Path) -> None:
    """The read pauses the cyclic collector (``inboxhandle``) and must resume it, also on a refusal."""
    dc = mail_home(tmp_path)
    send(dc, "subject")
    was = gc.isenabled()  # an in-process CLI test before this one (a sweep) may have left it off
    gc.enable()
    try:
        assert builtins(dc.inbox(Inbox(entity_id=MAIL_ENTITY)))["items"]
        assert gc.isenabled()
        with pytest.raises(Refusal):
            dc.inbox(Inbox(entity_id="ent_nobody"))
        assert gc.isenabled()
        gc.disable()
        dc.inbox(Inbox(entity_id=MAIL_ENTITY))
        assert not gc.isenabled()  # a caller that paused it keeps it paused
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()


@settings(max_examples=120, deadline=None)
@given(
    specs=st.lists(_ROW, min_size=1, max_size=10),
    offsets=st.lists(st.integers(min_value=0, max_value=4 * 86400), min_size=2, max_size=6),
    tic=st.none() | st.integers(min_value=0, max_value=30),
    data=st.data(),
)
def test_a_view_patched_row_by_row_as_the_clock_moves_is_the_cold_view(
    specs: list[dict[str, Any]], offsets: list[int], tic: int | None, data: st.DataObject
) -> None:
    """As time passes (no new tic), the kept view places again only the rows whose own moment came
    (an age in hours ticking over, a stale crossing, a defer's due); it is never rebuilt whole, and
    every audit equals a cold fold's at the same clock, through a snapshot restore too."""
    letters = letters_of(specs)
    split = data.draw(st.integers(min_value=0, max_value=len(letters)))
    limits = Limits(stale_hours=5, stale_tics=3)
    clocks = [Clock(tic, T0 + timedelta(seconds=s)) for s in sorted(offsets)]
    book = InboxBook(ENTITY)
    book.add(letters[:split])
    built = current_view(book, clocks[0], limits, False).since
    for n, clock in enumerate(clocks[1:]):
        if data.draw(st.booleans()):  # restored from its snapshot: each row's moment travels with it
            book = inbox_snapshot.loads(inbox_snapshot.dumps(book))
        if n == 1:
            book.add(letters[split:])
        arrived = letters if n >= 1 else letters[:split]
        (got, until) = inbox_audit(book, clock, limits=limits)
        cold = InboxBook(ENTITY)
        cold.add(arrived)
        want, want_until = inbox_audit(cold, clock, limits=limits)
        assert got == want
        assert until is None or until > clock.now  # never a past moment
        assert want_until is None or (until is not None and until <= want_until)  # earlier is safe
        vs = book.view_state
        assert vs is not None and vs.since == built  # patched, never rebuilt whole


def test_a_clock_gone_back_builds_the_view_whole() -> None:
    letters = letters_of([{"created": 0, "priority": "high", "tic": None, "moves": []}])
    book = InboxBook(ENTITY)
    book.add(letters)
    limits = Limits()
    later, earlier = Clock(None, T0 + timedelta(days=2)), Clock(None, T0 + timedelta(days=1))
    assert current_view(book, later, limits, False).since == later.now
    vs = current_view(book, earlier, limits, False)
    assert vs.since == earlier.now
    cold = InboxBook(ENTITY)
    cold.add(letters)
    assert inbox_audit(book, earlier, limits=limits) == inbox_audit(cold, earlier, limits=limits)

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

from dovecote.derive import inbox_view
from dovecote.derive.inbox import Clock, InboxBook
from dovecote.derive.inbox_view import current_view, inbox_audit
from dovecote.errors import Refusal
from dovecote.roster import Limits
from dovecote.verbs import Inbox
from mailhelpers import ENTITY as MAIL_ENTITY
from mailhelpers import mail_home, send
from test_inbox_clock import ENTITY, T0
from test_injection_path import _ROW, letters_of


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
        assert dc.inbox(Inbox(entity_id=MAIL_ENTITY))["items"]
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

"""The inbox's time cache: a warm read equals a cold read at every instant.

``inbox_audit`` keeps its last view on the book and reuses it until the moment
some row would read differently by itself (an age in hours ticking over, the
stale threshold passing, a defer coming due). The property: as ``now``
advances, with letters arriving in between, the warm book answers exactly what
a book folded from scratch answers at the same clock (the same promise
``test_fates`` makes for the fate fold against its reference).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.derive.inbox.book import Clock, InboxBook
from dovecote.derive.inbox.view import inbox_audit
from dovecote.model.letters import Letter
from dovecote.roster.config import Limits
from inboxhelpers import _ITEM, ENTITY, T0, letters_of


def cold(letters: list[Letter]) -> InboxBook:
    book = InboxBook(ENTITY)
    book.add(letters)
    return book


@settings(max_examples=150, deadline=None)
@given(
    specs=st.lists(_ITEM, min_size=1, max_size=6),
    stale_hours=st.integers(min_value=1, max_value=48),
    tic=st.sampled_from([None, None, 7]),
    include_terminal=st.booleans(),
    data=st.data(),
)
def test_a_warm_view_equals_a_cold_view_as_now_advances(
    specs: list[dict[str, Any]], stale_hours: int, tic: int | None, include_terminal: bool, data: st.DataObject
) -> None:
    letters, turns = letters_of(specs)
    limits = Limits(stale_hours=stale_hours)
    # instants near where answers turn (an hour boundary, the stale threshold, a due), and anywhere
    near = [t + d for t in turns for d in (0, 1, 3600 * stale_hours, 3600 * stale_hours + 1, 3599, 3600)]
    steps = data.draw(st.lists(st.sampled_from(near) | st.integers(min_value=0, max_value=8 * 86400),
                               min_size=1, max_size=12))
    arrived = data.draw(st.integers(min_value=0, max_value=len(letters)))
    warm = InboxBook(ENTITY)
    warm.add(letters[:arrived])
    micros = [data.draw(st.sampled_from([0, 1, 999_999])) for _ in steps]
    # time only moves forward (a warm view is valid until an instant, never before the last one it answered)
    nows = sorted(T0 + timedelta(seconds=offset, microseconds=us) for offset, us in zip(steps, micros, strict=True))
    for n, now in enumerate(nows):
        if n == len(steps) // 2:  # the rest arrive part-way
            warm.add(letters[arrived:])
            arrived = len(letters)
        clock = Clock(tic, now)
        got, until = inbox_audit(warm, clock, limits=limits, include_terminal=include_terminal)
        want, _ = inbox_audit(cold(letters[:arrived]), clock, limits=limits, include_terminal=include_terminal)
        assert got == want, f"at {now.isoformat()}"
        assert until is None or until > now  # the cache never claims an answer already past

"""The hook's cold path: the injection block read from the fold equals the one rendered from the view.

``inbox --format injection`` no longer builds the JSON view: ``inbox_block``
joins the lines each row keeps beside it in the view state (persisted in the
fold snapshot). The property: for random boxes cut at a random point,
snapshotted, restored and fed the rest, as the tic and ``now`` advance, the
block equals ``inbox_injection`` of the view a
cold fold of the same letters gives, byte for byte, whether or not full views
are read from the restored book in between; and the moment it expires is
never past, nor later than the cold view's.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.derive.inbox import snapshot as inbox_snapshot
from dovecote.derive.inbox.book import Clock, InboxBook
from dovecote.derive.inbox.view import inbox_audit, inbox_block
from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.ops.mail.injection import inbox_injection
from dovecote.roster.config import Limits
from dovecote.verbs import Inbox, Move
from inboxhelpers import _ROW, ENTITY, T0
from inboxhelpers import row_letters_of as letters_of
from mailhelpers import ENTITY as MAIL_ENTITY
from mailhelpers import mail_home, send


def rendered(book: InboxBook, clock: Clock, limits: Limits, include_terminal: bool, items: bool) -> str:
    """What ``inbox --format injection`` printed before: ``inbox_injection`` of the whole view."""
    view, _ = inbox_audit(book, clock, limits=limits, include_terminal=include_terminal)
    shown = {"entity": book.entity, "counts": view["counts"], "clock": {"tic": clock.tic}}
    if items:
        shown["items"] = view["items"]
    return inbox_injection(shown)


@settings(max_examples=150, deadline=None)
@given(
    specs=st.lists(_ROW, min_size=0, max_size=7),
    stale=st.integers(min_value=1, max_value=30),
    include_terminal=st.booleans(),
    items=st.booleans(),
    data=st.data(),
)
def test_the_block_from_a_restored_fold_equals_the_rendered_cold_view(
    specs: list[dict[str, Any]], stale: int, include_terminal: bool, items: bool, data: st.DataObject
) -> None:
    letters = letters_of(specs)
    limits = Limits(stale_hours=stale, stale_tics=stale // 3)
    split = data.draw(st.integers(min_value=0, max_value=len(letters)))
    # the clock: times only move forward; the tic is unknown throughout, or climbs
    offsets = sorted(data.draw(st.lists(st.integers(min_value=0, max_value=5 * 86400), min_size=1, max_size=8)))
    tics: list[int | None] = (
        [None] * len(offsets) if data.draw(st.booleans())
        else sorted(data.draw(st.lists(st.integers(min_value=0, max_value=60), min_size=len(offsets),
                                       max_size=len(offsets))))
    )
    clocks = [Clock(tic, T0 + timedelta(seconds=s)) for tic, s in zip(tics, offsets, strict=True)]

    head = InboxBook(ENTITY)
    head.add(letters[:split])
    if data.draw(st.booleans()):  # the snapshot carries a view, its rows packed beside their lines
        inbox_block(head, clocks[0], limits=limits, include_terminal=include_terminal)
    book = inbox_snapshot.loads(inbox_snapshot.dumps(head))
    rest = letters[split:]
    for n, clock in enumerate(clocks):
        if n == len(clocks) // 2:  # the letters after the snapshot's mark arrive part-way
            book.add(rest)
        arrived = letters if n >= len(clocks) // 2 else letters[:split]
        got, until = inbox_block(book, clock, limits=limits, include_terminal=include_terminal, items=items)
        cold = InboxBook(ENTITY)
        cold.add(arrived)
        assert got == rendered(cold, clock, limits, include_terminal, items)
        want_until = inbox_audit(cold, clock, limits=limits, include_terminal=include_terminal)[1]
        # the block's cache expiry never claims a past answer nor outlives the cold view's (earlier is safe)
        assert until is None or until > clock.now
        assert want_until is None or (until is not None and until <= want_until)
        if data.draw(st.booleans()):  # a full view read in between decodes some rows; the block stays the same
            full = rendered(book, clock, limits, include_terminal, items)
            assert inbox_block(book, clock, limits=limits, include_terminal=include_terminal, items=items)[0] == full


def test_the_handle_prints_the_block_its_view_renders(tmp_path: Path) -> None:
    dc: Dovecote = mail_home(tmp_path)
    for k, priority in enumerate(["urgent", "normal", "high", "low"]):
        send(dc, f"subject {k}", priority=priority)
    first = builtins(dc.inbox(Inbox(entity_id=MAIL_ENTITY, current_tic=5)))["items"][0]["id"]
    dc.move(Move(kind="claim", entity_id=MAIL_ENTITY, ref=first, current_tic=5))
    for direction in ("inbound", "outbound", "both"):
        v = Inbox(entity_id=MAIL_ENTITY, current_tic=9, direction=direction)
        text, _ = Dovecote(dc.layout.root).injection_until(v)  # a cold handle: from the snapshot
        assert text == inbox_injection(builtins(dc.inbox(v)))
        assert ("[ACTIVE]" in text) == (direction != "outbound")

"""The inbox view of an ``InboxBook``: counts, flags and the open items in order.

Pure (the caller passes the clocks). ``inbox_audit`` is the whole view every
face shows as JSON; ``inbox_block`` is the session-start injection block alone,
read from the same view state without building the rows it does not print.

Both keep the book's last view (``ViewState``), so while the tic and thresholds
are the same and the clock has not gone back, a read redoes only the items
touched by new letters and the rows whose own moment to change by themselves
(an age in hours ticking over, a stale threshold passing, a defer coming due:
``_row_until``) has come; a view read with no tic, whose ages in hours tick
over every few seconds somewhere in a big box, is patched row by row, not
rebuilt whole. A view restored
from a fold snapshot holds its rows packed (``msgspec.Raw``) and each row's
injection lines beside it, so the block after one new letter costs the lines
it joins, not six thousand decoded rows.
"""

from __future__ import annotations

import math
from bisect import insort
from datetime import datetime, timedelta
from typing import Any

from dovecote.derive.inbox.book import Clock, InboxBook, Item, item_row
from dovecote.derive.inbox.state import BUCKETS, LOOSE, OUTBOUND, Order, ViewState, block, row_lines, row_of
from dovecote.derive.lifecycle import PRIORITY_RANK, TERMINAL, effective
from dovecote.roster.config import Limits
from dovecote.util.timeutil import order_key, parse_time


def _order(row: dict[str, Any]) -> Order:
    src = row["source_tic"]
    created = order_key(row["created_at"])
    return (PRIORITY_RANK.get(row["priority"], 2), src if src is not None else math.inf, created, row["id"])


def _row_until(row: dict[str, Any], now: datetime, stale_hours: int) -> datetime | None:
    """When this row would first read differently with no new letter and no new
    tic: an age in hours ticking over, the stale threshold passing, or a defer
    coming due by time."""
    times: list[datetime] = []
    for hours, since in ((row["age_hours"], row["created_at"]), (row["in_state_hours"], row["entered_at"])):
        t = parse_time(since)
        if hours is not None and t is not None:
            times.append(t + timedelta(hours=hours + 1))
    entered = parse_time(row["entered_at"])
    if row["in_state_hours"] is not None and entered is not None:
        crossing = entered + timedelta(hours=stale_hours, microseconds=1)
        if crossing > now:
            times.append(crossing)
    due = parse_time(row["due_time"])
    if due is not None and due > now:
        times.append(due)
    return min(times) if times else None


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    return a if b is None or a <= b else b


def _place(vs: ViewState, book: InboxBook, item: Item, clock: Clock, limits: Limits) -> None:
    """Put one item's bucket and row into the view state (replacing what was there)."""
    include_terminal = vs.key[-1]
    r = book.replay_of(item)
    state = effective(r, clock.tic, clock.now)
    bucket = BUCKETS[state]
    old = vs.buckets.get(item.id)
    if old is not None:
        vs.counts[old] -= 1
    vs.counts[bucket] += 1
    vs.buckets[item.id] = bucket
    prev = vs.rows.pop(item.id, None)
    vs.untils.pop(item.id, None)
    if prev is not None:
        for f in row_of(prev[1])["flags"]:
            vs.flags[f] -= 1
    if state in TERMINAL and not include_terminal:
        return
    row = item_row(book, item, clock, limits)
    for f in row["flags"]:
        vs.flags[f] += 1
    vs.rows[item.id] = (_order(row), row, row_lines(row))
    until = _row_until(row, clock.now, limits.stale_hours)
    if until is not None:
        vs.untils[item.id] = until
        vs.until = _earliest(vs.until, until)


def current_view(book: InboxBook, clock: Clock, limits: Limits, include_terminal: bool) -> ViewState:
    """The book's view state brought to ``clock``: kept and patched while it holds, else rebuilt."""
    key = (clock.tic, limits, include_terminal)
    vs = book.view_state
    now = clock.now
    if vs is None or vs.key != key or now < vs.placed:
        vs = ViewState(key, now, now)
        for item in book.items.values():
            _place(vs, book, item, clock, limits)
    else:
        redo = book.touched
        expired = vs.until is not None and now >= vs.until
        if expired:  # some row's own moment came: place those rows again (and the touched ones)
            due = {iid for iid, until in vs.untils.items() if until <= now}
            vs.replaced += len(due)
            redo = redo | due
        for iid in redo:
            _place(vs, book, book.items[iid], clock, limits)
        if expired:
            vs.until = min(vs.untils.values(), default=None)
        if redo:
            vs.placed = now
            vs.ordered = _reordered(vs, redo)
    book.touched.clear()
    book.view_state = vs
    if vs.ordered is None:
        vs.ordered = [iid for iid, _ in sorted(vs.rows.items(), key=lambda pair: pair[1][0])]
    return vs


#: Above this many touched items a view is sorted again whole rather than patched.
PATCH_MAX = 64


def _reordered(vs: ViewState, touched: set[str]) -> list[str] | None:
    """The view order with the touched items taken out and put back where their order
    now places them; None (sort again) when many moved. Orders are unique (the id is
    their last part), so this is exactly the full sort (tests/derive/test_inbox_view.py)."""
    if vs.ordered is None or len(touched) > PATCH_MAX:
        return None
    rows = vs.rows
    ordered = [iid for iid in vs.ordered if iid not in touched]
    for iid in touched:
        if iid in rows:
            insort(ordered, iid, key=lambda i: rows[i][0])
    return ordered


def inbox_audit(
    book: InboxBook,
    clock: Clock,
    *,
    limits: Limits,
    loose: int = 0,
    include_terminal: bool = False,
) -> tuple[dict[str, Any], datetime | None]:
    """Counts, flags and the open items, ordered by priority then age; and the
    moment this answer would first change with no new letter and no new tic.

    The view is a snapshot: its rows are copies, so neither a caller changing
    them nor a later read changes the other.
    """
    vs = current_view(book, clock, limits, include_terminal)
    assert vs.ordered is not None
    rows = vs.rows
    items = []
    for iid in vs.ordered:
        order, held, lines = rows[iid]
        if not isinstance(held, dict):  # decoded once, kept decoded for the next read
            held = row_of(held)
            rows[iid] = (order, held, lines)
        row = held.copy()  # clones the row's key table whole: a third of the cost of ``{**held}``
        row["flags"] = [*held["flags"]]  # the one nested list
        items.append(row)
    drafts = book.pending_drafts()
    counts = {**vs.counts, OUTBOUND: len(drafts), LOOSE: loose}
    view = {
        "entity": book.entity,
        "current_tic": clock.tic,
        "counts": counts,
        "flags": dict(vs.flags),
        "items": items,
        "outbound": [
            {
                "id": d.id,
                "to": d.env.recipient,
                "subject": d.env.subject,
                "priority": d.env.priority,
                "category": d.env.category,
                "created_at": d.env.created_at,
            }
            for d in sorted(drafts, key=lambda d: order_key(d.env.created_at))  # stable: ties keep ledger order
        ],
    }
    return view, vs.until


def inbox_block(
    book: InboxBook, clock: Clock, *, limits: Limits, include_terminal: bool = False, items: bool = True
) -> tuple[str, datetime | None]:
    """The injection block ``ops.mail.injection.inbox_injection`` prints for ``inbox_audit``'s view
    (``items``: the view lists its inbound items), and when it would first change."""
    vs = current_view(book, clock, limits, include_terminal)
    assert vs.ordered is not None
    rows = vs.rows
    lines = [rows[iid][2] for iid in vs.ordered] if items else []
    return block(book.entity, vs.counts, clock.tic is not None, lines), vs.until

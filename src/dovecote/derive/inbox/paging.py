"""One page of the inbox view, after a stable cursor: what a long inbox shows a page at a time.

Law: a page is a slice of the very view ``inbox_audit`` answers whole (``view.current_view``: the same
order, priority then age, the same rows, the same counts), so paging never disagrees with the inbox.
The cursor is the view order of the last row a page showed (its priority rank, source tic, time and
id: unique, as the id is its last part), not a position: the next page starts at the first row that
sorts after it, so a row that is moved out of the view meanwhile, or a new one that arrives on an
earlier page, neither repeats a row nor skips one. Pure, as every fold: the caller passes the clock.
A cursor that does not parse is ``invalid_field``.
"""

from __future__ import annotations

import base64
import math
from bisect import bisect_right
from datetime import datetime
from typing import Any

import orjson

from dovecote.derive.inbox.book import Clock, InboxBook
from dovecote.derive.inbox.state import Order, row_of
from dovecote.derive.inbox.view import current_view
from dovecote.errors import Refusal
from dovecote.roster.config import Limits


def encode_cursor(order: Order) -> str:
    """A view order as a cursor: URL-safe text."""
    rank, src, created, iid = order
    raw = orjson.dumps([rank, None if math.isinf(src) else src, created.isoformat(), iid])
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(text: str) -> Order:
    """The view order a cursor names; ``invalid_field`` for anything ``encode_cursor`` did not write."""
    try:
        rank, src, created, iid = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        if not (isinstance(rank, int) and isinstance(iid, str) and (src is None or isinstance(src, (int, float)))):
            raise ValueError("wrong types")
        return rank, math.inf if src is None else src, datetime.fromisoformat(created), iid
    except (ValueError, TypeError, orjson.JSONDecodeError) as err:
        raise Refusal("invalid_field", f"after: not a page cursor ({err})") from None


def inbox_page(book: InboxBook, clock: Clock, *, limits: Limits, include_terminal: bool, after: str | None,
               limit: int, states: tuple[str, ...] = ()) -> dict[str, Any]:
    """The view's counts and flags, and at most ``limit`` rows after the cursor ``after`` (from the first row
    when None) whose state is one of ``states`` (any when empty); ``next``: the cursor of the page after
    this one, None on the last page."""
    vs = current_view(book, clock, limits, include_terminal)
    assert vs.ordered is not None
    rows, ordered = vs.rows, vs.ordered
    start = 0 if after is None else bisect_right(ordered, decode_cursor(after), key=lambda i: rows[i][0])
    out: list[dict[str, Any]] = []
    last: Order | None = None
    more = False
    for iid in ordered[start:]:
        order, held, _ = rows[iid]
        row = row_of(held)
        if states and row["state"] not in states:
            continue
        if len(out) == limit:
            more = True
            break
        out.append({**row, "flags": [*row["flags"]]})
        last = order
    return {"counts": dict(vs.counts), "flags": dict(vs.flags), "items": out,
            "next": encode_cursor(last) if more and last is not None else None}

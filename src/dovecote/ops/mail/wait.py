"""``wait``: block until an entity's box has new mail after a cursor.

The cursor is text a caller keeps between calls (``inbox --json`` and ``wait``
print it): ``<n>.<id>``, the number of letters the box held and the id of the
last of them (``0`` for an empty box). Ledgers only grow, so the letters after
it are the letters past position ``n``; the id makes a cursor from another box,
or from a box since replaced, recognizable: it is then found by that id, and if
the id is gone every letter counts as after it (as a store's ``fresh`` read).

Watching is cheap: between reads the loop polls ``Store.stamp`` (a stat of one
ledger for files) every ``poll`` seconds and reads, incrementally, only when the
stamp moved. The clock is the context's, so the deadline follows it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from dovecote.derive.inbox.book import Clock, item_row
from dovecote.errors import Refusal
from dovecote.model.letters import Letter, is_letter_id
from dovecote.model.results import Result
from dovecote.model.vocab_delivery import DELIVERY_KINDS
from dovecote.ops.reports.tics import current_tic
from dovecote.ops.warm.inbox import book_for, entity_address

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: How often the stamp is polled while nothing has arrived, in seconds.
POLL = 0.05


def cursor_text(letters: Sequence[Letter]) -> str:
    """The cursor after ``letters`` (a whole box, in ledger order)."""
    return cursor_of(len(letters), letters[-1].id if letters else None)


def cursor_of(count: int, last: str | None) -> str:
    """The cursor after ``count`` distinct letters, the last of them ``last``."""
    return f"{count}.{last}" if count and last else "0"


def parse_cursor(text: str) -> tuple[int, str | None]:
    """(count, last id) of a cursor's text; ``invalid_field`` for anything else."""
    count, dot, last = text.partition(".")
    if count.isdigit() and count.isascii() and ((count == "0" and not dot) or (dot and is_letter_id(last))):
        n = int(count)
        if n > 0 or not dot:
            return n, last or None
    raise Refusal("invalid_field", f"--after {text!r} is not a cursor (`0`, or `<count>.<letter id>` as printed)")


def position(letters: Sequence[Letter], index: Mapping[str, Letter], cursor: str) -> int:
    """Where the letters after ``cursor`` start in ``letters``."""
    n, last = parse_cursor(cursor)
    if last is None:
        return 0
    if n <= len(letters) and letters[n - 1].id == last:
        return n
    if last in index:  # the box was rebuilt with the same letters in another order
        return next(i + 1 for i, letter in enumerate(letters) if letter.id == last)
    return 0


def box_cursor(ctx: Context, entity_id: str) -> str:
    """The cursor of the entity's box now: ``wait --after`` it wakes on the next letter."""
    return cursor_text(ctx.store.read(entity_address(ctx, entity_id)).letters)


class WaitResult(Result, frozen=True):
    """What ``wait`` saw: the cursor after the new inbound items, whether it timed out first, and the items
    (rows as ``inbox`` shows them)."""

    entity: str
    cursor: str
    timed_out: bool
    items: list[dict[str, Any]]


def wait(
    ctx: Context,
    entity_id: str,
    *,
    timeout: float | None = None,
    after: str | None = None,
    poll: float = POLL,
    sleep: Callable[[float], None] = time.sleep,
) -> WaitResult:
    """Block until a message arrives in the box after ``after`` (default: now), or ``timeout`` seconds pass."""
    if timeout is not None and timeout < 0:
        raise Refusal("invalid_field", f"--timeout {timeout} is negative")
    addr = entity_address(ctx, entity_id)
    if after is not None:
        parse_cursor(after)
    store = ctx.store
    stamp = store.stamp(addr)  # before the read: a letter landing in between moves it again
    read = store.read(addr)
    letters = list(read.letters)
    start = position(letters, read.index, after) if after is not None else len(letters)
    deadline = None if timeout is None else ctx.now() + timedelta(seconds=timeout)
    while True:
        new = [letter for letter in letters[start:] if letter.kind in DELIVERY_KINDS]
        if new:
            return WaitResult(entity_id, cursor_text(letters), False, _rows(ctx, entity_id, new))
        if deadline is not None and ctx.now() >= deadline:
            return WaitResult(entity_id, cursor_text(letters), True, [])
        sleep(poll)
        moved = store.stamp(addr)
        if moved == stamp:
            continue
        stamp = moved
        read = store.read(addr, after=read.cursor)
        if read.fresh:  # replaced: find the cursor again in what the box holds now
            mark = cursor_text(letters) if after is None or start >= len(letters) else after
            letters = list(read.letters)
            start = position(letters, read.index, mark)
        else:
            letters.extend(read.letters)


def _rows(ctx: Context, entity_id: str, new: list[Letter]) -> list[dict[str, Any]]:
    book = book_for(ctx, entity_id)
    tic, _ = current_tic(ctx, None)
    clock = Clock(tic, ctx.now())
    limits = ctx.roster.limits
    return [item_row(book, book.items[m.id], clock, limits) for m in new if m.id in book.items]

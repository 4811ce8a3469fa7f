"""``inbox``: the audit of one entity's mailbox, and its three renderings.

The view (counts, flags, open items by priority then age) is computed by
``derive.inbox.book.inbox_audit`` at the current tic and time; this module supplies
the clocks, counts the loose files a person dropped into the folder view, and
renders the view as JSON, the skill's compact text, or the short injection
block a session-start hook puts into an agent's prompt. Every face calls these
functions, so the CLI, MCP and HTTP print the same words. The text renderings
show what letters say through ``textsafe``: each item is exactly one line,
whatever its subject or sender holds; the JSON stays exact.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from dovecote.derive.inbox.book import Clock
from dovecote.derive.inbox.view import inbox_audit, inbox_block
from dovecote.errors import Refusal
from dovecote.model.results import Result
from dovecote.model.vocab import DIRECTIONS
from dovecote.ops.mail.wait import cursor_of
from dovecote.ops.reports.tics import current_tic, tic_dir
from dovecote.ops.tree.viewtree import loose_files, view_dir
from dovecote.ops.warm import inbox as foldcache
from dovecote.util.osutil import pause_collector, resume_collector

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Probe

SCHEMA = "dovecote-inbox-v1"


class TicClock(Result, frozen=True):
    """The tic a read was made at (None: no tic known), and where it came from ("flag", "roster" or "none")."""

    tic: int | None
    source: str


class InboxView(Result, frozen=True):
    """The audit of one entity's inbox: its counts and flags, the direction read, the cursor after the letters
    shown (``wait --after`` skips none), and its rows, inbound ``items`` and ``outbound`` as the direction asks
    (each row ``derive.inbox.book.item_row``'s fields: the fold's open row)."""

    schema: str
    entity: str
    clock: TicClock
    counts: dict[str, int]
    flags: dict[str, int]
    direction: str
    cursor: str
    items: list[dict[str, Any]] | msgspec.UnsetType = msgspec.UNSET
    outbound: list[dict[str, Any]] | msgspec.UnsetType = msgspec.UNSET

    def to_dict(self) -> dict[str, Any]:
        """The same plain data as ``msgspec.to_builtins(self)``, without walking the rows again.

        The rows are plain data already: ``inbox_audit`` copied them out of the fold for this answer alone,
        and a row's values survive the fold snapshot's msgpack, so they are strings, numbers, None and lists.
        A generic conversion rebuilt every one of the thousands of rows a second time, and its allocations
        woke the cyclic collector, which then walked every row the fold holds: three quarters of a warm
        read's time. So the containers are handed over as they are, not copied again. The few made here are
        made with the collector paused (plain calls: a context manager would allocate before pausing it),
        for the reason ``handle.inbox`` gives: the collector's count still holds the rows just copied, and
        the first allocation would have it walk them all, though a face writes them out and drops them.
        """
        was = pause_collector()
        try:
            clock = {"tic": self.clock.tic, "source": self.clock.source}
            out: dict[str, Any] = {
                "schema": self.schema, "entity": self.entity, "clock": clock, "counts": self.counts,
                "flags": self.flags, "direction": self.direction, "cursor": self.cursor,
            }
            if not isinstance(self.items, msgspec.UnsetType):
                out["items"] = self.items
            if not isinstance(self.outbound, msgspec.UnsetType):
                out["outbound"] = self.outbound
        finally:
            resume_collector(was)
        return out


def default_entity(ctx: Context) -> str:
    """The entity the actor speaks for, else the only one in the roster."""
    if ctx.actor.entity:
        return ctx.actor.entity
    if len(ctx.roster.entities) == 1:
        return ctx.roster.entities[0].id
    raise Refusal("missing_field", "name an entity (or set $DOVECOTE_ENTITY)")


def dependencies(ctx: Context, entity_id: str) -> list[str]:
    """Every file besides the entity's box an inbox reading depends on (the roster,
    the loose files' folder, the tic source), for the CLI's cached renderings;
    the box itself is checked by ``box_probe``."""
    deps = [str(ctx.layout.config), str(view_dir(ctx, entity_id) / "inbound")]
    folder = tic_dir(ctx)
    if folder is not None:
        deps.append(str(folder))
        newest = sorted(folder.glob("*.jsonl"))
        if newest:
            deps.append(str(newest[-1]))
    return deps


def box_probe(ctx: Context, entity_id: str) -> Probe | None:
    """The store's outside check of the entity's box at the mark its warm fold was fed
    to (call right after the read); None when there is nothing such to check."""
    addr = foldcache.entity_address(ctx, entity_id)
    fed = ctx.warm.entry(addr).folds.get(foldcache.INBOX)
    if fed is None or fed.mark is None:
        return None
    return ctx.store.probe(addr, fed.mark)


def read_inbox(
    ctx: Context,
    entity_id: str | None = None,
    *,
    current: int | None = None,
    now: datetime | None = None,
    direction: str = "inbound",
    include_terminal: bool = False,
) -> tuple[InboxView, datetime | None]:
    """The audit of one entity's inbox (see ``inbox_audit``), and the moment that answer would change with no
    new letter."""
    who, clock, source = _asked(ctx, entity_id, current, now, direction)
    tic = clock.tic
    loose = len(loose_files(ctx, who))
    with foldcache.inbox(ctx, who) as book:  # the view is computed under the box's fold lock
        view, until = inbox_audit(book, clock, limits=ctx.roster.limits, loose=loose, include_terminal=include_terminal)
        cursor = cursor_of(book.count, book.last)  # after exactly the letters shown: `wait --after` skips none
    return InboxView(
        SCHEMA, who, TicClock(tic, source), view["counts"], view["flags"], direction, cursor,
        view["items"] if direction in ("inbound", "both") else msgspec.UNSET,
        view["outbound"] if direction in ("outbound", "both") else msgspec.UNSET,
    ), until


def _asked(
    ctx: Context, entity_id: str | None, current: int | None, now: datetime | None, direction: str
) -> tuple[str, Clock, str]:
    """Whose inbox, at which clocks (and where the tic came from); refuses an unknown direction."""
    if direction not in DIRECTIONS:
        raise Refusal("invalid_field", f"direction must be one of {', '.join(DIRECTIONS)}")
    who = entity_id or default_entity(ctx)
    tic, source = current_tic(ctx, current)
    return who, Clock(tic, now or ctx.now()), source


def read_injection(
    ctx: Context, entity_id: str | None, current: int | None, now: datetime | None, direction: str,
    include_terminal: bool,
) -> tuple[str, datetime | None]:
    """``inbox_injection`` of ``read_inbox``'s view, the same bytes, without building the view:
    the hook's cold path (the counts and each row's lines are kept in the fold, see ``inbox_view``)."""
    who, clock, _ = _asked(ctx, entity_id, current, now, direction)
    with foldcache.inbox(ctx, who) as book:
        return inbox_block(book, clock, limits=ctx.roster.limits, include_terminal=include_terminal,
                           items=direction in ("inbound", "both"))


def told(ctx: Context, entity_id: str, session: str) -> set[str]:
    """The item ids hooks announced to ``session`` (``derive.inbox.surfaced``), from the entity's fold:
    no read of the whole box (``surfaced_to`` over its letters answers the same)."""
    with foldcache.inbox(ctx, entity_id) as book:
        return set(book.told.get(session, ()))


def read_injection_items(ctx: Context, entity_id: str) -> tuple[str, list[str]]:
    """``read_injection``'s block at no asked tic, and the ids of the items it counts in view
    order (the ids of ``read_inbox``'s items): what a session-start hook prints and records,
    without building the view's rows."""
    who, clock, _ = _asked(ctx, entity_id, None, None, "inbound")
    with foldcache.inbox(ctx, who) as book:
        text, _ = inbox_block(book, clock, limits=ctx.roster.limits)
        vs = book.view_state
        assert vs is not None and vs.ordered is not None
        return text, list(vs.ordered)


class InboxPage(Result, frozen=True):
    """One page of an entity's inbox view (``derive.inbox.paging``): the view's counts and flags (as the whole
    view's), the page's rows, and ``next``, the cursor of the page after it (None on the last page)."""

    entity: str
    clock: TicClock
    counts: dict[str, int]
    flags: dict[str, int]
    items: list[dict[str, Any]]
    next: str | None


def read_inbox_page(ctx: Context, entity_id: str, *, after: str | None, limit: int, states: tuple[str, ...] = (),
                    include_terminal: bool = False, now: datetime | None = None) -> InboxPage:
    """One page of ``read_inbox``'s inbound items (see ``derive.inbox.paging``): only its rows are copied, so a
    page of a box of a hundred thousand letters costs its hundred rows once the box's view is warm."""
    from dovecote.derive.inbox.paging import inbox_page
    from dovecote.derive.inbox.state import LOOSE, OUTBOUND

    who, clock, source = _asked(ctx, entity_id, None, now, "inbound")
    loose = len(loose_files(ctx, who))
    with foldcache.inbox(ctx, who) as book:
        page = inbox_page(book, clock, limits=ctx.roster.limits, include_terminal=include_terminal, after=after,
                          limit=limit, states=states)
        drafts = len(book.pending_drafts())
    counts = {**page["counts"], OUTBOUND: drafts, LOOSE: loose}
    return InboxPage(who, TicClock(clock.tic, source), counts, page["flags"], page["items"], page["next"])

"""``inbox``: the audit of one entity's mailbox, and its three renderings.

The view (counts, flags, open items by priority then age) is computed by
``derive.inbox.inbox_audit`` at the current tic and time; this module supplies
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

from dovecote import folds
from dovecote.derive.inbox import Clock, inbox_audit
from dovecote.errors import Refusal
from dovecote.ops.tics import current_tic, tic_dir
from dovecote.ops.viewtree import loose_files, view_dir
from dovecote.ops.wait import box_cursor
from dovecote.vocab import DIRECTIONS

if TYPE_CHECKING:
    from dovecote.context import Context
    from dovecote.store import Probe

SCHEMA = "dovecote-inbox-v1"


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
    addr = folds.entity_address(ctx, entity_id)
    fed = ctx.warm.entry(addr).folds.get(folds.INBOX)
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
) -> tuple[dict[str, Any], datetime | None]:
    """The audit of one entity's inbox (see ``inbox_audit``) as a JSON-ready dict,
    and the moment that answer would change with no new letter."""
    if direction not in DIRECTIONS:
        raise Refusal("invalid_field", f"direction must be one of {', '.join(DIRECTIONS)}")
    who = entity_id or default_entity(ctx)
    cursor = box_cursor(ctx, who)  # before the fold reads: a letter landing between is shown, never skipped
    tic, source = current_tic(ctx, current)
    clock = Clock(tic, now or ctx.now())
    loose = len(loose_files(ctx, who))
    with folds.inbox(ctx, who) as book:  # the view is computed under the box's fold lock
        view, until = inbox_audit(book, clock, limits=ctx.roster.limits, loose=loose, include_terminal=include_terminal)
    out: dict[str, Any] = {"schema": SCHEMA, "entity": who, "clock": {"tic": tic, "source": source}}
    out["counts"] = view["counts"]
    out["flags"] = view["flags"]
    out["direction"] = direction
    out["cursor"] = cursor
    if direction in ("inbound", "both"):
        out["items"] = view["items"]
    if direction in ("outbound", "both"):
        out["outbound"] = view["outbound"]
    return out, until

"""The guarded lifecycle verbs: claim, complete, defer, undefer, nack, seen.

Every write that depends on current state runs as a compare-and-swap: under
the box lock, fold the box, check the lifecycle table and its rails, append the
link or refuse (DESIGN 1.6). Two processes claiming one item: the first appends
its claim; the second, once it holds the lock, sees ACTIVE and is refused
``already_claimed``. A refusal appends nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from dovecote.derive.inbox.book import InboxBook, Item
from dovecote.derive.inbox.responses import response_to, responses
from dovecote.derive.lifecycle import check_due, check_rails, check_transition, effective
from dovecote.errors import Refusal
from dovecote.model.addresses import Address, check_name, entity
from dovecote.model.letters import canonical_line, format_ts
from dovecote.model.results import Result
from dovecote.model.vocab import LetterKind
from dovecote.ops.reports.tics import current_tic
from dovecote.ops.warm.inbox import entity_address, inbox
from dovecote.ops.warm.registry import guarded_many
from dovecote.util.timeutil import parse_time

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Guard


def responded(ctx: Context, book: InboxBook, item: Item, held: dict[Address, Guard] | None = None) -> bool:
    """Has a response to the item been delivered to whom it must answer?

    Asked of the box of ``response_to`` (the sender, or the redirect), which
    must be a registered entity: a response can reach no one else. ``held``:
    the boxes under their locks (the target's among them, when the caller
    foresaw it), so its fold is fed from what its guard read.
    """
    target = response_to(item.env)
    if target is None or ctx.roster.entity(target) is None:
        return False
    if target == book.entity:
        return bool(responses(book, item))
    with inbox(ctx, target, (held or {}).get(entity(target))) as other:
        return bool(responses(other, item))


def _response_box(ctx: Context, entity_id: str, ref: str) -> list[Address]:
    """The box a completion's response rail reads, if it is another entity's: taken under
    its lock too, in address order with the item's (so no two threads wait on each other)."""
    with inbox(ctx, entity_id) as book:
        try:
            target = response_to(book.resolve(ref).env)
        except Refusal:
            return []  # decided (and refused) again under the lock
    if target is None or target == entity_id or ctx.roster.entity(target) is None:
        return []
    return [entity(target)]


def _until(value: str | None) -> str | None:
    if value is None:
        return None
    t = parse_time(value)
    if t is None:  # a time without a zone is UTC, as everywhere (timeutil)
        raise Refusal("invalid_field", f"--until {value!r} is not an ISO-8601 time (e.g. 2026-07-05T10:00:00Z)")
    return format_ts(t)


class Transition(Result, frozen=True):
    """A move made: the letter written (``id``), the item, the move, and the states it went from and to."""

    id: str
    item: str
    kind: str
    from_state: str = msgspec.field(name="from")
    to_state: str = msgspec.field(name="to")


def transition(
    ctx: Context,
    entity_id: str,
    ref: str,
    kind: str,
    *,
    until_tic: int | None = None,
    until: str | None = None,
    reason: str | None = None,
    result_ref: str | None = None,
    current: int | None = None,
    actor: str | None = None,
    rails: bool = True,
    extra: dict[str, Any] | None = None,
) -> Transition:
    """Move an item along the lifecycle: derive, check, append, all under the lock.

    ``rails=False`` is for adopting history that already happened elsewhere
    (``import inbox-tree``): the table still decides, the rails do not, and the
    caller marks the link with ``extra`` (e.g. ``{"adopted": "inbox-tree"}``).
    """
    addr = entity_address(ctx, entity_id)
    who = check_name(actor or ctx.actor.actor_for(entity_id), "actor")
    due_time = _until(until)
    tic, _ = current_tic(ctx, current)
    now = ctx.now().replace(microsecond=0)
    if until_tic is not None and (until_tic < 0 or (rails and tic is not None and until_tic <= tic)):
        raise Refusal("invalid_field", f"--until-tic {until_tic} is not after the current tic {tic}")
    if rails and due_time is not None and (parse_time(due_time) or now) <= now:
        raise Refusal("invalid_field", f"--until {due_time} is not in the future")
    others = _response_box(ctx, entity_id, ref) if rails and kind == LetterKind.complete else []
    with guarded_many(ctx.store, [addr, *others]) as held, inbox(ctx, entity_id, held[addr]) as book:
        led = held[addr]
        item = book.resolve(ref)
        r = book.replay_of(item)
        state = effective(r, tic, now)
        new = check_transition(state, kind, item.id)
        if rails:
            check_rails(
                kind,
                item.id,
                seen=r.seen,
                response_required=item.env.response_expected,
                responded=kind == LetterKind.complete and responded(ctx, book, item, held),
                response_to=response_to(item.env),
                until_tic=until_tic,
                until=due_time,
            )
        else:
            check_due(kind, item.id, until_tic, due_time)
        link: dict[str, Any] = {
            "ts": format_ts(now),
            "agent": who,
            "kind": kind,
            "ref": item.id,
            "prev": r.head,
            "from": str(state),
            **(extra or {}),
        }
        for key, value in (
            ("tic", tic),
            ("until_tic", until_tic),
            ("until", due_time),
            ("reason", reason),
            ("result_ref", result_ref),
        ):
            if value is not None:
                link[key] = value
        ((lid, _),) = led.append([canonical_line(link)])
    return Transition(lid, item.id, kind, str(state), str(new))

"""``ack``: the recipient answers a delivery, once, as a compare-and-swap (notes B5, B13.8).

Under the recipient's box lock: find the delivery (letter id, unique prefix or
envelope id) in that box, derive its tracker, and refuse or append:

* ``unknown_delivery``: no such delivery anywhere (vNext wrote an ack file for any id);
* ``not_recipient``: the delivery is in another entity's box, or the actor
  speaks for another entity (vNext let anyone ack for anyone);
* ``already_acked``: the first ack stands (vNext let a later ack overwrite);
* a late ack (after the timeout) is recorded with ``late: true``; the timeout
  letter stays in history and the tracker keeps ``timed_out_ts`` (vNext reused
  ``ack_ts`` as the timeout time and let a late ack erase the timeout).

The sender hears of the ack when the policy asks (``notify_on_ack``, true
unless written false; notes B5): a mode that never nudges writes the notice's
notify letter in the same append as the ack (no extra fsync); with
agent-turn-nudge the mailman's next pass claims and runs it, off this path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dovecote.errors import Refusal
from dovecote.model.addresses import entity
from dovecote.model.letters import canonical_line, format_ts
from dovecote.model.results import Result
from dovecote.model.vocab_delivery import ACK, AckState
from dovecote.ops.delivery.notify import mode_of, passive_line
from dovecote.ops.warm.inbox import entity_address
from dovecote.ops.warm.trackers import book, book_of

if TYPE_CHECKING:
    from dovecote.ops.context import Context


class Acked(Result, frozen=True):
    """An ack recorded (or found: ``appended`` false): its letter, the delivery and envelope, who acked, the
    status given, whether it came after the ack timed out, and the ack state now."""

    id: str
    delivery_id: str
    envelope_id: str
    entity: str
    status: str
    late: bool
    ack_state: str
    appended: bool


def ack(ctx: Context, entity_id: str, ref: str, status: str, reason: str | None) -> Acked:
    """Record ``entity_id``'s ack of the delivery ``ref`` (see the module docstring)."""
    addr = entity_address(ctx, entity_id)
    acting = ctx.actor.entity
    if acting is not None and acting != entity_id:
        raise Refusal("not_recipient", f"{acting} may not ack for {entity_id}")
    mode = mode_of(ctx, None)
    with ctx.store.guarded(addr) as held, book(ctx, entity_id, held) as b:
        lid = b.find(ref)
        if lid is None:
            _refuse_elsewhere(ctx, entity_id, ref)
        assert lid is not None
        t = b.tracker(lid)
        if t.ack_ts is not None:
            raise Refusal("already_acked", f"{lid} was already {t.ack_state} at {t.ack_ts}; the first ack stands")
        late = t.ack_state == AckState.timed_out
        ts = format_ts(ctx.now())
        letter: dict[str, Any] = {
            "ts": ts, "agent": entity_id, "kind": ACK, "ref": lid, "envelope_id": t.envelope_id, "status": status,
        }
        if reason:
            letter["reason"] = reason
        if late:
            letter["late"] = True
        notice = passive_line(lid, ts, mode, about=ACK, agent=t.sender) if ACK in t.notify_on else None
        ((aid, appended), *_) = held.append([canonical_line(letter), *([notice] if notice else [])])
    state = AckState.acked if status == "accepted" else AckState.rejected
    return Acked(aid, lid, t.envelope_id, entity_id, status, late, state, appended)


def _refuse_elsewhere(ctx: Context, entity_id: str, ref: str) -> None:
    """Why ``ref`` is not ``entity_id``'s to ack: another entity's delivery, or nobody's."""
    for e in ctx.roster.entities:
        if e.id != entity_id and ctx.store.reachable(entity(e.id)) and book_of(ctx, e.id).find(ref) is not None:
            raise Refusal("not_recipient", f"{ref} was delivered to {e.id}, not {entity_id}; only the recipient acks")
    raise Refusal("unknown_delivery", f"no delivery {ref!r} (a task or response) in any box")

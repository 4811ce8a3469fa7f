"""``outbox send``: deliver an entity's pending drafts, each as its own bytes.

A draft's delivery is the draft's own line with ``kind: message`` (nothing
taken from the clock at delivery), so delivering it again dedups by content id
and a retry writes only the missing ``sent`` record (``send``'s module says
why the two boxes are written in that order). A run that stops raises
``PartialWrite`` listing every delivery it made first; re-running completes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import msgspec

from dovecote.derive.inbox.book import Draft
from dovecote.errors import PartialWrite, StoreError
from dovecote.model.addresses import Address, entity
from dovecote.model.letters import canonical_line
from dovecote.model.results import Result
from dovecote.model.vocab import LetterKind
from dovecote.ops.mail.send import _append, _record
from dovecote.ops.warm import inbox as foldcache
from dovecote.ops.warm.registry import guarded_many

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Guard


def delivery_of(data: dict[str, Any]) -> dict[str, Any]:
    """The message a draft becomes: its own bytes, ``kind: message``; nothing
    taken from the clock at delivery, so every retry is the same line."""
    return {**data, "kind": LetterKind.message.value}


def _deliver_draft(
    ctx: Context, who: str, to: str, d: Draft, held: dict[Address, Guard]
) -> tuple[str, dict[str, Any]] | None:
    """Deliver one draft under both locks (the caller writes the record after them);
    None if someone else did meanwhile."""
    if d.id in foldcache.book_for(ctx, who, held[entity(who)]).delivered:
        return None
    msg = delivery_of(d.env.data)
    known = None
    if d.env.idempotency_key is not None and d.env.message_id:  # a send of the same key may have delivered it
        book = foldcache.book_for(ctx, to, held[entity(to)])
        known = book.alias.get(d.env.message_id)
        known = known if known is not None and book.items[known].env.sender == who else None
    if known is not None:
        mid = known
    else:
        mid, _ = _append(held[entity(to)], canonical_line(msg), entity(to))
    return mid, msg


class OutboxRow(Result, frozen=True):
    """One draft of an outbox run: delivered as ``message``, or not, for ``reason`` (an unknown recipient)."""

    draft: str
    sender: str = msgspec.field(name="from")
    to: str
    delivered: bool
    reason: str | msgspec.UnsetType = msgspec.UNSET
    message: str | msgspec.UnsetType = msgspec.UNSET


class OutboxSent(Result, frozen=True):
    """A remote caller's outbox run: every draft it handled, in order (the CLI and the library list the rows)."""

    sent: list[OutboxRow]


def _stopped(e: StoreError, out: list[OutboxRow], failed: str, what: str) -> PartialWrite:
    """The error of an outbox run stopped by ``e`` at ``failed``: what was
    delivered before it, and what was half done (``what`` says it was not)."""
    done = [o for o in out if o.delivered]
    before = "; before it this run delivered " + ", ".join(
        f"{o.draft} as {o.message} to {o.to}" for o in done
    ) if done else "; this run delivered nothing before it"
    half = cast(list[dict[str, Any]], e.details["delivered"]) if isinstance(e, PartialWrite) else []
    return PartialWrite(f"{e if half else f'{what} ({e})'}{before}", delivered=[*(o.to_dict() for o in done), *half],
                        failed=failed)


def outbox_send(ctx: Context, sender: str | None = None) -> list[OutboxRow]:
    """Deliver every pending draft (of one entity, or of all), verifying each recipient.

    A failure stops the run with a ``PartialWrite`` that lists every delivery
    made before it (and the one half made, if any); re-running completes it.
    """
    senders = [sender] if sender else [e.id for e in ctx.roster.entities]
    out: list[OutboxRow] = []
    for who in senders:
        foldcache.entity_address(ctx, who)
        try:
            with foldcache.inbox(ctx, who) as b:
                pending = b.pending_drafts()
        except StoreError as e:
            raise _stopped(e, out, who, f"the drafts of {who} could not be read") from e
        for d in pending:
            to = d.env.recipient or ""
            if not to or ctx.roster.entity(to) is None:
                out.append(OutboxRow(d.id, who, to, False, reason="unknown_recipient"))
                continue
            try:
                with guarded_many(ctx.store, [entity(who), entity(to)]) as held:
                    done = _deliver_draft(ctx, who, to, d, held)
                if done is not None:
                    _record(ctx, done[0], done[1], fresh=False, draft=d.id)
            except StoreError as e:
                raise _stopped(e, out, d.id, f"draft {d.id} was not delivered") from e
            if done is not None:
                out.append(OutboxRow(d.id, who, to, True, message=done[0]))
    return out

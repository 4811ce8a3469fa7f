"""``dovecote show ENTITY ID``: one message, whole — envelope, body, thread, history.

The inbox audit lists items; nothing else reads a message's body or tells
why it is in its state. This read answers both from the same fold the inbox
uses (``foldcache.inbox``), so the state it shows is the state every other read
derives: the envelope as the sender wrote it, the body (from the artifact
store when it was too large to inline), the letters of the same thread or
reply chain, and every lifecycle link on the item with its ts and agent
(``applied`` is false for a link the fold set aside as a conflict).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from dovecote.derive.inbox.book import Clock, InboxBook, Item, item_row
from dovecote.ops.mail import artifacts
from dovecote.ops.reports.tics import current_tic
from dovecote.ops.warm import inbox as foldcache

if TYPE_CHECKING:
    from dovecote.ops.context import Context

SCHEMA = "dovecote-show-v1"


def _body(ctx: Context, item: Item) -> tuple[str, str | None]:
    """The body text, and where it came from (``None`` inline, else the artifact ref)."""
    ref = item.env.body_ref
    if ref is None:
        return item.env.body, None
    data = artifacts.get_bytes(ctx, ref)
    if data is None:
        return item.env.body, ref  # the blob is missing here: say what the letter itself holds
    return data.decode("utf-8", "replace"), ref


def _envelope(item: Item) -> dict[str, Any]:
    env = item.env
    return {
        "sender": env.sender,
        "recipient": env.recipient,
        "subject": env.subject,
        "category": env.category,
        "priority": env.priority,
        "trust_level": env.trust_level,
        "thread_id": env.thread_id,
        "reply_to": env.reply_to,
        "created_at": env.created_at,
        "source_tic": env.source_tic,
        "expires_at_tic": env.expires_at_tic,
        "defer_until_tic": env.defer_until_tic,
        "reminder_tic": env.reminder_tic,
        "response_expected": env.response_expected,
        "artifacts": env.artifact_refs,
    }


def _related(item: Item, other: Item) -> str | None:
    """How ``other`` belongs to ``item``'s thread, or None."""
    if other.env.reply_to == item.id:
        return "reply"
    if item.env.reply_to == other.id:
        return "replied_to"
    if item.env.thread_id and other.env.thread_id == item.env.thread_id:
        return "same_thread"
    return None


def show(ctx: Context, entity_id: str, ref: str, *, current: int | None = None,
         now: datetime | None = None) -> dict[str, Any]:
    """The whole of one inbound item; ``ref`` is an id, a foreign message id or a unique prefix."""
    with foldcache.inbox(ctx, entity_id) as book:  # read under the box's fold lock
        return _show(ctx, book, entity_id, ref, current, now)


def _show(ctx: Context, book: InboxBook, entity_id: str, ref: str, current: int | None,
          now: datetime | None) -> dict[str, Any]:
    item = book.resolve(ref)
    tic, source = current_tic(ctx, current)
    clock = Clock(tic, now or ctx.now())
    r = book.replay_of(item)
    body, body_ref = _body(ctx, item)
    thread = []
    for other in book.items.values():
        relation = _related(item, other) if other.id != item.id else None
        if relation:
            thread.append({
                "id": other.id, "relation": relation, "direction": "inbound", "sender": other.env.sender,
                "subject": other.env.subject, "created_at": other.env.created_at,
            })
    for sent in book.sent:
        if sent.reply_to == item.id:
            thread.append({
                "id": sent.message, "relation": "reply", "direction": "outbound", "to": sent.to,
                "subject": None, "created_at": sent.ts,
            })
    thread.sort(key=lambda t: (t["created_at"] or "", t["id"] or ""))
    applied = {link.id for link in r.applied}
    history = [
        {
            "id": link.id, "kind": link.kind, "ts": link.ts, "agent": link.agent, "tic": link.tic,
            "until_tic": link.until_tic, "until": link.until, "reason": link.reason,
            "result_ref": link.result_ref, "applied": link.id in applied,
        }
        for link in item.links  # in ledger order: the order they were written (or merged) in
    ]
    return {
        "schema": SCHEMA,
        "entity": entity_id,
        "clock": {"tic": tic, "source": source},
        "item": item_row(book, item, clock, ctx.roster.limits),
        "envelope": _envelope(item),
        "body": body,
        "body_ref": body_ref,
        "thread": thread,
        "history": history,
    }

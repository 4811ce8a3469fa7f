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

import msgspec

from dovecote.derive.inbox.book import Clock, InboxBook, Item, item_row
from dovecote.model.results import Result
from dovecote.ops.mail import artifacts
from dovecote.ops.mail.inbox import TicClock
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


class ShownEnvelope(Result, frozen=True):
    """The envelope as the sender wrote it, by meaning (``envelope.Envelope``'s reading of either format)."""

    sender: str | None
    recipient: str | None
    subject: str
    category: str | None
    priority: str
    trust_level: str | None
    thread_id: str | None
    reply_to: str | None
    created_at: str | None
    source_tic: int | None
    expires_at_tic: int | None
    defer_until_tic: int | None
    reminder_tic: int | None
    response_expected: bool
    artifacts: list[str]


class ThreadLetter(Result, frozen=True):
    """A letter of the item's thread or reply chain: an inbound item names its sender, a sent reply its ``to``."""

    id: str | None
    relation: str
    direction: str
    sender: str | msgspec.UnsetType | None = msgspec.UNSET
    to: str | msgspec.UnsetType | None = msgspec.UNSET
    subject: str | None = None
    created_at: str | None = None


class HistoryLink(Result, frozen=True):
    """One lifecycle letter on the item, with whether the fold applied it (false: set aside as a conflict)."""

    id: str
    kind: str
    ts: str
    agent: str
    tic: int | None
    until_tic: int | None
    until: str | None
    reason: str | None
    result_ref: str | None
    applied: bool


class Shown(Result, frozen=True):
    """One inbound item whole: its inbox row (``item_row``'s fields, the row every inbox lists), envelope, body
    (``body_ref``: the artifact it was read from, None when inline), thread and history."""

    schema: str
    entity: str
    clock: TicClock
    item: dict[str, Any]
    envelope: ShownEnvelope
    body: str
    body_ref: str | None
    thread: list[ThreadLetter]
    history: list[HistoryLink]


def _envelope(item: Item) -> ShownEnvelope:
    env = item.env
    return ShownEnvelope(
        env.sender, env.recipient, env.subject, env.category, env.priority, env.trust_level, env.thread_id,
        env.reply_to, env.created_at, env.source_tic, env.expires_at_tic, env.defer_until_tic, env.reminder_tic,
        env.response_expected, env.artifact_refs,
    )


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
         now: datetime | None = None) -> Shown:
    """The whole of one inbound item; ``ref`` is an id, a foreign message id or a unique prefix."""
    with foldcache.inbox(ctx, entity_id) as book:  # read under the box's fold lock
        return _show(ctx, book, entity_id, ref, current, now)


def _show(ctx: Context, book: InboxBook, entity_id: str, ref: str, current: int | None,
          now: datetime | None) -> Shown:
    item = book.resolve(ref)
    tic, source = current_tic(ctx, current)
    clock = Clock(tic, now or ctx.now())
    r = book.replay_of(item)
    body, body_ref = _body(ctx, item)
    thread = [
        ThreadLetter(other.id, relation, "inbound", sender=other.env.sender, subject=other.env.subject,
                     created_at=other.env.created_at)
        for other in book.items.values()
        if other.id != item.id and (relation := _related(item, other))
    ]
    thread += [ThreadLetter(sent.message, "reply", "outbound", to=sent.to, created_at=sent.ts)
               for sent in book.sent if sent.reply_to == item.id]
    thread.sort(key=lambda t: (t.created_at or "", t.id or ""))
    applied = {link.id for link in r.applied}
    history = [
        HistoryLink(link.id, link.kind, link.ts, link.agent, link.tic, link.until_tic, link.until, link.reason,
                    link.result_ref, link.id in applied)
        for link in item.links  # in ledger order: the order they were written (or merged) in
    ]
    return Shown(SCHEMA, entity_id, TicClock(tic, source), item_row(book, item, clock, ctx.roster.limits),
                 _envelope(item), body, body_ref, thread, history)

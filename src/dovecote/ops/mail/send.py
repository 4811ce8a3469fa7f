"""Entity mail: send and drafts (the outbox is ``outbox``, the lifecycle verbs are in ``transitions``).

Sending writes two boxes: the message into the recipient's, then a ``sent``
record into the sender's. No lock makes two files one write, so the order is
chosen for the retry to converge: deliver first (fsynced before the record is
written, so a crash never leaves a record of a delivery it took), record second, and make the
delivered line a function of what is being retried. A draft's delivery is the
draft's own bytes with ``kind: message`` (no fresh ts or id at delivery time),
so delivering it again dedups by content id; a ``send`` with an idempotency key
finds the message its key names (``envelope.keyed_message_id``) under the
recipient's lock and returns it as already delivered. Either way the retry
writes only the missing record. A failure between the two raises
``PartialWrite`` naming what was delivered and where. On a store whose nested
sections commit as one (PostgreSQL: one transaction), the record is written in
the delivery's section, so both commit or neither does.

A ``send`` without a key is a new message every time (a fresh ``msg_<uuid7>``):
retrying one that failed after delivery delivers again, so the error says it was
delivered. A box that cannot be opened fails the send before the delivery:
where the two sections commit as one, both boxes are locked (in address order,
so two deliveries in opposite directions cannot deadlock) before anything is
written; elsewhere the delivery's section holds the recipient's box alone (no
rule of a send reads the sender's) and the sender's ledger is opened first
(``store.ready``), so a send is two guarded sections, not three.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from dovecote.derive.inbox.book import InboxBook
from dovecote.derive.inbox.responses import REDIRECT
from dovecote.errors import DiskFull, PartialWrite, Refusal, StoreError
from dovecote.model.addresses import Address, check_name, entity
from dovecote.model.credentials import cap_trust
from dovecote.model.envelope import Envelope, build_message
from dovecote.model.ids import LETTER_ID_PATTERN
from dovecote.model.letters import canonical_line, format_ts
from dovecote.model.results import Result
from dovecote.model.vocab import PERSON_ROLE, LetterKind
from dovecote.ops.mail import artifacts
from dovecote.ops.mail.transitions import Transition, transition
from dovecote.ops.reports.tics import current_tic
from dovecote.ops.warm import inbox as foldcache
from dovecote.ops.warm.registry import guarded_many
from dovecote.store.core import commits_together
from dovecote.store.files import ready

__all__ = ["Delivery", "Transition", "compose", "draft", "send", "transition"]

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Guard
    from dovecote.verbs import Message


class Delivery(Result, frozen=True):
    """A message delivered (or a draft written): its letter, message id and idempotency key, recipient, sender,
    thread, whether this call appended it, and the sender's ``sent`` record (None: not written, or a draft)."""

    id: str
    message_id: str | None
    idempotency_key: str | None
    to: str
    sender: str = msgspec.field(name="from")
    thread_id: str
    appended: bool
    sent_record: str | None

    @classmethod
    def of(cls, lid: str, data: dict[str, Any], *, appended: bool, record: str | None = None) -> Delivery:
        env = Envelope(data)
        return cls(lid, env.message_id, env.idempotency_key, env.recipient or "", env.sender or "",
                   env.thread_id or "", appended, record)


def _body(ctx: Context, body: str | None, body_file: Path | None) -> tuple[str, str | None]:
    """(inline body, body_ref): bodies over the inline limit go to the artifact store."""
    if body is not None and body_file is not None:
        raise Refusal("invalid_field", "give --body or --body-file, not both")
    if body_file is not None:
        if not body_file.is_file():
            raise Refusal("invalid_field", f"body file {str(body_file)!r} is not a readable file")
        data = body_file.read_bytes()
    else:
        data = (body or "").encode("utf-8")
    limits = ctx.roster.limits
    if len(data) > limits.body_hard_limit:
        raise Refusal("too_large", f"the body is {len(data)} bytes; the hard limit is {limits.body_hard_limit}")
    if len(data) > limits.body_inline_max:
        return "", artifacts.put_bytes(ctx, data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "", artifacts.put_bytes(ctx, data)
    return text, None


def compose(ctx: Context, m: Message, *, kind: str = "message", sender: str | None = None) -> dict[str, Any]:
    """Validate and build a message (or draft) letter from ``m``; writes only artifact blobs.

    ``m.reply_to`` is the item this answers (an id or prefix in the sender's
    box; the thread is inherited), or ``entity:<id>``: whom a response to this
    message must be sent to instead of the sender (``derive/responses.py``).
    ``sender`` is the sender when ``m`` names none (default: the actor's).
    A trust level above the actor's role refuses ``forbidden`` (``tokens.cap_trust``), before anything is read.
    """
    cap_trust(ctx.actor.role, m.trust_level)
    check_name(m.recipient, "recipient")
    who = check_name(m.sender or sender or ctx.actor.sender(), "sender")
    if ctx.roster.entity(m.recipient) is None:
        raise Refusal("unknown_recipient", f"{m.recipient!r} is not a registered entity (dovecote entity add)")
    if ctx.roster.entity(who) is None and (twin := ctx.roster.entity_like(who)):
        # an unregistered sender may write, but not as a case-variant of a registered one (a reader sees the same name)
        raise Refusal("invalid_name", f"sender {who!r} differs from the entity {twin.id!r} only by case")
    reply_to, thread_id = m.reply_to, m.thread_id
    if reply_to is not None and reply_to.startswith(REDIRECT):
        target = check_name(reply_to[len(REDIRECT):], "reply-to entity")
        if ctx.roster.entity(target) is None:
            raise Refusal("unknown_recipient", f"reply_to {reply_to}: {target!r} is not a registered entity")
    elif reply_to is not None and ctx.actor.role == PERSON_ROLE and ctx.roster.entity(who) is None:
        # a person (the Human View's session) has no box of its own: it answers an item it read in an entity's
        # box, and names the item's whole id and its thread as that read showed them
        if thread_id is None or not re.fullmatch(LETTER_ID_PATTERN, reply_to):
            raise Refusal("invalid_field", "a person's reply names the item's whole letter id and its thread_id")
    elif reply_to is not None:
        if ctx.roster.entity(who) is None:
            raise Refusal("unknown_entity", f"only a registered entity can reply; {who!r} is not one")
        replied = foldcache.book_for(ctx, who).resolve(reply_to)
        reply_to = replied.id
        thread_id = thread_id or replied.env.thread_id
    tic, _ = current_tic(ctx, m.current_tic)
    text, body_ref = _body(ctx, m.body, None if m.body_file is None else Path(m.body_file))
    files = [artifacts.put_file(ctx, Path(p)) for p in m.artifact_paths]
    role = ctx.roster.entity(who)
    return build_message(
        ts=format_ts(ctx.now()),
        sender=who,
        recipient=m.recipient,
        subject=m.subject,
        body=text,
        body_ref=body_ref,
        priority=str(m.priority),
        category=str(m.category),
        trust_level=str(m.trust_level),
        thread_id=thread_id,
        reply_to=reply_to,
        response_expected=m.response_expected,
        expires_at_tic=m.expires_at_tic,
        defer_until_tic=m.defer_until_tic,
        reminder_tic=m.reminder_tic,
        source_tic=tic,
        artifacts=files,
        sender_role=role.role if role else None,
        kind=kind,
        idempotency_key=m.idempotency_key,
    )


def _sent_record(msg_id: str, msg: dict[str, Any], ts: str, draft: str | None = None) -> bytes:
    rec: dict[str, Any] = {
        "ts": ts,
        "agent": msg["agent"],
        "kind": LetterKind.sent.value,
        "message": msg_id,
        "to": Envelope(msg).recipient,
        "reply_to": Envelope(msg).reply_to,
    }
    if draft:
        rec["ref"] = draft
    return canonical_line(rec)


def _append(led: Guard, line: bytes, where: Address) -> tuple[str, bool]:
    """One guarded append; an I/O failure is a ``StoreError`` naming the box."""
    try:
        ((lid, appended),) = led.append([line])
    except OSError as e:
        raise StoreError(f"cannot append to {where}: {e.strerror or e}") from e
    return lid, appended


#: What may differ between two sends of one idempotency key: the clock.
_VOLATILE = ("ts", "created_at", "source_tic")


def _request(data: dict[str, Any]) -> dict[str, Any]:
    """A message with its clock readings blanked, to compare two uses of a key."""
    out = {k: v for k, v in data.items() if k != "ts"}
    for block in ("provenance", "lifecycle"):
        if isinstance(out.get(block), dict):
            out[block] = {k: v for k, v in out[block].items() if k not in _VOLATILE}
    return out


def _same_request(key: str, lid: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """A key names one message: reusing it for another one is refused, never dropped."""
    a, b = _request(old), _request(new)
    if a != b:
        differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        raise Refusal(
            "idempotency_conflict", f"idempotency key {key!r} already names letter {lid}, which differs in "
            f"{', '.join(differ)}; use another key for another message",
        )


def _find_sent(book: InboxBook, mid: str, draft: str | None) -> str | None:
    """The sender's record of having sent ``mid`` (or delivered ``draft``), if written."""
    if draft is not None:
        rec = book.delivered.get(draft)
        return rec.id if rec is not None else None
    return next((s.id for s in book.sent if s.message == mid and s.draft is None), None)


def _record(ctx: Context, mid: str, msg: dict[str, Any], *, fresh: bool, draft: str | None = None) -> str | None:
    """Write the sender's ``sent`` record of a delivered message, unless it is there.

    Called once the delivery's section has ended, so the delivery is fsynced
    before the record is written (the record never outlives a delivery a crash
    took): a failure here is partial and says so. ``fresh`` (the delivery was
    appended just now) skips the look-up.
    """
    sender, env = msg["agent"], Envelope(msg)
    box = entity(sender)
    if ctx.roster.entity(sender) is None:  # an unregistered sender has no box to record in
        return None
    try:
        with ctx.store.guarded(box) as led:
            found = None if fresh and draft is None else _find_sent(foldcache.book_for(ctx, sender, led), mid, draft)
            if found is not None:
                return found
            rid, _ = _append(led, _sent_record(mid, msg, format_ts(ctx.now()), draft), box)
    except StoreError as e:
        retry = (
            "a retry writes the record without delivering again" if draft or env.idempotency_key
            else "the message is delivered: sending it again would deliver a second one"
        )
        raise PartialWrite(
            f"delivered {mid} to {entity(env.recipient or '')}; the sent record was not written ({e}); {retry}",
            delivered=[{"draft": draft, "from": sender, "to": env.recipient, "delivered": True, "message": mid,
                        "sent_record": None}],
        ) from e
    return rid


def _boxes(ctx: Context, sender: str, to: str) -> list[Address]:
    return [entity(to), *([entity(sender)] if ctx.roster.entity(sender) is not None else [])]


def _deliver(ctx: Context, led: Guard, msg: dict[str, Any], key: str | None) -> tuple[str, bool, dict[str, Any]]:
    """Append ``msg`` to the recipient's box held in ``led``, unless its key names a message there
    already: (id, appended, the message delivered)."""
    to = Envelope(msg).recipient or ""
    if key is not None:  # only a key can name a message already there
        book = foldcache.book_for(ctx, to, led)
        known = book.alias.get(msg["message_id"])
        if known is not None:
            old = book.items[known].letter.data()
            _same_request(key, known, old, msg)
            return known, False, old
    mid, appended = _append(led, canonical_line(msg), entity(to))
    return mid, appended, msg


def send(ctx: Context, m: Message) -> Delivery:
    """Deliver one message into the recipient's box, then note it in the sender's.

    With ``idempotency_key`` a retry returns the message the key already
    delivered (``appended`` false) and writes only what is missing; the same
    key with different fields is refused ``idempotency_conflict``.
    """
    msg = compose(ctx, m)
    to, sender, key = Envelope(msg).recipient or "", msg["agent"], Envelope(msg).idempotency_key
    together = commits_together(ctx.store)
    boxes = _boxes(ctx, sender, to)
    try:
        if together:  # the record commits with the delivery, or neither does: both boxes in one section
            with guarded_many(ctx.store, boxes) as held:
                mid, appended, msg = _deliver(ctx, held[entity(to)], msg, key)
                record = _record(ctx, mid, msg, fresh=appended)
        else:  # the sender's box is written after the delivery, in its own section: check now that it opens
            for box in boxes[1:]:
                ready(ctx.store, box)
            with ctx.store.guarded(boxes[0]) as led:
                mid, appended, msg = _deliver(ctx, led, msg, key)
    except DiskFull:
        raise  # a refusal: it says nothing was written already
    except StoreError as e:
        raise StoreError(f"{e}; nothing was delivered") from e
    if not together:
        record = _record(ctx, mid, msg, fresh=appended)
    return Delivery.of(mid, msg, appended=appended, record=record)


def draft(ctx: Context, m: Message) -> Delivery:
    """Write an outbound draft (EMIT) into the sender's own box.

    A key makes the draft idempotent too: a retry returns the draft it names.
    """
    sender = m.sender or ctx.actor.sender()
    addr = foldcache.entity_address(ctx, sender)
    msg = compose(ctx, m, kind=LetterKind.draft.value, sender=sender)
    with ctx.store.guarded(addr) as led:
        if msg.get("idempotency_key") is not None:
            for d in foldcache.book_for(ctx, sender, led).drafts.values():
                if d.env.message_id == msg["message_id"]:
                    _same_request(msg["idempotency_key"], d.id, d.letter.data(), msg)
                    return Delivery.of(d.id, d.letter.data(), appended=False)
        did, appended = _append(led, canonical_line(msg), addr)
    return Delivery.of(did, msg, appended=appended)

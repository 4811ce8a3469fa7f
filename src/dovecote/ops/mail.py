"""Entity mail: send, drafts and the outbox (the lifecycle verbs are in ``transitions``).

When a write touches two boxes (delivering a draft), both locks are taken in
address order, so two deliveries in opposite directions cannot deadlock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote.derive.responses import REDIRECT
from dovecote.envelope import build_message
from dovecote.errors import Refusal
from dovecote.ledger import LockedLedger
from dovecote.letters import canonical_line
from dovecote.names import Address, check_name, entity
from dovecote.ops import artifacts
from dovecote.ops.books import book_for, entity_address
from dovecote.ops.report import now_ts
from dovecote.ops.tics import current_tic
from dovecote.ops.transitions import Transition, transition

__all__ = ["Sent", "Transition", "compose", "draft", "outbox_send", "send", "transition"]

if TYPE_CHECKING:
    from dovecote.api import Dovecote


def default_sender() -> str:
    return os.environ.get("DOVECOTE_ENTITY") or os.environ.get("DOVECOTE_AGENT") or "ent_operator"


@contextmanager
def guarded_many(dc: Dovecote, addrs: list[Address]) -> Iterator[dict[Address, LockedLedger]]:
    """Hold several box locks, always taken in address order."""
    held: dict[Address, LockedLedger] = {}
    with ExitStack() as stack:
        for a in sorted(set(addrs), key=str):
            held[a] = stack.enter_context(dc.store.guarded(a))
        yield held


@dataclass
class Sent:
    id: str
    to: str
    sender: str
    thread_id: str
    appended: bool
    sent_record: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "to": self.to,
            "from": self.sender,
            "thread_id": self.thread_id,
            "appended": self.appended,
            "sent_record": self.sent_record,
        }


def _body(dc: Dovecote, body: str | None, body_file: Path | None) -> tuple[str, str | None]:
    """(inline body, body_ref): bodies over the inline limit go to the artifact store."""
    if body is not None and body_file is not None:
        raise Refusal("invalid_field", "give --body or --body-file, not both")
    if body_file is not None:
        if not body_file.is_file():
            raise Refusal("invalid_field", f"body file {str(body_file)!r} is not a readable file")
        data = body_file.read_bytes()
    else:
        data = (body or "").encode("utf-8")
    limits = dc.roster.limits
    if len(data) > limits.body_hard_limit:
        raise Refusal("too_large", f"the body is {len(data)} bytes; the hard limit is {limits.body_hard_limit}")
    if len(data) > limits.body_inline_max:
        return "", artifacts.put_bytes(dc, data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "", artifacts.put_bytes(dc, data)
    return text, None


def compose(
    dc: Dovecote,
    *,
    to: str,
    subject: str,
    sender: str | None = None,
    body: str | None = None,
    body_file: Path | None = None,
    priority: str = "normal",
    category: str = "notification",
    trust: str = "peer",
    thread: str | None = None,
    reply_to: str | None = None,
    response_expected: bool | None = None,
    expires_tic: int | None = None,
    defer_until_tic: int | None = None,
    reminder_tic: int | None = None,
    artifact_paths: list[Path] | None = None,
    current: int | None = None,
    kind: str = "message",
) -> dict[str, Any]:
    """Validate and build a message (or draft) letter; writes only artifact blobs.

    ``reply_to`` is the item this answers (an id or prefix in the sender's box;
    the thread is inherited), or ``entity:<id>``: whom a response to this
    message must be sent to instead of the sender (``derive/responses.py``).
    """
    check_name(to, "recipient")
    who = check_name(sender or default_sender(), "sender")
    if dc.roster.entity(to) is None:
        raise Refusal("unknown_recipient", f"{to!r} is not a registered entity (dovecote entity add)")
    if reply_to is not None and reply_to.startswith(REDIRECT):
        target = check_name(reply_to[len(REDIRECT):], "reply-to entity")
        if dc.roster.entity(target) is None:
            raise Refusal("unknown_recipient", f"--reply-to {reply_to}: {target!r} is not a registered entity")
    elif reply_to is not None:
        if dc.roster.entity(who) is None:
            raise Refusal("unknown_entity", f"only a registered entity can reply; {who!r} is not one")
        replied = book_for(dc, who).resolve(reply_to)
        reply_to = replied.id
        thread = thread or replied.env.thread_id
    tic, _ = current_tic(dc, current)
    text, body_ref = _body(dc, body, body_file)
    files = [artifacts.put_file(dc, p) for p in artifact_paths or ()]
    role = dc.roster.entity(who)
    return build_message(
        ts=now_ts(),
        sender=who,
        recipient=to,
        subject=subject,
        body=text,
        body_ref=body_ref,
        priority=priority,
        category=category,
        trust_level=trust,
        thread_id=thread,
        reply_to=reply_to,
        response_expected=response_expected,
        expires_at_tic=expires_tic,
        defer_until_tic=defer_until_tic,
        reminder_tic=reminder_tic,
        source_tic=tic,
        artifacts=files,
        sender_role=role.role if role else None,
        kind=kind,
    )


def _sent_record(msg_id: str, msg: dict[str, Any], draft: str | None = None) -> bytes:
    rec: dict[str, Any] = {
        "ts": now_ts(),
        "agent": msg["agent"],
        "kind": "sent",
        "message": msg_id,
        "to": msg["recipient"]["entity_id"],
        "reply_to": msg["routing"]["reply_to"],
    }
    if draft:
        rec["ref"] = draft
    return canonical_line(rec)


def send(dc: Dovecote, **fields: Any) -> Sent:
    """Deliver one message into the recipient's box (and note it in the sender's)."""
    msg = compose(dc, **fields)
    line = canonical_line(msg)
    to = msg["recipient"]["entity_id"]
    ((mid, appended),) = dc.store.append(entity(to), [line])
    record = None
    sender = msg["agent"]
    if dc.roster.entity(sender) is not None:
        ((record, _),) = dc.store.append(entity(sender), [_sent_record(mid, msg)])
    return Sent(mid, to, sender, msg["routing"]["thread_id"], appended, record)


def draft(dc: Dovecote, **fields: Any) -> Sent:
    """Write an outbound draft (EMIT) into the sender's own box."""
    fields.setdefault("sender", None)
    sender = fields["sender"] or default_sender()
    entity_address(dc, sender)
    msg = compose(dc, kind="draft", **{**fields, "sender": sender})
    ((did, appended),) = dc.store.append(entity(sender), [canonical_line(msg)])
    return Sent(did, msg["recipient"]["entity_id"], sender, msg["routing"]["thread_id"], appended, None)


def outbox_send(dc: Dovecote, sender: str | None = None) -> list[dict[str, Any]]:
    """Deliver every pending draft (of one entity, or of all), verifying each recipient."""
    senders = [sender] if sender else [e.id for e in dc.roster.entities]
    out: list[dict[str, Any]] = []
    for who in senders:
        entity_address(dc, who)
        for d in book_for(dc, who).pending_drafts():
            to = d.env.recipient or ""
            if not to or dc.roster.entity(to) is None:
                out.append({"draft": d.id, "from": who, "to": to, "delivered": False, "reason": "unknown_recipient"})
                continue
            with guarded_many(dc, [entity(who), entity(to)]) as held:
                book = book_for(dc, who)
                if d.id in book.delivered:  # someone else delivered it meanwhile
                    continue
                msg = {**d.env.data, "kind": "message", "ts": now_ts()}
                ((mid, _),) = held[entity(to)].append([canonical_line(msg)])
                held[entity(who)].append([_sent_record(mid, msg, draft=d.id)])
            out.append({"draft": d.id, "from": who, "to": to, "delivered": True, "message": mid})
    return out

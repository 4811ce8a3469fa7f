"""``send --type task|response|work_complete`` and ``--to-all``: work mail authored here, delivered at once.

A task or response is one envelope (``envelope_id``) delivered as one letter per
recipient (``vnext_envelope.work_letters``), each into its recipient's box under
that box's lock, with the notify letter its mode writes in the same append. The
``work_complete`` alias becomes a completed result at authoring time
(``vnext_envelope.normalize_alias``). Refusals come before anything is written:
``unknown_recipient`` (no black holes: notes B13.6), ``trust_violation``
(plane-a + execute), ``unknown_parent`` (a response's explicit parent must be a
task delivered to its sender: notes B13.13).

A broadcast (``to_all``) goes to every registered entity but the sender, one
delivery each (notes B13.1: vNext's ``--to-all`` always failed). A plain
message broadcast is one ``mail.send`` per recipient.

With an idempotency key the envelope id is a function of (sender, key), so a
retry finds the delivery it made (by envelope id, under the lock) and writes
nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dovecote.errors import Refusal
from dovecote.model.addresses import check_name, entity
from dovecote.model.letters import canonical_line, format_ts, letter_id
from dovecote.model.vnext_envelope import new_envelope_id, normalize_alias, trust_violation, work_letters
from dovecote.model.vocab import LetterKind
from dovecote.ops.delivery.notify import mode_of, passive_line
from dovecote.ops.mail import send as mail
from dovecote.ops.warm.registry import guarded_many
from dovecote.ops.warm.trackers import book, book_of
from dovecote.util.digests import sha256
from dovecote.verbs.mail import Message

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.verbs.delivery import Send


@dataclass
class Sent:
    """What one send delivered: per recipient, the letter id and whether it was appended now."""

    type: str
    sender: str
    envelope_id: str | None
    work_item_id: str | None
    thread_id: str | None
    deliveries: list[dict[str, Any]] = field(default_factory=list)
    parent_id: str | None = None
    parent_inferred: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        one = self.deliveries[0] if len(self.deliveries) == 1 else None
        return {
            "type": self.type, "from": self.sender, "envelope_id": self.envelope_id,
            "work_item_id": self.work_item_id, "thread_id": self.thread_id, "parent_id": self.parent_id,
            "parent_inferred": self.parent_inferred, "count": len(self.deliveries),
            "id": one["id"] if one else None, "to": one["to"] if one else None,
            "appended": any(d["appended"] for d in self.deliveries), "deliveries": self.deliveries,
        }


def recipients(ctx: Context, v: Send, sender: str) -> list[str]:
    """Whom ``v`` goes to: its recipient (registered), or every registered entity but the sender."""
    if v.to_all:
        out = [e.id for e in ctx.roster.entities if e.id != sender]
        if not out:
            raise Refusal("unknown_recipient", "to_all: the roster has no entity besides the sender")
        return out
    to = check_name(v.recipient, "recipient")
    if ctx.roster.entity(to) is None:
        raise Refusal("unknown_recipient", f"{to!r} is not a registered entity (dovecote entity add)")
    return [to]


def as_message(v: Send, recipient: str) -> Message:
    """The plain ``Message`` of ``v`` for one recipient (what ``mail.send`` takes)."""
    # ``__struct_fields__`` is the names alone: ``msgspec.structs.fields`` evaluates every annotation (~3 ms)
    return Message(**{**{n: getattr(v, n) for n in Message.__struct_fields__}, "recipient": recipient})


def send(ctx: Context, v: Send) -> Sent:
    """Deliver ``v`` (see the module docstring)."""
    sender = check_name(v.sender or ctx.actor.sender(), "sender")
    to = recipients(ctx, v, sender)
    if v.type == "message":
        sent = Sent("message", sender, None, None, v.thread_id)
        for r in to:
            d = mail.send(ctx, as_message(v, r))
            sent.deliveries.append({"id": d.id, "to": r, "appended": d.appended})
            sent.thread_id = d.thread_id
        return sent
    if (why := trust_violation(v.trust_plane, v.intent_class)) is not None:
        raise Refusal("trust_violation", why)
    fields = normalize_alias(_fields(ctx, v, sender))
    if fields["type"] == "response" and "parent_inferred" not in fields:
        _check_parent(ctx, sender, fields["parent_id"])
    mode = mode_of(ctx, None)
    letters = work_letters(fields, to, broadcast=v.to_all)
    sent = Sent(fields["type"], sender, fields["envelope_id"], fields["work_item_id"],
                fields.get("thread_id") or fields["work_item_id"], parent_id=fields.get("parent_id"),
                parent_inferred=fields.get("parent_inferred"))
    with guarded_many(ctx.store, [entity(r) for r in to]) as held:
        for letter in letters:
            r = letter["to"]
            g = held[entity(r)]
            with book(ctx, r, g) as b:
                known = b.by_envelope.get(fields["envelope_id"])
            if known is not None:  # a retry of a keyed send: the delivery is there
                sent.deliveries.append({"id": known, "to": r, "appended": False})
                continue
            line = canonical_line(letter)
            lid = letter_id(line)
            passive = passive_line(lid, letter["ts"], mode)
            ((got, appended), *_) = g.append([line, *([passive] if passive else [])])
            sent.deliveries.append({"id": got, "to": r, "appended": appended})
    return sent


def _fields(ctx: Context, v: Send, sender: str) -> dict[str, Any]:
    """The vNext envelope fields of ``v`` (before the alias is normalized)."""
    env_id = new_envelope_id() if v.idempotency_key is None else _keyed_envelope_id(sender, v.idempotency_key)
    body = v.body or ""
    fields: dict[str, Any] = {
        "envelope_id": env_id, "type": str(v.type), "from": sender, "ts": format_ts(ctx.now()),
        "subject": v.subject, "body": body, "priority": str(v.priority), "work_item_id": v.work_item_id,
        "thread_id": v.thread_id, "trust_plane": str(v.trust_plane), "intent_class": str(v.intent_class),
        "risk": str(v.risk),
        "ack_policy": {
            "ack_required": v.ack_required, "ack_timeout_s": v.ack_timeout, "max_repings": v.max_repings,
            "reping_interval_s": v.reping_interval, "escalation_target": v.escalation_target or sender,
        },
    }
    if v.type == "task":
        fields |= {"task_type": str(v.task_type), "constraints": list(v.constraints),
                   "acceptance_criteria": list(v.acceptance_criteria)}
    else:
        fields |= {"parent_id": v.parent_id, "blocker_flag": v.blocker_flag, "blocker_reason": v.blocker_reason,
                   "next_action": v.next_action}
        if v.response_type is not None:
            fields["response_type"] = str(v.response_type)
        if v.status is not None:
            fields["status"] = str(v.status)
        if v.type == "response" and not v.parent_id:
            raise Refusal("missing_field", "send: a response needs parent_id (or send --type work_complete)")
    if v.idempotency_key is not None:
        fields["idempotency_key"] = v.idempotency_key
    return fields


def _keyed_envelope_id(sender: str, key: str) -> str:
    """The envelope id a key names: a retry with the same key is the same envelope."""
    if not key.strip() or "\x00" in key:
        raise Refusal("invalid_field", "an idempotency key must be a non-empty string without NUL")
    return "env_key_" + sha256(f"{sender}\x00{key}".encode()).hexdigest()[:24]


def _check_parent(ctx: Context, sender: str, parent_id: str) -> None:
    """A response names a task delivered to its sender (notes B13.13: vNext never checked ``parent_id``)."""
    if ctx.roster.entity(sender) is None:
        return  # an unregistered sender has no box to hold the task; nothing to check against
    b = book_of(ctx, sender)
    lid = b.by_envelope.get(parent_id)
    if lid is None or b.rows[lid].letter.kind != LetterKind.task:
        raise Refusal("unknown_parent", f"parent_id {parent_id!r} names no task delivered to {sender}")

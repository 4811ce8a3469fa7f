"""vNext envelopes as dovecote letters: the one normalizer (pure), used by ``send``, ``intake`` and ``import vnext``.

A vNext envelope (notes B2: what ``send_mail.py`` writes to
``intake/pending/<id>.json``) names one sender and one recipient (or a
``to_all`` list). It becomes one letter per recipient, of kind ``task`` or
``response``, in that recipient's box, with the envelope's own field names
(so an imported envelope and an authored one read alike)::

    ts agent kind envelope_id from to subject body priority
    work_item_id thread_id trust_plane intent_class risk
    task:      task_type constraints acceptance_criteria
    response:  parent_id response_type status blocker_flag blocker_reason next_action
    ack_policy {ack_required ack_timeout_s max_repings reping_interval_s escalation_target}
    to_all     (a broadcast: every recipient it went to)
    parent_inferred {alias, from}   (the work_complete alias filled parent_id)
    envelope   (intake and import: the original object, kept whole)

The letter is a function of the envelope alone (no clock, no roster), so
delivering it again is the same line, and the content id makes the re-run a
no-op (DESIGN 1.2). Validation returns a ``Rejected`` with a stable reason
(``invalid_json``, ``missing_field``, ``invalid_field``, ``unknown_recipient``,
``unknown_sender``, ``trust_violation``) rather than raising: intake
quarantines it once with that reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dovecote.model.envelope import Envelope, uuid7
from dovecote.model.foreign import foreign_letter, forged_trust, norm_ts
from dovecote.model.vocab import PRIORITIES, LetterKind
from dovecote.model.vocab_delivery import (
    ACK_TIMEOUT_S,
    MAX_POLICY_S,
    MAX_REPINGS,
    REPING_INTERVAL_S,
    IntentClass,
    ResponseType,
    Risk,
    TaskType,
    TrustPlane,
    WorkStatus,
)

__all__ = [
    "REQUIRED", "Rejected", "ack_policy", "from_envelope", "is_vnext", "new_envelope_id", "normalize_alias",
    "trust_violation", "work_letters",
]

#: The fields every vNext envelope carries (notes B2); ``to`` may be replaced by ``to_all``.
REQUIRED = (
    "envelope_id", "type", "from", "to", "ts", "work_item_id", "trust_plane", "intent_class", "risk", "subject",
    "body", "priority",
)
TASK_FIELDS = ("task_type", "constraints", "acceptance_criteria")
RESPONSE_FIELDS = ("parent_id", "response_type", "status", "blocker_flag", "blocker_reason", "next_action")
#: Optional vNext ids carried through as they are.
PASSTHROUGH = ("event_id", "caused_by", "trace_id", "idempotency_key")
_ENUMS: dict[str, tuple[str, ...]] = {
    "trust_plane": tuple(TrustPlane), "intent_class": tuple(IntentClass), "risk": tuple(Risk),
    "priority": PRIORITIES, "task_type": tuple(TaskType), "response_type": tuple(ResponseType),
    "status": tuple(WorkStatus),
}


@dataclass(frozen=True, slots=True)
class Rejected:
    """Why an envelope can never be delivered: a stable reason keyword and a one-line detail."""

    reason: str
    detail: str


def new_envelope_id() -> str:
    """A fresh, time-sortable envelope id (vNext's ``env_<uuid7>``)."""
    return f"env_{uuid7().hex}"


def trust_violation(trust_plane: str, intent_class: str) -> str | None:
    """The trust rule (notes B2): plane-a may not carry an execute intent. The detail, or None."""
    if trust_plane == TrustPlane.plane_a and intent_class == IntentClass.execute:
        return "plane-a envelopes may not carry intent execute"
    return None


#: The ack policy's spans, in seconds: longer than ``MAX_POLICY_S`` is refused on intake, clamped on import.
SPANS = ("ack_timeout_s", "reping_interval_s")
#: Whether the sender hears of the first ack and of the timeout (``derive.delivery.trackers``' notices).
NOTICE_FLAGS = ("notify_on_ack", "notify_on_timeout")


def ack_policy(given: Mapping[str, Any] | None, sender: str) -> dict[str, Any]:
    """A normalized ack policy: vNext's defaults filled in, the escalation target defaulting to the sender.

    A span longer than a century is clamped to it, and the policy names what
    was clamped (``clamped``), so a due time always fits in a datetime. A
    notice flag (``notify_on_ack``, ``notify_on_timeout``) is kept when false. A policy that is no
    object at all (a string, a number, a list) reads as none given, as a wrong-typed field in it does.
    """
    g = dict(given) if isinstance(given, Mapping) else {}
    if g.get("ack_required") is False:
        return {"ack_required": False}
    out: dict[str, Any] = {
        "ack_required": True,
        "ack_timeout_s": _count(g.get("ack_timeout_s"), ACK_TIMEOUT_S),
        "max_repings": _count(g.get("max_repings"), MAX_REPINGS, zero=True),
        "reping_interval_s": _count(g.get("reping_interval_s"), REPING_INTERVAL_S),
        "escalation_target": g.get("escalation_target") if isinstance(g.get("escalation_target"), str) else sender,
    }
    out |= {k: False for k in NOTICE_FLAGS if g.get(k) is False}  # true unless said: only a "no" is kept
    clamped = [k for k in SPANS if out[k] > MAX_POLICY_S]
    if clamped:
        out |= {k: MAX_POLICY_S for k in clamped}
        out["clamped"] = clamped
    return out


def too_long(given: object) -> list[str]:
    """The spans of an envelope's ack policy longer than ``MAX_POLICY_S`` (what intake refuses)."""
    if not isinstance(given, Mapping) or given.get("ack_required") is False:
        return []
    return [k for k in SPANS if isinstance(v := given.get(k), int) and v > MAX_POLICY_S]


def _count(value: object, default: int, *, zero: bool = False) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and (value >= 0 if zero else value > 0)
    return value if ok else default  # type: ignore[return-value]


def normalize_alias(fields: dict[str, Any]) -> dict[str, Any]:
    """``type: work_complete`` as the canonical completed result (notes B9), at authoring time.

    The parent falls back to ``thread_id``, then ``work_item_id``; when it was
    inferred the letter says so (``parent_inferred``), because a work-item id
    may stand where an envelope id belongs.
    """
    if fields.get("type") != "work_complete":
        return fields
    out = {**fields, "type": "response", "response_type": "result", "status": "completed"}
    if not out.get("parent_id"):
        source = "thread_id" if out.get("thread_id") else "work_item_id"
        out["parent_id"] = out.get(source)
        out["parent_inferred"] = {"alias": "work_complete", "from": source}
    else:
        out["parent_inferred"] = {"alias": "work_complete", "from": None}
    return out


def work_letters(fields: Mapping[str, Any], recipients: list[str], *, broadcast: bool) -> list[dict[str, Any]]:
    """One ``task``/``response`` letter per recipient from normalized envelope ``fields`` (see the module doc)."""
    kind = fields["type"]
    base: dict[str, Any] = {
        "ts": fields["ts"], "agent": fields["from"], "kind": kind, "envelope_id": fields["envelope_id"],
        "from": fields["from"], "subject": fields["subject"], "body": fields.get("body") or "",
        "priority": fields.get("priority") or "normal", "work_item_id": fields["work_item_id"],
        "thread_id": fields.get("thread_id") or fields["work_item_id"],
        "trust_plane": fields["trust_plane"], "intent_class": fields["intent_class"], "risk": fields["risk"],
        "ack_policy": ack_policy(fields.get("ack_policy"), fields["from"]),
    }
    own = TASK_FIELDS if kind == LetterKind.task else RESPONSE_FIELDS
    for k in (*own, *PASSTHROUGH, "parent_inferred", "envelope"):
        if fields.get(k) is not None:
            base[k] = fields[k]
    if kind == LetterKind.task:
        base.setdefault("task_type", "general")
        base.setdefault("constraints", [])
        base.setdefault("acceptance_criteria", [])
    else:
        base.setdefault("response_type", "result")
        base.setdefault("status", "completed")
    if broadcast:
        base["to_all"] = sorted(recipients)
    return [{**base, "to": r} for r in recipients]


def is_vnext(obj: Mapping[str, Any]) -> bool:
    """A vNext envelope (flat, with an ``envelope_id`` or a vNext ``type``), not the skill's nested one."""
    return "envelope_id" in obj or (obj.get("type") in ("task", "response", "work_complete") and "from" in obj)


def _vnext(env: dict[str, Any], known: Callable[[str], bool], clamp: bool) -> list[dict[str, Any]] | Rejected:
    fields = normalize_alias(dict(env))
    given = fields.get("to_all")
    to_all: list[Any] = given if isinstance(given, list) else []
    broadcast = bool(to_all)
    missing = [k for k in REQUIRED if fields.get(k) in (None, "") and not (k == "to" and broadcast)]
    if missing:
        return Rejected("missing_field", f"missing required field(s): {', '.join(missing)}")
    if fields["type"] not in ("task", "response"):
        return Rejected("invalid_field", f"type {fields['type']!r} is not task, response or work_complete")
    for k, allowed in _ENUMS.items():
        if k in fields and fields[k] is not None and fields[k] not in allowed:
            return Rejected("invalid_field", f"{k} {fields[k]!r} is not one of {', '.join(allowed)}")
    for k in ("from", "to", "envelope_id", "work_item_id", "subject"):
        if k in fields and not isinstance(fields[k], str):
            return Rejected("invalid_field", f"{k} must be a string")
    if fields["type"] == "response" and not fields.get("parent_id"):
        return Rejected("missing_field", "a response needs parent_id")
    if not clamp and (long := too_long(fields.get("ack_policy"))):
        return Rejected("invalid_field", f"ack_policy {', '.join(long)} longer than {MAX_POLICY_S} s (a century)")
    ts = norm_ts(fields["ts"])
    if ts is None:
        return Rejected("invalid_field", f"ts {fields['ts']!r} is not an ISO-8601 time")
    if (why := trust_violation(fields["trust_plane"], fields["intent_class"])) is not None:
        return Rejected("trust_violation", why)
    if not known(fields["from"]):
        return Rejected("unknown_sender", f"sender {fields['from']!r} is not a registered entity")
    recipients = [r for r in to_all if isinstance(r, str)] if broadcast else [fields["to"]]
    if broadcast and len(recipients) != len(to_all):
        return Rejected("invalid_field", "to_all must list entity ids")
    unknown = [r for r in recipients if not known(r)]
    if unknown:
        return Rejected("unknown_recipient", f"not registered: {', '.join(sorted(set(unknown)))}")
    fields = {**fields, "ts": ts, "envelope": env}
    return work_letters(fields, sorted(set(recipients)), broadcast=broadcast)


def _skill(env: dict[str, Any], known: Callable[[str], bool]) -> list[dict[str, Any]] | Rejected:
    e = Envelope(env)
    missing = [k for k, v in (("sender.entity_id", e.sender), ("recipient.entity_id", e.recipient)) if not v]
    if missing:
        return Rejected("missing_field", f"missing required field(s): {', '.join(missing)}")
    if not known(e.recipient or ""):
        return Rejected("unknown_recipient", f"not registered: {e.recipient}")
    if not e.subject:
        return Rejected("missing_field", "missing required field(s): content.subject")
    if (forged := forged_trust(env)) is not None:
        return Rejected("forbidden", forged)
    letter = foreign_letter(env)
    letter.setdefault("ts", norm_ts(e.created_at) or "1970-01-01T00:00:00Z")
    return [letter]


def from_envelope(
    obj: object, known: Callable[[str], bool], *, clamp: bool = False
) -> list[dict[str, Any]] | Rejected:
    """The letters an envelope file's JSON object delivers (one per recipient), or why it never can.

    ``known`` says whether an entity id is registered (the roster); ``clamp``
    (an import) clamps an ack policy span past a century, which intake refuses
    (``invalid_field``: the sender hears of it). A vNext
    envelope becomes ``task``/``response`` letters; the /inbox skill's nested
    envelope a ``message`` letter (``foreign.foreign_letter``).
    """
    if not isinstance(obj, dict):
        return Rejected("invalid_json", f"an envelope is a JSON object, not {type(obj).__name__}")
    return _vnext(obj, known, clamp) if is_vnext(obj) else _skill(obj, known)

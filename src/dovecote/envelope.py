"""Message envelopes: the /inbox skill's schema 1.0, as dovecote letters.

A ``message`` letter carries every block of the skill's envelope (sender,
recipient, routing, content, lifecycle, provenance) plus the letter fields
(``ts``, ``agent``, ``kind``). Its id is the content id, so the envelope's own
``message_id`` is not stored by dovecote writers; the folder view writes the
letter id there. Envelopes that arrive from other tools keep every key they
had (``message_id`` included) and are read through ``Envelope``, which knows
the places the skill's writers put things (``source_tic`` under lifecycle or
provenance, a missing block, a flat legacy field).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from dovecote.errors import Refusal
from dovecote.vocab import CATEGORIES, PRIORITIES, RESPONSE_CATEGORIES, TRUST_LEVELS

ENVELOPE_VERSION = "1.0"
#: The sender the skill gives a file dropped into an inbox by hand.
DROP_SENDER = "ent_architect_dropspot"
#: The longest subject a writer may give (characters). A subject is a line in
#: every audit and injection block; past this it is a body. Longer subjects
#: that arrive by import are kept, and shown cut at this length.
SUBJECT_MAX = 200


def _block(d: dict[str, Any], key: str) -> dict[str, Any]:
    v = d.get(key)
    return v if isinstance(v, dict) else {}


def _str(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _int(v: object) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return None


@dataclass(frozen=True, slots=True)
class Envelope:
    """Read access to a message letter (or a foreign envelope) by meaning."""

    data: dict[str, Any]

    @property
    def sender(self) -> str | None:
        return _str(_block(self.data, "sender").get("entity_id")) or _str(self.data.get("from"))

    @property
    def recipient(self) -> str | None:
        return _str(_block(self.data, "recipient").get("entity_id")) or _str(self.data.get("to"))

    @property
    def subject(self) -> str:
        return _str(_block(self.data, "content").get("subject")) or _str(self.data.get("subject")) or ""

    @property
    def body(self) -> str:
        return _str(_block(self.data, "content").get("body")) or _str(self.data.get("body")) or ""

    @property
    def body_ref(self) -> str | None:
        return _str(_block(self.data, "content").get("body_ref"))

    @property
    def artifact_refs(self) -> list[str]:
        refs = _block(self.data, "content").get("artifact_refs")
        return [r for r in refs if isinstance(r, str)] if isinstance(refs, list) else []

    @property
    def envelope_type(self) -> str | None:
        return _str(_block(self.data, "content").get("envelope_type")) or _str(self.data.get("type"))

    def _routing(self, key: str) -> Any:
        return _block(self.data, "routing").get(key, self.data.get(key))

    @property
    def priority(self) -> str:
        p = _str(self._routing("priority"))
        return p if p in PRIORITIES else "normal"

    @property
    def category(self) -> str | None:
        return _str(self._routing("category"))

    @property
    def trust_level(self) -> str | None:
        return _str(self._routing("trust_level"))

    @property
    def thread_id(self) -> str | None:
        return _str(self._routing("thread_id"))

    @property
    def reply_to(self) -> str | None:
        return _str(self._routing("reply_to"))

    @property
    def response_expected(self) -> bool:
        flag = self._routing("response_expected")
        if isinstance(flag, bool):
            return flag
        return self.category in RESPONSE_CATEGORIES

    def _lifecycle(self, key: str) -> Any:
        return _block(self.data, "lifecycle").get(key)

    @property
    def expires_at_tic(self) -> int | None:
        return _int(self._lifecycle("expires_at_tic"))

    @property
    def defer_until_tic(self) -> int | None:
        return _int(self._lifecycle("defer_until_tic"))

    @property
    def reminder_tic(self) -> int | None:
        return _int(self._lifecycle("reminder_tic"))

    @property
    def source_tic(self) -> int | None:
        t = _int(self._lifecycle("source_tic"))
        return t if t is not None else _int(_block(self.data, "provenance").get("source_tic"))

    @property
    def created_at(self) -> str | None:
        return (
            _str(_block(self.data, "provenance").get("created_at"))
            or _str(self._lifecycle("created_at"))
            or _str(self.data.get("ts"))
        )

    @property
    def message_id(self) -> str | None:
        """The id a foreign writer gave the envelope (dovecote's own letters have none)."""
        return _str(self.data.get("message_id")) or _str(self.data.get("envelope_id"))



def _choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise Refusal("invalid_field", f"{what} {value!r} is not one of {', '.join(allowed)}")
    return value


def _tic(value: int | None, what: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise Refusal("invalid_field", f"{what} must be a non-negative whole number")
    return value


def new_thread_id(sender: str, recipient: str, subject: str, ts: str) -> str:
    digest = hashlib.sha256(f"{sender}\x00{recipient}\x00{subject}\x00{ts}".encode()).hexdigest()
    return f"thread_{digest[:12]}"


def build_message(
    *,
    ts: str,
    sender: str,
    recipient: str,
    subject: str,
    body: str = "",
    body_ref: str | None = None,
    priority: str = "normal",
    category: str = "notification",
    trust_level: str = "peer",
    thread_id: str | None = None,
    reply_to: str | None = None,
    response_expected: bool | None = None,
    expires_at_tic: int | None = None,
    defer_until_tic: int | None = None,
    reminder_tic: int | None = None,
    source_tic: int | None = None,
    artifacts: list[dict[str, Any]] | None = None,
    sender_role: str | None = None,
    session_id: str | None = None,
    trace_id: str | None = None,
    envelope_type: str | None = None,
    kind: str = "message",
) -> dict[str, Any]:
    """A message (or draft) letter with every field of envelope schema 1.0."""
    if not subject.strip():
        raise Refusal("missing_field", "a message needs a subject")
    if len(subject) > SUBJECT_MAX:
        raise Refusal(
            "too_large", f"the subject is {len(subject)} characters, over {SUBJECT_MAX}; put the rest in the body"
        )
    for text, what in ((subject, "subject"), (body, "body")):
        if "\x00" in text:
            raise Refusal("invalid_field", f"{what} contains a NUL byte")
    routing: dict[str, Any] = {
        "priority": _choice(priority, PRIORITIES, "priority"),
        "category": _choice(category, CATEGORIES, "category"),
        "trust_level": _choice(trust_level, TRUST_LEVELS, "trust level"),
        "reply_to": reply_to,
        "thread_id": thread_id or new_thread_id(sender, recipient, subject, ts),
        "forward_chain": [],
    }
    if response_expected is not None:
        routing["response_expected"] = response_expected
    content: dict[str, Any] = {
        "subject": subject,
        "body": body,
        "artifact_refs": [a["ref"] for a in artifacts or ()],
        "envelope_type": envelope_type,
    }
    if body_ref:
        content["body_ref"] = body_ref
    if artifacts:
        content["artifacts"] = artifacts
    return {
        "ts": ts,
        "agent": sender,
        "kind": kind,
        "envelope_version": ENVELOPE_VERSION,
        "sender": {"entity_id": sender, "actor_mode": "autonomous", "role_at_send_time": sender_role},
        "recipient": {"entity_id": recipient, "inbox_path": f"agent-mailboxes/{recipient}/"},
        "routing": routing,
        "content": content,
        "lifecycle": {
            "expires_at_tic": _tic(expires_at_tic, "expires tic"),
            "defer_until_tic": _tic(defer_until_tic, "defer-until tic"),
            "reminder_tic": _tic(reminder_tic, "reminder tic"),
        },
        "provenance": {
            "source_tic": _tic(source_tic, "source tic"),
            "created_at": ts,
            "trace_id": trace_id,
            "session_id": session_id,
        },
    }

"""Message envelopes: the /inbox skill's schema 1.0, as dovecote letters.

A ``message`` letter carries every block of the skill's envelope (sender,
recipient, routing, content, lifecycle, provenance) plus the letter fields
(``ts``, ``agent``, ``kind``). Its id is the content id, so two letters with the
same bytes are one letter. That is why every message dovecote authors carries a
``message_id`` of its own, one of two kinds (the skill's schema has both fields):

* ``msg_<uuid7>`` when the caller gave no idempotency key: fresh for every
  send or draft, sortable by creation time, so two identical sends in the same
  second are two messages, never silently one;
* ``msg_key_<24 hex>`` when the caller gave ``idempotency_key``: a function of
  (sender, recipient, key), so a retry names the same message and the writer
  finds it instead of delivering a second one. The key itself is stored too.

A delivered draft keeps the draft's ``message_id`` (and every other byte but
``kind``), so delivering it again is the same line. Envelopes that arrive from
other tools keep every key they had (their own ``message_id`` included) and are
read through ``Envelope``, which knows the places the skill's writers put things
(``source_tic`` under lifecycle or provenance, a missing block, a flat legacy
field).
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import msgspec

from dovecote.errors import Refusal
from dovecote.model.ids import line_id
from dovecote.model.letters import text_or_none as _str
from dovecote.model.vocab import CATEGORIES, PRIORITIES, RESPONSE_CATEGORIES, TRUST_LEVELS
from dovecote.util.digests import sha256

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


def _int(v: object) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return None


class Envelope(msgspec.Struct, frozen=True):
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
        """The envelope's own id (``msg_...`` for dovecote's; whatever a foreign writer gave)."""
        return _str(self.data.get("message_id")) or _str(self.data.get("envelope_id"))

    @property
    def idempotency_key(self) -> str | None:
        return _str(self.data.get("idempotency_key"))


def _choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise Refusal("invalid_field", f"{what} {value!r} is not one of {', '.join(allowed)}")
    return value


def _tic(value: int | None, what: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise Refusal("invalid_field", f"{what} must be a non-negative whole number")
    return value


def uuid7() -> uuid.UUID:
    """A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, 12 bits of sub-millisecond
    time (method 3), 62 random bits. Python 3.11 has no ``uuid.uuid7``."""
    ns = time.time_ns()
    ms, frac = divmod(ns, 1_000_000)
    sub = frac * 4096 // 1_000_000
    rand = int.from_bytes(os.urandom(8)) & ((1 << 62) - 1)
    return uuid.UUID(int=(ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | sub << 64 | 0b10 << 62 | rand)


def new_message_id() -> str:
    """A fresh, time-sortable message id: every authored message without a key gets one."""
    return f"msg_{uuid7()}"


def keyed_message_id(sender: str, recipient: str, key: str) -> str:
    """The message id an idempotency key stands for: the same on every retry."""
    digest = sha256(f"{sender}\x00{recipient}\x00{key}".encode()).hexdigest()
    return f"msg_key_{digest[:24]}"


def new_thread_id(message_id: str) -> str:
    """A message that starts a thread names it after itself (unique, like its id)."""
    return f"thread_{line_id(message_id.encode())}"


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
    message_id: str | None = None,
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """A message (or draft) letter with every field of envelope schema 1.0.

    ``message_id`` defaults to the key's id when ``idempotency_key`` is given,
    else to a fresh ``msg_<uuid7>`` (see the module docstring).
    """
    if not subject.strip():
        raise Refusal("missing_field", "a message needs a subject")
    if len(subject) > SUBJECT_MAX:
        raise Refusal(
            "too_large", f"the subject is {len(subject)} characters, over {SUBJECT_MAX}; put the rest in the body"
        )
    for text, what in ((subject, "subject"), (body, "body")):
        if "\x00" in text:
            raise Refusal("invalid_field", f"{what} contains a NUL byte")
    if idempotency_key is not None and (not idempotency_key.strip() or "\x00" in idempotency_key):
        raise Refusal("invalid_field", "an idempotency key must be a non-empty string without NUL")
    if message_id is None:
        message_id = (
            keyed_message_id(sender, recipient, idempotency_key) if idempotency_key is not None else new_message_id()
        )
    routing: dict[str, Any] = {
        "priority": _choice(priority, PRIORITIES, "priority"),
        "category": _choice(category, CATEGORIES, "category"),
        "trust_level": _choice(trust_level, TRUST_LEVELS, "trust level"),
        "reply_to": reply_to,
        "thread_id": thread_id or new_thread_id(message_id),
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
    letter: dict[str, Any] = {
        "ts": ts,
        "agent": sender,
        "kind": kind,
        "message_id": message_id,
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
    if idempotency_key is not None:
        letter["idempotency_key"] = idempotency_key
    return letter

"""Closed vocabularies of delivery: the vNext envelope's enums and the three state axes.

Kept apart from ``vocab`` so the delivery layer's lists live in one place of
their own. Each is a ``StrEnum`` (the typed verbs take it as is) and, where a
reader compares against it, a tuple of its values. The values are the vNext
tools' own spellings (notes B2, B4, B8), so an imported tracker reads as is.
"""

from __future__ import annotations

from enum import StrEnum

from dovecote.model.vocab import LetterKind


class SendType(StrEnum):
    """What ``send`` authors: a skill message, a vNext task or response, or the legacy alias."""

    message = "message"
    response = "response"
    task = "task"
    work_complete = "work_complete"


class TrustPlane(StrEnum):
    plane_a = "plane-a"
    plane_b = "plane-b"


class IntentClass(StrEnum):
    execute = "execute"
    investigate = "investigate"
    propose = "propose"


class Risk(StrEnum):
    critical = "critical"
    high = "high"
    low = "low"
    medium = "medium"


class TaskType(StrEnum):
    architecture_review = "architecture-review"
    compliance_check = "compliance-check"
    escalation = "escalation"
    general = "general"
    handoff = "handoff"
    implementation = "implementation"
    memory_curation = "memory-curation"
    research = "research"
    status_report = "status-report"


class ResponseType(StrEnum):
    blocker = "blocker"
    clarification = "clarification"
    escalation = "escalation"
    result = "result"
    status = "status"


class WorkStatus(StrEnum):
    awaiting_input = "awaiting_input"
    completed = "completed"
    failed = "failed"
    in_progress = "in_progress"
    partial_complete = "partial_complete"
    rejected = "rejected"
    started = "started"


class AckStatus(StrEnum):
    """What a recipient answers with ``ack``."""

    accepted = "accepted"
    rejected = "rejected"


class NotifyMode(StrEnum):
    """Notifier modes. ``session-inject`` is named so it can be refused (``unverified_mode``), never run."""

    agent_turn_nudge = "agent-turn-nudge"
    discover_only = "discover-only"
    none = "none"
    session_inject = "session-inject"


#: The modes that run (``session-inject`` is reserved: no shell session injection was ever verified).
RUNNABLE_MODES: tuple[str, ...] = ("none", "discover-only", "agent-turn-nudge")


class DeliveryState(StrEnum):
    durably_delivered = "durably_delivered"


class AckState(StrEnum):
    acked = "acked"
    not_applicable = "not_applicable"
    pending = "pending"
    rejected = "rejected"
    timed_out = "timed_out"


class NotifyState(StrEnum):
    """The live-notify axis: assistive, never delivery truth."""

    disabled = "disabled"
    discovered_only = "discovered_only"
    not_attempted = "not_attempted"
    nudge_failed = "nudge_failed"
    nudge_sent = "nudge_sent"


#: The outcome a ``notify`` letter records for a mode that never nudges.
MODE_OUTCOME: dict[str, str] = {"none": NotifyState.disabled, "discover-only": NotifyState.discovered_only}

#: Letter kinds of work mail: delivered into a recipient's box like a message, read by the inbox too.
WORK_KINDS: tuple[str, ...] = (LetterKind.task.value, LetterKind.response.value)
#: Letter kinds that are deliveries an ack or a tracker can refer to.
DELIVERY_KINDS: tuple[str, ...] = (LetterKind.message.value, *WORK_KINDS)

#: Engine letters of the ack axis (``agent: dovecote:engine``, ``ref``: the delivery).
REPING = "reping"
ACK_TIMEOUT = "ack_timeout"
ESCALATION = "escalation"
#: An attempt to nudge (or the record that the mode never nudges), ``ref``: the delivery.
NOTIFY = "notify"
#: A notify letter that claims a nudge before it runs (so two mailmen never nudge twice).
NUDGE_CLAIM = "claimed"
#: A quarantined envelope's notice, in its sender's box.
VIOLATION = "violation"
ACK = "ack"

#: Defaults of an ack policy (vNext's ``send_mail.py``): seconds, counts, the escalation target.
ACK_TIMEOUT_S = 300
MAX_REPINGS = 2
REPING_INTERVAL_S = 300
#: The longest span an ack policy names (a century, in seconds): a due time past it would not fit in a
#: datetime (``timedelta`` of 2**53 seconds overflows), and no ack waits longer. Authoring refuses more
#: (``invalid_field``), an import clamps it, and the tracker fold reads a longer one written anyway as this.
MAX_POLICY_S = 100 * 366 * 24 * 3600
#: The escalation target that means "do not escalate".
NO_ESCALATION = "none"

"""The verbs of delivery: send a task or response, intake, the mailman, ack, trackers, presence, status.

``Send`` is ``Message`` plus the vNext envelope's fields: ``type`` chooses what
is authored (a skill message, a ``task``, a ``response``, or the legacy
``work_complete`` alias that becomes a completed result), and ``to_all``
broadcasts (one delivery per registered entity, so ``recipient`` is optional
here). The fields that belong to one type only are refused on another, so a
misplaced field is never silently dropped.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, ClassVar

import msgspec
from msgspec import Meta

from dovecote.errors import Refusal
from dovecote.model.addresses import check_name
from dovecote.model.vocab_delivery import (
    ACK_TIMEOUT_S,
    MAX_POLICY_S,
    MAX_REPINGS,
    NO_ESCALATION,
    REPING_INTERVAL_S,
    AckStatus,
    IntentClass,
    NotifyMode,
    ResponseType,
    Risk,
    SendType,
    TaskType,
    TrustPlane,
    WorkStatus,
)
from dovecote.verbs.base import MAX_INT, Name, Verb
from dovecote.verbs.limits import ID, ITEMS, PathText, Text
from dovecote.verbs.mail import Message

#: The longest span a delivery field takes (a century; see ``vocab_delivery.MAX_POLICY_S``).
MAX_SECONDS = MAX_POLICY_S
Seconds = Annotated[int, Meta(ge=1, le=MAX_SECONDS)]
WorkId = Annotated[str, Meta(min_length=1, max_length=ID)]
Limit = Annotated[int, Meta(ge=1, le=MAX_INT, description="List at most N rows per list.")]
ActiveMinutes = Annotated[
    int, Meta(ge=1, le=MAX_SECONDS // 60, description="Active: a beat within N minutes.")
]

#: The fields only a task takes, and those only a response takes.
TASK_ONLY = ("task_type", "constraints", "acceptance_criteria")
RESPONSE_ONLY = ("parent_id", "response_type", "status", "blocker_flag", "blocker_reason", "next_action")
#: The fields only work mail (a task or a response) takes.
WORK_ONLY = (
    "work_item_id", "trust_plane", "intent_class", "risk", *TASK_ONLY, *RESPONSE_ONLY,
    "ack_required", "ack_timeout", "max_repings", "reping_interval", "escalation_target",
)


class Send(Message, frozen=True, kw_only=True):
    """A message, task or response: what ``send`` delivers (``draft`` takes a plain ``Message``)."""

    # optional here (a broadcast names none); the handle gives ``send`` one Message per recipient
    recipient: Annotated[Name | None, Meta(description="The recipient entity (or to_all).")] = None  # type: ignore[assignment]
    type: Annotated[SendType, Meta(description="work_complete: a completed result.")] = (
        SendType.message
    )
    to_all: Annotated[bool, Meta(description="To every registered entity but the sender.")] = False
    work_item_id: Annotated[WorkId | None, Meta(description="The work item (task and response).")] = None
    trust_plane: Annotated[TrustPlane, Meta(description="Trust plane; plane-a with execute is refused.")] = (
        TrustPlane.plane_b
    )
    intent_class: Annotated[IntentClass, Meta(description="Intent.")] = IntentClass.investigate
    risk: Annotated[Risk, Meta(description="Risk.")] = Risk.low
    task_type: Annotated[TaskType, Meta(description="Task only: the kind of task.")] = TaskType.general
    constraints: Annotated[tuple[Text, ...], Meta(max_length=ITEMS, description="Task only: constraints.")] = ()
    acceptance_criteria: Annotated[
        tuple[Text, ...], Meta(max_length=ITEMS, description="Task only: acceptance criteria.")
    ] = ()
    parent_id: Annotated[WorkId | None, Meta(description="Response only: the task envelope it answers.")] = None
    response_type: Annotated[ResponseType | None, Meta(description="Response only (default result).")] = None
    status: Annotated[WorkStatus | None, Meta(description="Response only (default completed).")] = None
    blocker_flag: Annotated[bool, Meta(description="Response only: the work is blocked.")] = False
    blocker_reason: Annotated[Text | None, Meta(description="Response only: why it is blocked.")] = None
    next_action: Annotated[Text | None, Meta(description="Response only: what happens next.")] = None
    ack_required: Annotated[bool, Meta(description="Whether the recipient must ack.")] = True
    ack_timeout: Annotated[Seconds, Meta(description="Seconds until an ack is due.")] = ACK_TIMEOUT_S
    max_repings: Annotated[int, Meta(ge=0, le=100, description="Repings before the timeout.")] = MAX_REPINGS
    reping_interval: Annotated[Seconds, Meta(description="Seconds between repings.")] = REPING_INTERVAL_S
    escalation_target: Annotated[
        Annotated[str, Meta(max_length=ID)] | None,
        Meta(description="An entity or none (default: the sender)."),
    ] = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.escalation_target not in (None, NO_ESCALATION):  # "none" is the one target that is not a name
            check_name(self.escalation_target, "escalation target")
        if self.recipient is None and not self.to_all:
            raise Refusal("missing_field", "send: recipient is required (or to_all)")
        if self.recipient is not None and self.to_all:
            raise Refusal("invalid_field", "send: give recipient or to_all, not both")
        kind = SendType(self.type)
        given = self.given()
        if kind is SendType.message:
            wrong = [f for f in WORK_ONLY if f in given]
        elif kind is SendType.task:
            wrong = [f for f in RESPONSE_ONLY if f in given]
        else:
            wrong = [f for f in TASK_ONLY if f in given]
        if wrong:
            raise Refusal("invalid_field", f"send: {', '.join(wrong)} is not a field of a {kind.value}")
        if kind is not SendType.message and self.work_item_id is None:
            raise Refusal("missing_field", f"send: work_item_id is required for a {kind.value}")

    def given(self) -> set[str]:
        """The work fields that differ from their defaults (what the caller set)."""
        return {name for name, default in _work_defaults().items() if getattr(self, name) != default}


@functools.cache
def _work_defaults() -> dict[str, object]:
    """``Send``'s work fields and their defaults (read once: reading a Struct's fields is slow)."""
    return {f.name: f.default for f in msgspec.structs.fields(Send) if f.name in WORK_ONLY}


class Intake(Verb, frozen=True):
    """Deliver every envelope file in an intake folder's pending/, exactly once per recipient."""

    dir: Annotated[
        Annotated[PathText, Meta(min_length=1)] | None,
        Meta(description="The intake folder holding pending/ (default: the home's intake/)."),
    ] = None


class Mailman(Verb, frozen=True):
    """Intake, then each pending ack past due: reping, timeout, one escalation (durable engine letters)."""

    loop: Annotated[bool, Meta(description="Run again every interval until stopped (default: once).")] = False
    interval: Annotated[float, Meta(gt=0, le=3600, description="Seconds between passes with loop.")] = 5.0
    dir: Annotated[
        Annotated[PathText, Meta(min_length=1)] | None,
        Meta(description="The intake folder (default: the home's intake/)."),
    ] = None
    notify_mode: Annotated[
        NotifyMode | None, Meta(description="The notifier mode (default: the roster's).")
    ] = None


class Ack(Verb, frozen=True):
    """Acknowledge a delivery: only its recipient may, once; a late ack is recorded late."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    entity_id: Annotated[Name, Meta(description="The recipient acking.")]
    ref: Annotated[str, Meta(min_length=1, max_length=ID, description="A delivery id (or prefix) or envelope id.")]
    status: Annotated[AckStatus, Meta(description="accepted or rejected.")] = AckStatus.accepted
    reason: Annotated[Text | None, Meta(description="Why (for a rejection).")] = None


class Trackers(Verb, frozen=True):
    """The v3 tracker of each (envelope, recipient): delivery, ack and notify states, repings, escalation, dues."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    entity_id: Annotated[Name | None, Meta(description="Only this recipient's deliveries.")] = None
    work_item_id: Annotated[WorkId | None, Meta(description="Only this work item (exact).")] = None
    thread_id: Annotated[WorkId | None, Meta(description="Only this thread (exact).")] = None
    limit: Limit = 1000


class PresenceBeat(Verb, frozen=True):
    """Record that an agent's session is alive (assistive: never delivery truth)."""

    NAMES: ClassVar[Mapping[str, str]] = {"agent": "agent"}

    agent: Annotated[Name, Meta(description="The agent (an entity id).")]
    session: Annotated[
        Annotated[str, Meta(min_length=1, max_length=ID)] | None, Meta(description="The session key.")
    ] = None


class Presence(Verb, frozen=True):
    """Each known agent: recently active, or no recent session (never "online")."""

    active_minutes: ActiveMinutes = 120


class Status(Verb, frozen=True):
    """The operator view: intake, tracker and state counts, overdue acks, recent deliveries, presence."""

    active_minutes: ActiveMinutes = 120
    work_item_id: Annotated[WorkId | None, Meta(description="Only this work item (exact).")] = None
    thread_id: Annotated[WorkId | None, Meta(description="Only this thread (exact).")] = None
    limit: Limit = 10

"""What the tracker fold answers: one delivery's ``Tracker``, the engine's next ``Step`` for it, and the
cross-box rule that a completed result closes its parent task (``close_tasks``).

Values only: ``derive.delivery.trackers`` folds a box's letters into them, and the use cases that
read trackers (status, the mailman, the tracker listing) need nothing of the fold itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from dovecote.model.vocab import LetterKind
from dovecote.model.vocab_delivery import ACK

__all__ = ["NOTICES", "SCHEMA_VERSION", "TIMEOUT_NOTICE", "Step", "Tracker", "close_tasks"]

SCHEMA_VERSION = "mailbox-tracker-v3"
#: What a notice to the sender is about (a notify letter's ``about``): the first ack, the timeout.
TIMEOUT_NOTICE = "timeout"
NOTICES = (ACK, TIMEOUT_NOTICE)


@dataclass(frozen=True, slots=True)
class Tracker:
    """One (envelope, recipient): the v3 tracker, as derived now."""

    delivery_id: str
    envelope_id: str
    kind: str
    sender: str
    recipient: str
    work_item_id: str | None
    thread_id: str | None
    delivered_ts: str
    ack_required: bool
    ack_state: str
    ack_due_ts: str | None
    ack_ts: str | None
    ack_status: str | None
    ack_late: bool
    timed_out_ts: str | None
    reping_count: int
    max_repings: int
    reping_interval_s: int
    last_ping_ts: str | None
    escalation_target: str | None
    escalated: bool
    escalated_ts: str | None
    escalation_id: str | None
    notify_mode: str | None
    live_notify_state: str
    nudge_claimed: bool
    ignored_acks: int
    parent_id: str | None = None
    response_type: str | None = None
    status: str | None = None
    delivery_state: str = "durably_delivered"
    #: an imported legacy tracker: its legacy fields kept (``legacy_fields_preserved`` on the letter)
    legacy_compat_only: bool = False
    #: the fields an imported tracker lacked or had in another shape, as written (``schema_drift``)
    schema_drift: tuple[str, ...] = ()
    #: the notice to the sender of the first ack / of the timeout (a notify state), None when none is due
    ack_notice: str | None = None
    timeout_notice: str | None = None
    #: the notices the policy asks for (``notify_on_ack``/``notify_on_timeout`` not false)
    notify_on: tuple[str, ...] = ()

    @property
    def is_completed_result(self) -> bool:
        """A completed result (DESIGN 3): it closes its parent task."""
        return (self.kind == LetterKind.response and self.response_type == "result" and self.status == "completed"
                and bool(self.parent_id))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        for name in self.__slots__:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else str(value) if isinstance(value, StrEnum) else value
        return out


@dataclass(frozen=True, slots=True)
class Step:
    """What the mailman does next for one delivery: ``reping`` (with its count), ``timeout``
    (then, if there is a target, ``escalate`` in the same pass) or ``escalate`` alone."""

    action: str
    delivery_id: str
    due: datetime
    count: int = 0
    target: str | None = None


def close_tasks(trackers: Iterable[Tracker]) -> dict[str, Tracker]:
    """Each task closed by a completed result (DESIGN 3): task delivery id -> the closing result.

    A result names its parent by envelope id; one whose parent was inferred by
    the ``work_complete`` alias may name a work item instead, so a parent that
    is no task's envelope id closes the tasks of that work item. The earliest
    result closes; the result's recipient owns the follow-up.
    """
    rows = list(trackers)
    tasks = [t for t in rows if t.kind == LetterKind.task]
    by_env: dict[str, list[Tracker]] = {}
    by_work: dict[str, list[Tracker]] = {}
    for t in tasks:
        by_env.setdefault(t.envelope_id, []).append(t)
        if t.work_item_id:
            by_work.setdefault(t.work_item_id, []).append(t)
    closed: dict[str, Tracker] = {}
    results = sorted((t for t in rows if t.is_completed_result), key=lambda t: (t.delivered_ts, t.delivery_id))
    for res in results:
        parent = res.parent_id or ""
        for task in by_env.get(parent) or by_work.get(parent) or ():
            if task.recipient == res.sender:  # only the task's worker closes it
                closed.setdefault(task.delivery_id, res)
    return closed

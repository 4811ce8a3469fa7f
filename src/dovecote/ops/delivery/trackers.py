"""``trackers``: every (envelope, recipient) tracker across the entity boxes, read-only.

Each row is the v3 tracker (``derive.delivery.tracker.Tracker``) plus, for a task,
whether a completed result closed it (``task_state``, ``closed_by``) and who
owns the follow-up (the result's recipient). Filters are exact matches; a box
this machine cannot read is named in ``unreachable``, never skipped silently.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from dovecote.derive.delivery.tracker import Tracker, close_tasks
from dovecote.errors import StoreError
from dovecote.model.addresses import entity
from dovecote.model.letters import format_ts
from dovecote.model.results import Result
from dovecote.model.vocab import LetterKind
from dovecote.ops.warm.trackers import book

if TYPE_CHECKING:
    from dovecote.ops.context import Context


def all_trackers(ctx: Context, only: str | None = None) -> tuple[list[Tracker], list[dict[str, str]]]:
    """Every tracker of every entity box (or of ``only``), and the boxes that could not be read."""
    rows: list[Tracker] = []
    unreachable: list[dict[str, str]] = []
    for e in ctx.roster.entities:
        if only is not None and e.id != only:
            continue
        try:
            with book(ctx, e.id) as b:
                rows.extend(b.trackers())
        except StoreError as err:
            unreachable.append({"box": str(entity(e.id)), "error": str(err)})
    rows.sort(key=lambda t: (t.delivered_ts, t.delivery_id))
    return rows, unreachable


def row(t: Tracker, closed: dict[str, Tracker], now: datetime | None = None) -> dict[str, Any]:
    """A tracker as a face shows it, with the task's closure and (given ``now``) whether its ack is overdue."""
    out = t.to_dict()
    if t.kind == LetterKind.task:
        by = closed.get(t.delivery_id)
        out["task_state"] = "closed" if by is not None else "open"
        out["closed_by"] = by.delivery_id if by is not None else None
        out["followup_owner"] = by.recipient if by is not None else None
    if t.is_completed_result:
        out["followup_owner"] = t.recipient
        out["followup_action"] = "review_completed_result"
    if now is not None:
        out["overdue"] = t.ack_due_ts is not None and t.ack_due_ts <= format_ts(now)
    return out


def matches(t: Tracker, work_item_id: str | None, thread_id: str | None) -> bool:
    return (work_item_id is None or t.work_item_id == work_item_id) and (thread_id is None or t.thread_id == thread_id)


class Trackers(Result, frozen=True):
    """The trackers asked for, oldest first, at most the limit (``total`` counts them all; each row is the
    tracker's v3 fields as ``derive.delivery.tracker.Tracker.to_dict`` writes them), and the boxes out of reach."""

    total: int
    returned: int
    truncated: bool
    trackers: list[dict[str, Any]]
    unreachable: list[dict[str, str]]


def trackers(
    ctx: Context, entity_id: str | None, work_item_id: str | None, thread_id: str | None, limit: int, now: datetime
) -> Trackers:
    """The trackers, filtered, oldest first, at most ``limit`` (``total`` counts them all)."""
    rows, unreachable = all_trackers(ctx)
    closed = close_tasks(rows)
    picked = [t for t in rows
              if (entity_id is None or t.recipient == entity_id) and matches(t, work_item_id, thread_id)]
    return Trackers(len(picked), min(len(picked), limit), len(picked) > limit,
                    [row(t, closed, now) for t in picked[:limit]], unreachable)

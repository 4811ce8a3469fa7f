"""``status``: the operator's view of delivery, read-only (notes B11, and B13.11: vNext's view wrote).

Law: this view never writes (no ledger row, no cache file, no moved envelope)
and runs the discovery command at most once (``notify.discover`` caches it).
Every count is derived from the folders and the ledgers as they are now, and
the intake counts add up: ``pending + processed + quarantined`` is every
envelope that entered intake, because each is in exactly one of those folders.
Schema drift is counted from the letters as written (an imported tracker's
``schema_drift`` list), before anything normalizes them (notes B13.3: vNext
counted drift after migrating in memory, so it was always zero).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote.derive.trackers import Tracker, close_tasks
from dovecote.letters import format_ts
from dovecote.ops import intake as intake_op
from dovecote.ops.presence import presence
from dovecote.ops.tracker_read import all_trackers, matches, row
from dovecote.vocab_delivery import AckState, DeliveryState, NotifyState

if TYPE_CHECKING:
    from dovecote.context import Context


def _counts(values: list[str], vocabulary: list[str]) -> dict[str, int]:
    c = Counter(str(v) for v in values)
    vocabulary = [str(v) for v in vocabulary]
    return {**{v: c.get(v, 0) for v in vocabulary}, **{k: n for k, n in c.items() if k not in vocabulary}}


def tracker_counts(rows: list[Tracker]) -> dict[str, int]:
    """The eight counts of the vNext status view, over ``rows``."""
    return {
        "total": len(rows),
        "pending_ack": sum(1 for t in rows if t.ack_state == AckState.pending),
        "acked": sum(1 for t in rows if t.ack_state == AckState.acked),
        "rejected": sum(1 for t in rows if t.ack_state == AckState.rejected),
        "timed_out": sum(1 for t in rows if t.ack_state == AckState.timed_out),
        "escalated": sum(1 for t in rows if t.escalated),
        "legacy_compat_only": sum(1 for t in rows if t.legacy_compat_only),
        "schema_drifted": sum(1 for t in rows if t.schema_drift),
    }


def status(
    ctx: Context, folder: Path, *, active_minutes: int, work_item_id: str | None, thread_id: str | None, limit: int,
    now: datetime,
) -> dict[str, Any]:
    """The status view (see the module docstring)."""
    every, unreachable = all_trackers(ctx)
    closed = close_tasks(every)
    rows = [t for t in every if matches(t, work_item_id, thread_id)]
    ts = format_ts(now)
    folders = intake_op.counts(folder)
    pending_files = intake_op.envelope_files(folder, intake_op.PENDING)
    quarantined = intake_op.envelope_files(folder, intake_op.QUARANTINE)
    overdue = sorted((t for t in rows if t.ack_due_ts is not None and t.ack_due_ts <= ts),
                     key=lambda t: (t.ack_due_ts or "", t.delivery_id))
    recent = sorted(rows, key=lambda t: (t.delivered_ts, t.delivery_id), reverse=True)
    escalated = [t for t in recent if t.escalated]
    seen = presence(ctx, active_minutes, now)
    drift = Counter(field for t in rows for field in t.schema_drift)
    return {
        "ts": ts,
        "filters": {"work_item_id": work_item_id, "thread_id": thread_id},
        "intake": {
            "dir": str(folder), "pending": folders[intake_op.PENDING], "processed": folders[intake_op.PROCESSED],
            "quarantined": folders[intake_op.QUARANTINE], "entered": sum(folders.values()),
            "pending_files": pending_files[:limit], "quarantine_files": quarantined[:limit],
        },
        "tracker_counts": tracker_counts(rows),
        "delivery_state_counts": _counts([t.delivery_state for t in rows], list(DeliveryState)),
        "ack_state_counts": _counts([t.ack_state for t in rows], list(AckState)),
        "live_notify_state_counts": _counts([t.live_notify_state for t in rows], list(NotifyState)),
        "schema_drift_counts": dict(sorted(drift.items())),
        "work": {
            "tasks": sum(1 for t in rows if t.kind == "task"),
            "tasks_closed": sum(1 for t in rows if t.kind == "task" and t.delivery_id in closed),
            "completed_results": sum(1 for t in rows if t.is_completed_result),
        },
        "overdue_acks": [row(t, closed, now) for t in overdue[:limit]],
        "overdue_total": len(overdue),
        "recent_deliveries": [row(t, closed, now) for t in recent[:limit]],
        "escalations": [row(t, closed, now) for t in escalated[:limit]],
        "recently_active_agents": [a for a in seen["agents"] if a["recently_active"]],
        "known_agents": [a["agent"] for a in seen["agents"]],
        "discovery": seen["discovery"],
        "unreachable": unreachable,
    }

"""``status``: the operator's view of delivery, read-only (notes B11, and B13.11: vNext's view wrote).

Law: this view never writes (no ledger row, no cache file, no moved envelope)
and runs the discovery command at most once (``notify.discover`` caches it).
Every count is derived from the folders and the ledgers as they are now, and
the intake counts add up: ``pending + processed + quarantined`` is every
envelope that entered intake, because each is in exactly one of those folders.
They are summed over every intake folder of the home (``intake.folders``: its
own and each the roster lists), each also shown on its own; a listed folder
that cannot be read is named in ``intake.unreachable``, never skipped.
Schema drift is counted from the letters as written (an imported tracker's
``schema_drift`` list), before anything normalizes them (notes B13.3: vNext
counted drift after migrating in memory, so it was always zero).

The exact-match filters (``work_item_id``, ``thread_id``) narrow the trackers
and also search the ledgers themselves (``search``, as vNext's view searched
its ledger rows): every letter of the entity boxes and the home box that
carries the work item or thread, and every letter that refers (``ref``) to a
matching delivery (its acks, repings, timeouts, escalations, notify records),
however old: nothing is limited to the recent rows but the list shown.
"""

from __future__ import annotations

import errno
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from dovecote.derive.delivery.tracker import Tracker, close_tasks
from dovecote.errors import StoreError
from dovecote.model.addresses import HOME, Address, entity
from dovecote.model.letters import Letter, format_ts
from dovecote.model.results import Result
from dovecote.model.vocab import LetterKind
from dovecote.model.vocab_delivery import AckState, DeliveryState, NotifyState
from dovecote.ops.delivery import intake as intake_op
from dovecote.ops.delivery.presence import AgentPresence, Discovery, presence
from dovecote.ops.delivery.trackers import all_trackers, matches, row

if TYPE_CHECKING:
    from dovecote.ops.context import Context


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


def intake_view(folders: list[Path], limit: int) -> dict[str, Any]:
    """The intake counts of every folder (the first is the home's own), summed and one by one.

    The summed lists name a file of the home's folder by its name (as before there was more than
    one folder) and a file of another folder by its path. The home's folder, never made yet, reads
    zero; a listed folder that is gone or cannot be read is named unreachable.
    """
    rows: list[dict[str, Any]] = []
    listed: dict[str, list[str]] = {intake_op.PENDING: [], intake_op.QUARANTINE: []}
    unreachable: list[dict[str, str]] = []
    for folder in folders:
        try:
            if folder != folders[0] and not folder.is_dir():
                raise FileNotFoundError(errno.ENOENT, "no such folder")
            counts = intake_op.counts(folder)
            files = {which: intake_op.envelope_files(folder, which) for which in listed}
        except OSError as e:
            unreachable.append({"dir": str(folder), "error": e.strerror or str(e)})
            continue
        for which, names in files.items():
            listed[which] += names if folder == folders[0] else [str(folder / which / n) for n in names]
        rows.append({"dir": str(folder), "pending": counts[intake_op.PENDING],
                     "processed": counts[intake_op.PROCESSED], "quarantined": counts[intake_op.QUARANTINE],
                     "entered": sum(counts.values()), "pending_files": files[intake_op.PENDING][:limit],
                     "quarantine_files": files[intake_op.QUARANTINE][:limit]})
    totals = {key: sum(r[key] for r in rows) for key in ("pending", "processed", "quarantined", "entered")}
    return {"dir": str(folders[0]), **totals, "pending_files": listed[intake_op.PENDING][:limit],
            "quarantine_files": listed[intake_op.QUARANTINE][:limit], "folders": rows, "unreachable": unreachable}


class StatusFilters(Result, frozen=True):
    """The exact-match filters the view was read with (None: not filtered)."""

    work_item_id: str | None
    thread_id: str | None


class Work(Result, frozen=True):
    """Tasks among the trackers, how many a completed result closed, and the completed results."""

    tasks: int
    tasks_closed: int
    completed_results: int


class Status(Result, frozen=True):
    """The status view (see the module docstring). Its tracker rows are ``trackers.row``'s v3 fields and its
    intake block ``intake_view``'s (open rows, as ``Trackers`` keeps them); ``search`` is None unless filtered."""

    ts: str
    filters: StatusFilters
    intake: dict[str, Any]
    tracker_counts: dict[str, int]
    delivery_state_counts: dict[str, int]
    ack_state_counts: dict[str, int]
    live_notify_state_counts: dict[str, int]
    schema_drift_counts: dict[str, int]
    work: Work
    overdue_acks: list[dict[str, Any]]
    overdue_total: int
    recent_deliveries: list[dict[str, Any]]
    escalations: list[dict[str, Any]]
    recently_active_agents: list[AgentPresence]
    known_agents: list[str]
    discovery: Discovery
    unreachable: list[dict[str, str]]
    search: dict[str, Any] | None


def status(
    ctx: Context, folders: list[Path], *, active_minutes: int, work_item_id: str | None, thread_id: str | None,
    limit: int, now: datetime,
) -> Status:
    """The status view (see the module docstring); ``folders``: every intake folder, the home's own first."""
    every, unreachable = all_trackers(ctx)
    closed = close_tasks(every)
    rows = [t for t in every if matches(t, work_item_id, thread_id)]
    ts = format_ts(now)
    overdue = sorted((t for t in rows if t.ack_due_ts is not None and t.ack_due_ts <= ts),
                     key=lambda t: (t.ack_due_ts or "", t.delivery_id))
    recent = sorted(rows, key=lambda t: (t.delivered_ts, t.delivery_id), reverse=True)
    escalated = [t for t in recent if t.escalated]
    seen = presence(ctx, active_minutes, now)
    drift = Counter(field for t in rows for field in t.schema_drift)
    return Status(
        ts=ts,
        filters=StatusFilters(work_item_id, thread_id),
        intake=intake_view(folders, limit),
        tracker_counts=tracker_counts(rows),
        delivery_state_counts=_counts([t.delivery_state for t in rows], list(DeliveryState)),
        ack_state_counts=_counts([t.ack_state for t in rows], list(AckState)),
        live_notify_state_counts=_counts([t.live_notify_state for t in rows], list(NotifyState)),
        schema_drift_counts=dict(sorted(drift.items())),
        work=Work(
            tasks=sum(1 for t in rows if t.kind == LetterKind.task),
            tasks_closed=sum(1 for t in rows if t.kind == LetterKind.task and t.delivery_id in closed),
            completed_results=sum(1 for t in rows if t.is_completed_result),
        ),
        overdue_acks=[row(t, closed, now) for t in overdue[:limit]],
        overdue_total=len(overdue),
        recent_deliveries=[row(t, closed, now) for t in recent[:limit]],
        escalations=[row(t, closed, now) for t in escalated[:limit]],
        recently_active_agents=[a for a in seen.agents if a.recently_active],
        known_agents=[a.agent for a in seen.agents],
        discovery=seen.discovery,
        unreachable=unreachable,
        search=search(ctx, work_item_id, thread_id, limit) if work_item_id or thread_id else None,
    )


def _needle(value: str | None) -> bytes | None:
    """Bytes every line carrying ``value`` as a JSON string holds, when its JSON form is unique (plain ASCII)."""
    if value is None:
        return b""
    plain = value.isascii() and value.isprintable() and '"' not in value and "\\" not in value
    return orjson.dumps(value) if plain else None


def _thread(data: dict[str, Any]) -> object:
    """A letter's thread: a work letter's ``thread_id``, a message's ``routing.thread_id`` (the /inbox shape)."""
    routing = data.get("routing")
    return data.get("thread_id") if not isinstance(routing, dict) else routing.get("thread_id")


def _carries(data: dict[str, Any], work_item_id: str | None, thread_id: str | None) -> bool:
    return (work_item_id is None or data.get("work_item_id") == work_item_id) and (
        thread_id is None or _thread(data) == thread_id)


def search(ctx: Context, work_item_id: str | None, thread_id: str | None, limit: int) -> dict[str, Any]:
    """Every letter of the entity boxes and the home box that matches the filters exactly (see the module
    docstring): newest first, at most ``limit`` listed, all of them counted by kind."""
    needles = [n for n in (_needle(work_item_id), _needle(thread_id)) if n]
    boxes: list[Address] = [entity(e.id) for e in ctx.roster.entities] + [HOME]
    read: list[tuple[Address, list[Letter]]] = []
    unreachable: list[dict[str, str]] = []
    for addr in boxes:
        try:
            read.append((addr, list(ctx.store.read(addr).letters)))
        except StoreError as err:
            unreachable.append({"box": str(addr), "error": str(err)})
    hits: list[tuple[str, Address, Letter, str]] = []  # (ts, box, letter, why)
    named: set[str] = set()
    for addr, letters in read:
        for letter in letters:
            if all(n in letter.raw for n in needles) and _carries(letter.data(), work_item_id, thread_id):
                hits.append((letter.ts or "", addr, letter, "fields"))
                named.add(letter.id)
    for addr, letters in read:
        hits += [(x.ts or "", addr, x, "ref") for x in letters if x.ref in named and x.id not in named]
    hits.sort(key=lambda h: (h[0], h[2].id), reverse=True)
    kinds = Counter(h[2].kind or "report" for h in hits)
    return {
        "filters": {"work_item_id": work_item_id, "thread_id": thread_id},
        "total_matches": len(hits), "returned_matches": min(len(hits), limit), "truncated": len(hits) > limit,
        "source_counts": dict(sorted(kinds.items())),
        "matches": [_match(addr, x, why) for _, addr, x, why in hits[:limit]],
        "unreachable": unreachable,
    }


def _match(addr: Address, letter: Letter, why: str) -> dict[str, Any]:
    d = letter.data()
    return {"id": letter.id, "box": str(addr), "kind": letter.kind or "report", "ts": letter.ts,
            "agent": letter.agent, "ref": letter.ref, "matched_by": why,
            "envelope_id": d.get("envelope_id"), "work_item_id": d.get("work_item_id"), "thread_id": _thread(d)}

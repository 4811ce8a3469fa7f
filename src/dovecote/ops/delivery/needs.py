"""``needs``: what waits on a person, in one list, each with its age and the one action that clears it.

Law: this is a read (it appends nothing, moves no envelope, runs no probe) and it
is computed here once: the Human View's ``/needs`` page, the overview's first card,
the title count and ``GET /api/v1/needs`` all show this answer, never a count of
their own. A thing waits on a person when:

- ``escalation``: an engine escalation sits open in a person's box (an ack timed out);
- ``awaiting_input`` / ``clarification``: an open response's status is ``awaiting_input``, or its
  ``response_type`` is ``clarification``;
- ``blocker``: an open response says the work is blocked (``blocker_flag``, or ``response_type`` ``blocker``);
- ``addressed_to_person``: any other open item in a person's box;
- ``mission_gesture``: a mission head waits for a person's gesture (archive, receipt import);
- ``red_sentinel``: a fixed case's sentinel probe is red (the fix regressed);
- ``overdue_ack``: a delivery's ack is past due and still pending;
- ``quarantined``: an intake envelope was quarantined and waits to be looked at.

A person's box is an entity whose id starts with ``human.`` (the name a signed-in
person acts as) or whose roster role is ``human``. "Open" is the inbox's
meaning: waiting or active. Who reads what is the caller's to say (``reads``:
whose boxes, ``everything``: the intake folders, which only the operator's read
covers), so this module never decides authorization. Oldest first: what has
waited longest leads. Every box that cannot be read is named, never skipped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dovecote.errors import StoreError
from dovecote.model.letters import format_ts
from dovecote.model.results import Result
from dovecote.model.vocab import ENGINE_AGENT, LetterKind
from dovecote.model.vocab_delivery import AckState, ResponseType, WorkStatus
from dovecote.util.timeutil import parse_time

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: Why a thing waits on a person -> the one action that clears it (a word every face shows).
REASONS: dict[str, str] = {
    "escalation": "reply",
    "awaiting_input": "reply",
    "clarification": "reply",
    "blocker": "reply",
    "addressed_to_person": "open",
    "mission_gesture": "gesture",
    "red_sentinel": "fix",
    "overdue_ack": "ack",
    "quarantined": "inspect",
}
#: The inbox states in which an item still waits on someone.
OPEN = ("WAIT", "ACTIVE")
#: A person's prefix and role (see the module docstring).
PERSON_PREFIX, PERSON_ROLE = "human.", "human"


class Need(Result, frozen=True):
    """One thing waiting on a person: why (``reason``), what it is, where, since when and for how long, and
    the action that clears it with the Human View's path where that action is made."""

    reason: str
    what: str
    box: str
    ref: str
    since: str | None
    age_hours: float | None
    action: str
    path: str


class Needs(Result, frozen=True):
    """Everything waiting on a person (oldest first), its count, the count by reason, the boxes out of reach."""

    count: int
    by_reason: dict[str, int]
    needs: list[Need]
    unreachable: list[str]


def is_person(entity_id: str, role: str | None) -> bool:
    """Whether an entity is a person's (see the module docstring)."""
    return entity_id.startswith(PERSON_PREFIX) or role == PERSON_ROLE


def _age(since: str | None, now: datetime) -> float | None:
    t = parse_time(since)
    return round((now - t).total_seconds() / 3600, 1) if t is not None else None


def _item_reason(data: dict[str, Any], person: bool) -> str | None:
    """Why an open item waits on a person, or None when it waits on an agent."""
    if person and data.get("escalates") and data.get("agent") == ENGINE_AGENT:
        return "escalation"
    if data.get("blocker_flag") or data.get("response_type") == ResponseType.blocker:
        return "blocker"
    if data.get("status") == WorkStatus.awaiting_input:
        return "awaiting_input"
    if data.get("response_type") == ResponseType.clarification:
        return "clarification"
    return "addressed_to_person" if person else None


def _inboxes(ctx: Context, reads: Callable[[str], bool], now: datetime, out: list[Need], lost: list[str]) -> None:
    """The open items that wait on a person, read off each box's warm view (no row is copied but theirs): in a
    person's box every open item, elsewhere only responses (the one kind that can block or ask)."""
    from dovecote.derive.inbox.book import Clock
    from dovecote.derive.inbox.state import row_of
    from dovecote.derive.inbox.view import current_view
    from dovecote.ops.reports.tics import current_tic
    from dovecote.ops.warm import inbox as foldcache

    tic, _ = current_tic(ctx, None)
    for e in ctx.roster.entities:
        if not reads(e.id):
            continue
        person = is_person(e.id, e.role)
        try:
            with foldcache.inbox(ctx, e.id) as book:
                rows = current_view(book, Clock(tic, now), ctx.roster.limits, False).rows
                found = []
                for iid, (_, held, _) in rows.items():
                    letter = book.items[iid].letter
                    if not person and letter.kind != LetterKind.response:
                        continue
                    row = row_of(held)
                    reason = _item_reason(letter.data(), person) if row["state"] in OPEN else None
                    if reason is not None:
                        found.append((reason, row))
        except StoreError:
            lost.append(f"entity:{e.id}")
            continue
        for reason, row in found:
            since = row.get("created_at")
            out.append(Need(reason, row.get("subject") or "(no subject)", f"entity:{e.id}", row["id"], since,
                            _age(since, now), REASONS[reason], f"/entities/{e.id}/items/{row['id']}"))


def _missions(ctx: Context, now: datetime, out: list[Need], lost: list[str]) -> None:
    from dovecote.derive.missions.letter import gestures_by_phase
    from dovecote.ops.missions.post import listing

    offers = gestures_by_phase()
    found = listing(ctx, None)
    lost.extend(found.unreachable)
    for h in found.missions:
        if h.phase in offers:
            since = h.updated_at if isinstance(h.updated_at, str) else None
            out.append(Need("mission_gesture", f"{h.mission_id} is {h.phase}: {offers[h.phase].replace('_', ' ')}",
                            h.box, h.mission_id, since, _age(since, now), REASONS["mission_gesture"],
                            f"/missions?mission={h.mission_id}"))


def _sentinels(ctx: Context, now: datetime, out: list[Need], lost: list[str]) -> None:
    from dovecote.ops.cases.cases import cases
    from dovecote.ops.cases.sentinels import RED

    found = cases(ctx)
    lost.extend(str(u) for u in found.unreachable)
    for c in found.cases:
        if c.sentinel is not None and c.sentinel.state == RED:
            since = c.last_seen
            out.append(Need("red_sentinel", f"{c.fingerprint}: the fix regressed ({c.sentinel.probe})",
                            c.boxes[0] if c.boxes else "home", c.fingerprint, since, _age(since, now),
                            REASONS["red_sentinel"], f"/cases?case={c.fingerprint}&show=regressions"))


def _acks(ctx: Context, reads: Callable[[str], bool], now: datetime, out: list[Need], lost: list[str]) -> None:
    from dovecote.ops.delivery.trackers import all_trackers

    rows, unreachable = all_trackers(ctx)
    lost.extend(u.get("box", "") for u in unreachable)
    stamp = format_ts(now)
    for t in rows:
        due = t.ack_due_ts
        if t.ack_state == AckState.pending and due is not None and due <= stamp and reads(t.recipient):
            out.append(Need("overdue_ack", f"{t.kind} from {t.sender} to {t.recipient}, due {t.ack_due_ts}",
                            f"entity:{t.recipient}", t.delivery_id, t.ack_due_ts, _age(t.ack_due_ts, now),
                            REASONS["overdue_ack"], f"/entities/{t.recipient}/items/{t.delivery_id}"))


def _quarantine(ctx: Context, now: datetime, out: list[Need]) -> None:
    from dovecote.ops.delivery import intake

    for folder in intake.folders(ctx):
        for name in intake.envelope_files(folder, intake.QUARANTINE):
            try:  # when it was quarantined: the file's own time (the move keeps no other)
                seconds = (folder / intake.QUARANTINE / name).stat().st_mtime
                since: str | None = format_ts(datetime.fromtimestamp(seconds, tz=UTC))
            except OSError:
                since = None
            out.append(Need("quarantined", f"intake envelope {name}", str(folder), name, since, _age(since, now),
                            REASONS["quarantined"], "/delivery#quarantine"))


def needs(ctx: Context, reads: Callable[[str], bool], *, everything: bool) -> Needs:
    """What waits on a person (see the module docstring): ``reads(entity_id)`` says whose boxes the reader
    may read; ``everything`` adds what only an operator's read covers (the intake's quarantine)."""
    now = ctx.now()
    out: list[Need] = []
    lost: list[str] = []
    _inboxes(ctx, reads, now, out, lost)
    _acks(ctx, reads, now, out, lost)
    _missions(ctx, now, out, lost)
    _sentinels(ctx, now, out, lost)
    if everything:
        _quarantine(ctx, now, out)
    out.sort(key=lambda n: (n.since is None, n.since or "", n.reason, n.ref))
    counts = Counter(n.reason for n in out)
    return Needs(len(out), {r: counts.get(r, 0) for r in REASONS}, out, sorted(set(lost)))

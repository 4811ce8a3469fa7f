"""The mailman: intake, then every pending ack past due: reping (up to the max), timeout, one escalation.

Law: each step is a durable engine letter, decided as a compare-and-swap
(DESIGN 1.6). Under the recipient box's lock (and the escalation targets'),
the tracker fold is fed from the box as read there and the due steps are
derived again; only those are appended, in one append per box. So two mailmen
at once never reping twice, never time out twice and never escalate twice: the
second one, holding the lock after the first, derives nothing due (notes
B13.4, B13.7: vNext's mailman and watcher read-modify-wrote tracker files with
no lock, so an ack could be lost and then falsely escalated).

* ``reping`` (count n) and ``ack_timeout`` go into the recipient's box (``ref``: the delivery);
* an escalation is a real ``message`` to the target (its inbox shows it; notes
  B13.9: vNext's escalations were only nudges, gone in mode none), plus an
  ``escalation`` letter in the recipient's box naming it. Both are functions of
  the history (the message's time is the timeout's), so a crash between the two
  appends is healed by the next pass: the message dedups by content id. A target
  the roster does not know gets it in the home box instead (no black hole).

With agent-turn-nudge the pass also claims a nudge for each delivery no notify
letter names yet, and a notice to the sender for each first ack and each
timeout whose policy asks for one (``notify_on_ack``, ``notify_on_timeout``),
and hands them to the ``Nudger``, which runs them off this path. A mode that
never nudges writes the timeout's notice with the timeout (``disabled`` or
``discovered_only``), as the ack writes its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote.derive.delivery.tracker import TIMEOUT_NOTICE, Step, Tracker
from dovecote.errors import StoreError
from dovecote.model.addresses import HOME, Address, entity
from dovecote.model.envelope import build_message, keyed_message_id
from dovecote.model.letters import canonical_line, format_ts, letter_id
from dovecote.model.vocab import ENGINE_AGENT
from dovecote.model.vocab_delivery import ACK_TIMEOUT, ESCALATION, REPING
from dovecote.ops.delivery import intake as intake_op
from dovecote.ops.delivery.notify import Nudge, Nudger, claim_nudges, mode_of, passive_line
from dovecote.ops.warm.registry import guarded_many
from dovecote.ops.warm.trackers import book

if TYPE_CHECKING:
    from dovecote.ops.context import Context


@dataclass
class Reconciled:
    """What one reconcile pass appended, by kind, and the boxes it could not write."""

    checked: int = 0
    repings: int = 0
    timeouts: int = 0
    escalations: int = 0
    nudges: int = 0
    errors: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"open_checked": self.checked, "repings": self.repings, "timeouts": self.timeouts,
                "escalations": self.escalations, "nudges_claimed": self.nudges, "errors": self.errors}


def _engine(kind: str, t: Tracker, ts: str, **extra: Any) -> dict[str, Any]:
    return {"ts": ts, "agent": ENGINE_AGENT, "kind": kind, "ref": t.delivery_id, "envelope_id": t.envelope_id,
            "to": t.recipient, **extra}


def _escalation_box(ctx: Context, target: str) -> Address:
    return entity(target) if ctx.roster.entity(target) is not None else HOME


def _escalation_message(t: Tracker, target: str, ts: str) -> dict[str, Any]:
    """The escalation as a real message to ``target``: a fixed template with ids and counts."""
    body = (
        f"{t.recipient} has not acked {t.kind} {t.envelope_id} (delivery {t.delivery_id}, work item "
        f"{t.work_item_id}) from {t.sender}, delivered {t.delivered_ts}; {t.reping_count} reping(s) sent; "
        f"timed out {t.timed_out_ts or ts}. Follow up with {t.recipient} or reassign the work."
    )
    msg = build_message(
        ts=ts, sender=ENGINE_AGENT, recipient=target, subject=f"Escalation: no ack from {t.recipient} for "
        f"{t.envelope_id}"[:200], body=body, priority="high", category="directive", trust_level="operator",
        thread_id=t.thread_id, message_id=keyed_message_id(ENGINE_AGENT, target, f"escalation:{t.delivery_id}"),
    )
    msg["escalates"] = t.delivery_id
    return msg


def _plan(ctx: Context, steps: list[Step], trackers: dict[str, Tracker], now: datetime, mode: str) -> tuple[
    list[bytes], dict[Address, list[bytes]], list[bytes], Reconciled
]:
    """The lines the due ``steps`` append, in the order they are written: the recipient box's repings and
    timeouts, then each escalation box's messages, then the recipient box's escalation markers.

    That order heals a crash anywhere: a timeout written alone makes the next
    pass escalate with the message dated at the timeout (the same bytes); a
    message written without its marker is found again by content id. The
    markers are appended in a section of their own, after the messages' fsync:
    written in the same section, the recipient box's fsync could land first and
    a power cut then kept the marker without its message, so no pass would
    ever send it (found by ``tests/crash/test_crash_delivery.py``).
    """
    ts = format_ts(now)
    own: list[bytes] = []
    markers: list[bytes] = []
    others: dict[Address, list[bytes]] = {}
    done = Reconciled()
    for s in steps:
        t = trackers[s.delivery_id]
        if s.action == "reping":
            own.append(canonical_line(_engine(REPING, t, ts, count=s.count, text=(
                f"Reping {s.count} of {t.max_repings}: {t.recipient}, please ack {t.kind} {t.envelope_id}."))))
            done.repings += 1
            continue
        esc_ts = ts
        if s.action == "timeout":
            own.append(canonical_line(_engine(ACK_TIMEOUT, t, ts, repings=t.reping_count, text=(
                f"No ack from {t.recipient} for {t.kind} {t.envelope_id} after {t.reping_count} reping(s)."))))
            done.timeouts += 1
            notice = passive_line(t.delivery_id, ts, mode, about=TIMEOUT_NOTICE, agent=t.sender) \
                if TIMEOUT_NOTICE in t.notify_on else None
            if notice is not None:
                own.append(notice)
        else:
            esc_ts = t.timed_out_ts or ts
        if s.target is None:
            continue
        box = _escalation_box(ctx, s.target)
        msg = canonical_line(_escalation_message(t, s.target, esc_ts))
        others.setdefault(box, []).append(msg)
        markers.append(canonical_line(_engine(ESCALATION, t, esc_ts, target=s.target, box=str(box),
                                              message=letter_id(msg))))
        done.escalations += 1
    return own, others, markers, done


def _targets(ctx: Context, steps: list[Step]) -> set[Address]:
    return {_escalation_box(ctx, s.target) for s in steps if s.target is not None}


def _appended(
    ctx: Context, addr: Address, entity_id: str, targets: set[Address], now: datetime, mode: str
) -> tuple[list[bytes], Reconciled]:
    """The due steps of one box, decided again and appended under the locks of the box and of every
    escalation target they need. The steps read under the lock may need a box the first look did not
    (another mailman timed a delivery out meanwhile: its escalation is due now): then the section
    ends unwritten and is entered again holding that box too (the targets only grow, so it ends).
    Answers the escalation markers still to append (after this section, see ``_plan``) and the counts."""
    while True:
        with guarded_many(ctx.store, [addr, *targets]) as held, book(ctx, entity_id, held[addr]) as b:
            steps = b.due_steps(now)  # again, under the lock: the compare-and-swap
            need = _targets(ctx, steps)
            if need <= targets:
                trackers = {s.delivery_id: b.tracker(s.delivery_id) for s in steps}
                own, others, markers, done = _plan(ctx, steps, trackers, now, mode)
                if own:
                    held[addr].append(own)
                for box, lines in others.items():
                    held[box].append(lines)
                return markers, done
        targets = targets | need


def reconcile(ctx: Context, now: datetime, mode: str | None = None) -> Reconciled:
    """One pass over every entity box: append each due step once (see the module docstring); ``mode``: the
    notifier's (None: the roster's)."""
    mode = mode_of(ctx, mode)
    total = Reconciled()
    for e in ctx.roster.entities:
        addr = entity(e.id)
        try:
            with book(ctx, e.id) as b:
                total.checked += len(b.open)
                due = b.due_steps(now)
            if not due:
                continue
            markers, done = _appended(ctx, addr, e.id, _targets(ctx, due), now, mode)
            if markers:  # only once the messages are fsynced (the section above has ended): see _plan
                with guarded_many(ctx.store, [addr]) as again:
                    again[addr].append(markers)
        except StoreError as err:
            total.errors.append({"box": str(addr), "error": str(err)})
            continue
        total.repings += done.repings
        total.timeouts += done.timeouts
        total.escalations += done.escalations
    return total


def nudge_text(t: Tracker) -> str:
    """What a nudge says (a completed result says follow-up is needed: notes B9)."""
    if t.is_completed_result:
        return (f"Completed result arrived from {t.sender} for {t.parent_id} (work item {t.work_item_id}); "
                f"decide follow-up. dovecote inbox {t.recipient}")
    return f"New {t.kind} from {t.sender}: {t.envelope_id} (work item {t.work_item_id}). dovecote inbox {t.recipient}"


def notice_text(t: Tracker, about: str) -> str:
    """What a notice to the sender says: the first ack, or the timeout (notes B5, B13.12)."""
    if about == TIMEOUT_NOTICE:
        return (f"No ack from {t.recipient} for {t.kind} {t.envelope_id} (work item {t.work_item_id}) after "
                f"{t.reping_count} reping(s); timed out {t.timed_out_ts}. dovecote trackers --entity-id {t.recipient}")
    late = " (late, after the timeout)" if t.ack_late else ""
    return (f"{t.recipient} {t.ack_state} {t.kind} {t.envelope_id} (work item {t.work_item_id}){late}. "
            f"dovecote trackers --entity-id {t.recipient}")


def claim_all(ctx: Context) -> list[Nudge]:
    """Claim a nudge for every delivery no notify letter names yet, and every notice due, box by box."""
    out: list[Nudge] = []
    for e in ctx.roster.entities:
        with book(ctx, e.id) as b:
            texts = {lid: nudge_text(b.tracker(lid)) for lid in sorted(b.unnotified)}
            notices = {}
            for lid, about in sorted(b.unnoticed):
                t = b.tracker(lid)
                notices[(lid, about)] = (t.sender, notice_text(t, about))
        if texts or notices:
            out += claim_nudges(ctx, e.id, texts, notices)
    return out


@dataclass
class Pass:
    """One mailman pass: its intake run, its reconcile pass, the nudges it handed off."""

    intake: intake_op.IntakeRun
    reconciled: Reconciled
    mode: str
    ts: str

    def to_dict(self) -> dict[str, Any]:
        return {"ts": self.ts, "notify_mode": self.mode, "intake": self.intake.to_dict(),
                "reconcile": self.reconciled.to_dict()}


def mailman_pass(ctx: Context, folder: Path, mode: str, nudger: Nudger | None) -> Pass:
    """Intake, then reconcile, then (agent-turn-nudge) claim and hand off the nudges."""
    run = intake_op.intake(ctx, folder, mode)
    now = ctx.now()
    done = reconcile(ctx, now, mode)
    if mode == "agent-turn-nudge" and nudger is not None:
        nudges = claim_all(ctx)
        done.nudges = len(nudges)
        nudger.submit(ctx, nudges)
    return Pass(run, done, mode, format_ts(now))

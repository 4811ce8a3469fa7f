"""The tracker fold: per (envelope, recipient), the three axes of delivery, derived, never stored (DESIGN 3).

Law: a tracker is a pure function of the letters of the recipient's box, in
ledger order. Nothing here reads a clock: ``due`` times come from the letters,
and whether one has passed is asked with an explicit ``now`` (``next_step``).

What each letter does to the tracker of the delivery it names (``ref``):

* a ``task``/``response`` letter addressed to the box's owner *is* a delivery:
  ``delivery_state`` durably_delivered (it is in the ledger, so it was fsynced),
  ``ack_state`` pending when its policy needs an ack, else not_applicable;
* ``ack``: the first one decides (acked or rejected); one after a timeout is
  ``late`` and the timeout stays (``timed_out_ts``); later acks are counted, never applied;
* ``reping`` (engine): ``reping_count`` is the highest count named; the next due
  is that reping's time plus the interval;
* ``ack_timeout`` (engine): a pending ack becomes timed_out (the first one counts);
* ``escalation`` (engine): ``escalated`` (the first one counts), naming the
  message it sent to the target;
* ``notify``: the live-notify axis follows the last outcome recorded
  (``claimed`` marks a nudge in flight and leaves the state not_attempted);
  a notify letter with ``about`` (``ack``, ``timeout``) is instead a notice to
  the sender that the first ack, or the counted timeout, happened: the policy's
  ``notify_on_ack``/``notify_on_timeout`` (true unless written false) make one
  due (``ack_notice``/``timeout_notice``: not_attempted until a notice letter
  records its outcome; None when none is due).

``TrackerBook`` is the fold, fed incrementally (``add``); ``Tracker`` is the
immutable snapshot a reader gets, and ``Step`` what the engine does next; those values, and
``close_tasks`` (the cross-box rule that a completed result closes its parent task), are
``derive.delivery.tracker``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from dovecote.derive.delivery.tracker import NOTICES, TIMEOUT_NOTICE, Step, Tracker
from dovecote.model.letters import Letter
from dovecote.model.vocab import ENGINE_AGENT
from dovecote.model.vocab_delivery import (
    ACK,
    ACK_TIMEOUT,
    ACK_TIMEOUT_S,
    ESCALATION,
    MAX_POLICY_S,
    MAX_REPINGS,
    NO_ESCALATION,
    NOTIFY,
    NUDGE_CLAIM,
    REPING,
    REPING_INTERVAL_S,
    WORK_KINDS,
    AckState,
    NotifyState,
)
from dovecote.util.timeutil import format_ts, parse_time

__all__ = ["TrackerBook", "next_step"]

_ENGINE_KINDS = (REPING, ACK_TIMEOUT, ESCALATION, NOTIFY)


@dataclass(slots=True)
class _Row:
    """The fold's mutable state of one delivery (``Tracker`` is its snapshot)."""

    letter: Letter
    data: dict[str, Any]
    delivered: datetime | None
    timeout_s: int
    interval_s: int
    max_repings: int
    target: str | None
    ack_required: bool
    ack_state: str
    ack_ts: str | None = None
    ack_status: str | None = None
    late: bool = False
    timed_out_ts: str | None = None
    repings: int = 0
    last_ping: datetime | None = None
    last_ping_ts: str | None = None
    escalated_ts: str | None = None
    escalation_id: str | None = None
    notify_mode: str | None = None
    notify: str = NotifyState.not_attempted
    claimed: bool = False
    ignored: int = 0
    #: which notices the policy asks for (``ack``, ``timeout``), and per notice the last outcome recorded
    #: (``claimed`` until one is)
    notify_on: tuple[str, ...] = NOTICES
    notices: dict[str, str] = field(default_factory=dict)

    def notice(self, about: str) -> str | None:
        """The state of the notice ``about``: None when the event has not happened or the policy says no."""
        happened = self.ack_ts is not None if about == ACK else self.timed_out_ts is not None
        if not happened or about not in self.notify_on:
            return None
        got = self.notices.get(about, NotifyState.not_attempted)
        return NotifyState.not_attempted if got == NUDGE_CLAIM else got

    def due(self) -> datetime | None:
        """When the ack is next due (a reping restarts the clock with the interval); None: nothing is."""
        if not self.ack_required or self.ack_state != AckState.pending:
            return None
        if self.last_ping is not None:
            return _later(self.last_ping, self.interval_s)
        if self.delivered is None:
            return None
        return _later(self.delivered, self.timeout_s)


def _later(t: datetime, seconds: int) -> datetime | None:
    """``t`` plus ``seconds``, or None past the last datetime (a letter dated in year 9999): never due."""
    try:
        return t + timedelta(seconds=seconds)
    except OverflowError:
        return None


def _int(value: object, default: int) -> int:
    """A count or span as written, if it is one (a span past a century reads as a century: it fits a datetime)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return min(value, MAX_POLICY_S)
    return default


def _row(letter: Letter, data: dict[str, Any]) -> _Row:
    policy = data.get("ack_policy")
    policy = policy if isinstance(policy, dict) else {}
    required = policy.get("ack_required") is not False and bool(policy)
    target = policy.get("escalation_target")
    return _Row(
        letter, data, parse_time(letter.ts),
        _int(policy.get("ack_timeout_s"), ACK_TIMEOUT_S), _int(policy.get("reping_interval_s"), REPING_INTERVAL_S),
        _int(policy.get("max_repings"), MAX_REPINGS), target if isinstance(target, str) else None,
        required, AckState.pending if required else AckState.not_applicable,
        notify_on=tuple(a for a in NOTICES if policy.get(f"notify_on_{a}") is not False),
    )


@dataclass(slots=True)
class TrackerBook:
    """The tracker fold of one entity's box (see the module docstring)."""

    owner: str
    rows: dict[str, _Row] = field(default_factory=dict)
    by_envelope: dict[str, str] = field(default_factory=dict)
    #: deliveries whose ack may still move (pending, or timed out and not yet escalated)
    open: set[str] = field(default_factory=set)
    #: deliveries no notify letter names yet (what agent-turn-nudge still has to nudge)
    unnotified: set[str] = field(default_factory=set)
    #: (delivery, ``ack``/``timeout``): notices due that no notify letter names yet
    unnoticed: set[tuple[str, str]] = field(default_factory=set)
    #: letters naming a delivery this box does not hold (counted, never guessed at)
    orphans: int = 0

    def add(self, letters: Sequence[Letter]) -> None:
        for letter in letters:
            kind = letter.kind
            if kind in WORK_KINDS:
                self._delivery(letter)
            elif kind == ACK or (kind in _ENGINE_KINDS and letter.agent == ENGINE_AGENT):
                row = self.rows.get(letter.ref or "")
                if row is None:
                    self.orphans += 1
                elif kind == ACK:
                    self._ack(row, letter)
                elif kind == NOTIFY:
                    self._notify(row, letter)
                else:
                    self._engine(row, letter, kind)

    def _delivery(self, letter: Letter) -> None:
        data = letter.data()
        if data.get("to") != self.owner or letter.id in self.rows:
            return
        row = _row(letter, data)
        self.rows[letter.id] = row
        env = data.get("envelope_id")
        if isinstance(env, str):
            self.by_envelope.setdefault(env, letter.id)
        if row.ack_required:
            self.open.add(letter.id)
        self.unnotified.add(letter.id)

    def _ack(self, row: _Row, letter: Letter) -> None:
        if row.ack_ts is not None or letter.agent != self.owner:  # the first ack, by the recipient, decides
            row.ignored += 1
            return
        status = letter.data().get("status")
        row.ack_status = status if status in ("accepted", "rejected") else "accepted"
        row.ack_ts = letter.ts
        row.late = row.timed_out_ts is not None
        row.ack_state = AckState.acked if row.ack_status == "accepted" else AckState.rejected
        self.open.discard(row.letter.id)
        self._due_notice(row, ACK)

    def _due_notice(self, row: _Row, about: str) -> None:
        if row.notice(about) is not None and about not in row.notices:
            self.unnoticed.add((row.letter.id, about))

    def _engine(self, row: _Row, letter: Letter, kind: str) -> None:
        data = letter.data()
        if kind == REPING:
            count = _int(data.get("count"), row.repings + 1)
            if count > row.repings:
                row.repings = count
                row.last_ping, row.last_ping_ts = parse_time(letter.ts), letter.ts
        elif kind == ACK_TIMEOUT:
            if row.timed_out_ts is None and row.ack_ts is None:
                row.timed_out_ts = letter.ts
                row.ack_state = AckState.timed_out
                self._due_notice(row, TIMEOUT_NOTICE)
        elif row.escalated_ts is None:
            row.escalated_ts = letter.ts
            message = data.get("message")
            row.escalation_id = message if isinstance(message, str) else None
        if not _is_open(row):
            self.open.discard(row.letter.id)

    def _notify(self, row: _Row, letter: Letter) -> None:
        data = letter.data()
        outcome, mode, about = data.get("outcome"), data.get("mode"), data.get("about")
        if about is not None:  # a notice to the sender, not the delivery's own nudge
            if about in NOTICES and (outcome == NUDGE_CLAIM or outcome in tuple(NotifyState)):
                self.unnoticed.discard((row.letter.id, about))
                if outcome != NUDGE_CLAIM or about not in row.notices:
                    row.notices[about] = outcome
            return
        self.unnotified.discard(row.letter.id)
        if isinstance(mode, str):
            row.notify_mode = mode
        if outcome == NUDGE_CLAIM:
            row.claimed = True
        elif outcome in tuple(NotifyState):
            row.notify = outcome

    # -- readings -------------------------------------------------------------

    def tracker(self, delivery_id: str) -> Tracker:
        return _snapshot(self.rows[delivery_id])

    def trackers(self) -> Iterable[Tracker]:
        return (_snapshot(r) for r in self.rows.values())

    def find(self, ref: str) -> str | None:
        """The delivery ``ref`` names in this box: a letter id, a unique id prefix, or an envelope id."""
        if ref in self.rows:
            return ref
        if ref in self.by_envelope:
            return self.by_envelope[ref]
        if len(ref) >= 4:
            hits = [i for i in self.rows if i.startswith(ref)]
            if len(hits) == 1:
                return hits[0]
        return None

    def due_steps(self, now: datetime) -> list[Step]:
        """Every engine step due at ``now``, one per delivery (see ``next_step``)."""
        out = []
        for lid in self.open:
            s = _step(self.rows[lid], now)
            if s is not None:
                out.append(s)
        out.sort(key=lambda s: (s.due, s.delivery_id))
        return out


def _is_open(row: _Row) -> bool:
    """Whether the engine may still act on the delivery: its ack pending, or timed out and not yet escalated."""
    if row.ack_state == AckState.pending:
        return row.ack_required
    return (row.ack_state == AckState.timed_out and row.escalated_ts is None
            and row.target not in (None, NO_ESCALATION))


def _step(row: _Row, now: datetime) -> Step | None:
    lid = row.letter.id
    if row.ack_state == AckState.timed_out:
        if row.escalated_ts is None and row.target not in (None, NO_ESCALATION):
            return Step("escalate", lid, parse_time(row.timed_out_ts) or now, target=row.target)
        return None
    due = row.due()
    if due is None or now < due:
        return None
    if row.repings < row.max_repings:
        return Step("reping", lid, due, count=row.repings + 1)
    return Step("timeout", lid, due, target=row.target if row.target != NO_ESCALATION else None)


def next_step(book: TrackerBook, delivery_id: str, now: datetime) -> Step | None:
    """The one step due for ``delivery_id`` at ``now``, or None (acked, not due yet, done escalating)."""
    return _step(book.rows[delivery_id], now)


def _snapshot(r: _Row) -> Tracker:
    d = r.data
    due = r.due()
    return Tracker(
        delivery_id=r.letter.id, envelope_id=str(d.get("envelope_id") or ""), kind=str(r.letter.kind),
        sender=str(d.get("from") or r.letter.agent or ""), recipient=str(d.get("to") or ""),
        work_item_id=_text(d.get("work_item_id")), thread_id=_text(d.get("thread_id")),
        delivered_ts=r.letter.ts or "", ack_required=r.ack_required, ack_state=r.ack_state,
        ack_due_ts=format_ts(due) if due is not None else None, ack_ts=r.ack_ts, ack_status=r.ack_status,
        ack_late=r.late, timed_out_ts=r.timed_out_ts, reping_count=r.repings, max_repings=r.max_repings,
        reping_interval_s=r.interval_s, last_ping_ts=r.last_ping_ts, escalation_target=r.target,
        escalated=r.escalated_ts is not None, escalated_ts=r.escalated_ts, escalation_id=r.escalation_id,
        notify_mode=r.notify_mode, live_notify_state=r.notify, nudge_claimed=r.claimed, ignored_acks=r.ignored,
        parent_id=_text(d.get("parent_id")), response_type=_text(d.get("response_type")),
        status=_text(d.get("status")), legacy_compat_only=bool(d.get("legacy_fields_preserved")),
        schema_drift=tuple(x for x in d.get("schema_drift") or () if isinstance(x, str))
        if isinstance(d.get("schema_drift"), list) else (),
        ack_notice=r.notice(ACK), timeout_notice=r.notice(TIMEOUT_NOTICE), notify_on=r.notify_on,
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None

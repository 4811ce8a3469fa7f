"""The letters a vNext directory becomes: deliveries, acks and tracker history (pure).

Input: the values ``vnext_read.read_tree`` returns. Output: ``(box, line)``
pairs in dovecote's delivery model (``vnext_envelope``, ``derive.delivery.trackers``),
each built from the files' content only (no clock, no file times), so
importing the same directory twice builds the same bytes and the ledgers'
content ids append nothing the second time. A letter is built only from what
cannot change once it has happened in vNext (an envelope, the n-th reping, a
timeout, an escalation, an ack), never from a tracker's current counters, so a
re-import after vNext ran on adds only what happened since.

Per (envelope, recipient) that vNext delivered, one delivery:

* the ``task``/``response`` letter ``vnext_envelope.from_envelope`` makes of the
  envelope (the one normalizer intake and send use), from the first copy found
  in ``intake/processed``, then the agents' ``inbox``/``received``/``outbox``
  (copies are byte copies; one that differs is noted ``conflicting_copy``).
  Envelopes still in ``intake/pending`` were not delivered by vNext and are
  not imported (counted); quarantined ones are counted, never delivered. A
  tracker whose envelope file is gone (old trackers outlive their envelopes),
  or whose envelope dovecote refuses, still becomes a delivery, built from the
  tracker's own fields and marked ``envelope_missing``;
* its tracker history, from the tracker migrated to v3: one ``reping`` letter
  per ``reping_count``, an ``ack_timeout`` when the ack state is (or was, for a
  late ack) timed out, and an ``escalation`` when ``escalated``: the real
  ``message`` into the target's box and the marker in the recipient's box
  naming it, as the mailman writes them; each dated by its ledger row when
  there is one;
* its ``ack``: the tracker's acked/rejected state (one after a timeout is
  ``late``). An ack file in ``agents/<recipient>/acks/`` that ``receipt_watcher``
  has not reconciled yet is counted (``unreconciled_not_imported``), not
  imported: vNext does not count it either, and once reconciled it is in the
  tracker, so the import after that adds it (the file stays in the directory
  meanwhile; nothing is lost).

The tracker's live-notify state is assistive and changes on every nudge, so
it is reported in the counts but never imported as letters.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dovecote.derive.delivery import vnext_trackers as vt
from dovecote.errors import Refusal
from dovecote.model.addresses import Address, check_name, entity
from dovecote.model.envelope import build_message, keyed_message_id
from dovecote.model.foreign import norm_ts
from dovecote.model.letters import canonical_line, letter_id
from dovecote.model.vnext_envelope import Rejected, from_envelope, work_letters
from dovecote.model.vocab import ENGINE_AGENT
from dovecote.model.vocab_delivery import ACK, ACK_TIMEOUT, ESCALATION, NO_ESCALATION, REPING

if TYPE_CHECKING:
    from dovecote.model.vnext_tree import Record, VnextTree

#: What an imported letter says it came from (part of its bytes, so of its id).
IMPORTED = "vnext"
#: The time of a letter whose tracker names no time at all (the intake normalizer's fallback too).
EPOCH = "1970-01-01T00:00:00Z"
#: The ledger rows that date a tracker's history (B6, B7): event type -> the letter kind they date.
DATED_BY = {"ACK_REPING_SENT": REPING, "ACK_TIMEOUT": ACK_TIMEOUT, "ACK_ESCALATION": ESCALATION}


@dataclass
class Plan:
    """The letters to append, and what the tree held."""

    letters: list[tuple[Address, bytes]] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    entities: set[str] = field(default_factory=set)
    envelope_counts: dict[str, int] = field(default_factory=dict)
    ack_counts: dict[str, int] = field(default_factory=dict)
    notes: list[dict[str, Any]] = field(default_factory=list)

    def add(self, who: str, letter: dict[str, Any]) -> str:
        line = canonical_line(letter)
        self.letters.append((entity(who), line))
        self.kinds[str(letter["kind"])] += 1
        self.entities.add(who)
        return letter_id(line)

    def note(self, where: str, reason: str, detail: str) -> None:
        self.notes.append({"path": where, "reason": reason, "detail": detail})


def _name(value: object) -> str | None:
    """An agent name usable as an entity id, else None."""
    if not isinstance(value, str):
        return None
    try:
        return check_name(value, "agent")
    except Refusal:
        return None


def _envelopes(tree: VnextTree, plan: Plan) -> dict[str, Record]:
    """The envelope file of each delivered envelope_id, from the first place it is found."""
    found: dict[str, Record] = {}
    ordered = [*tree.intake["processed"],
               *(c.record for folder in ("inbox", "received", "outbox") for c in tree.copies if c.folder == folder)]
    for rec in ordered:
        eid = rec.obj.get("envelope_id")
        if not isinstance(eid, str) or not eid:
            plan.note(rec.path, "missing_field", "no envelope_id: not an envelope send_mail.py writes")
        elif eid not in found:
            found[eid] = rec
        elif found[eid].obj != rec.obj:
            plan.note(rec.path, "conflicting_copy", f"differs from {found[eid].path}; that copy is imported")
    return found


def _from_tracker(t: dict[str, Any]) -> list[dict[str, Any]]:
    """The delivery of a tracker whose envelope is gone: its own fields, the rest vNext's defaults, marked so."""
    plane = t.get("trust_plane") if t.get("trust_plane") in ("plane-a", "plane-b") else "plane-a"
    target = t.get("escalation_target")
    fields = {
        "type": "task", "ts": norm_ts(t.get("delivered_ts")), "from": t.get("sender"),
        "envelope_id": t.get("envelope_id"), "subject": "(vNext envelope not in the directory)", "body": "",
        "priority": "normal", "work_item_id": t.get("work_item_id") or t.get("envelope_id"),
        "thread_id": t.get("thread_id"), "trust_plane": plane, "intent_class": "investigate", "risk": "low",
        "ack_policy": {"ack_required": True, "max_repings": t.get("max_repings"),
                       "reping_interval_s": t.get("reping_interval_s"),
                       "escalation_target": target if isinstance(target, str) else NO_ESCALATION},
    }
    (letter,) = work_letters(fields, [str(t.get("recipient"))], broadcast=False)
    letter["envelope_missing"] = True
    letter["imported"] = IMPORTED
    return [letter]


def _times(tree: VnextTree) -> dict[tuple[Any, ...], Any]:
    """When each reping (by its count), timeout and escalation of a delivery happened, from the ledger rows."""
    out: dict[tuple[Any, ...], Any] = {}
    for row in tree.rows:
        kind = DATED_BY.get(str(row.obj.get("event_type")))
        if kind is not None:
            n = row.obj.get("reping_count") if kind == REPING else None
            out.setdefault((kind, row.obj.get("delivery_id"), n), norm_ts(row.obj.get("ts")))
    return out


def _engine(kind: str, ref: str, ts: object, **extra: Any) -> dict[str, Any]:
    letter = {"agent": ENGINE_AGENT, "kind": kind, "ref": ref, "imported": IMPORTED, **extra}
    return {"ts": ts, **letter} if ts is not None else letter


def timed_out(t: vt.TrackerView, times: dict[tuple[Any, ...], Any]) -> bool:
    """Whether the ack ever timed out: the tracker says so, or its late ack came after an escalation,
    or the ledger holds its ``ACK_TIMEOUT`` row (vNext let a late ack erase the timeout, B13.8)."""
    return (t.ack == "timed_out" or (t.ack in ("acked", "rejected") and t.escalated)
            or (ACK_TIMEOUT, t.migrated.get("delivery_id"), None) in times)


def _history(plan: Plan, t: vt.TrackerView, ref: str, recipient: str, times: dict[tuple[Any, ...], Any]) -> None:
    """Tracker history as engine letters, each dated by its ledger row, else by what cannot change later
    (a timeout by its due time: vNext overwrote ``ack_ts`` with a late ack, B13.8)."""
    m = t.migrated
    did = m.get("delivery_id")
    count = m.get("reping_count")
    for n in range(1, count + 1 if isinstance(count, int) and not isinstance(count, bool) else 1):
        plan.add(recipient, _engine(REPING, ref, times.get((REPING, did, n)), envelope_id=m.get("envelope_id"),
                                    to=recipient, count=n, delivery_id=did))
    timeout_ts = times.get((ACK_TIMEOUT, did, None)) or norm_ts(m.get("ack_due_ts"))
    if timed_out(t, times):  # a late ack keeps its timeout
        plan.add(recipient, _engine(ACK_TIMEOUT, ref, timeout_ts, envelope_id=m.get("envelope_id"), to=recipient,
                                    delivery_id=did))
    target = _name(m.get("escalation_target"))
    if t.escalated and target is not None and target != NO_ESCALATION:
        ts = times.get((ESCALATION, did, None)) or timeout_ts  # vNext escalates in the pass that times out (B6)
        msg = _escalation_message(m, ref, recipient, target, ts or norm_ts(m.get("delivered_ts")) or EPOCH)
        message = plan.add(target, msg)
        plan.add(recipient, _engine(ESCALATION, ref, ts, envelope_id=m.get("envelope_id"), to=recipient,
                                    target=target, box=f"entity:{target}", message=message, delivery_id=did))


def _escalation_message(m: dict[str, Any], ref: str, recipient: str, target: str, ts: str) -> dict[str, Any]:
    """The escalation as the real message to ``target`` the mailman writes (same template fields, same
    keyed message id, so dovecote's own mailman and an import name one escalation alike)."""
    def clean(value: object) -> str:
        return str(value).replace("\x00", "")

    env, work = clean(m.get("envelope_id")), clean(m.get("work_item_id"))
    body = (f"{recipient} has not acked {env} (delivery {ref}, work item {work}) from {clean(m.get('sender'))}; "
            f"{clean(m.get('reping_count'))} reping(s) sent; timed out in vNext (vNext delivery "
            f"{clean(m.get('delivery_id'))}, imported). Follow up with {recipient} or reassign the work.")
    msg = build_message(
        ts=ts, sender=ENGINE_AGENT, recipient=target, subject=f"Escalation: no ack from {recipient} for {env}"[:200],
        body=body, priority="high", category="directive", trust_level="operator",
        thread_id=m.get("thread_id") if isinstance(m.get("thread_id"), str) else None,
        message_id=keyed_message_id(ENGINE_AGENT, target, f"escalation:{ref}"),
    )
    msg["escalates"] = ref
    msg["imported"] = IMPORTED
    return msg


def _ack(ref: str, recipient: str, envelope_id: object, status: str, ts: object, late: bool) -> dict[str, Any]:
    letter: dict[str, Any] = {"ts": norm_ts(ts), "agent": recipient, "kind": ACK, "ref": ref,
                              "envelope_id": envelope_id, "status": status, "imported": IMPORTED}
    if late:
        letter["late"] = True
    return letter


def _deliveries(env: Record | None, trackers: list[vt.TrackerView], plan: Plan) -> list[dict[str, Any]]:
    """The delivery letters of one envelope (one per recipient), else of its trackers alone."""
    if env is not None:
        # registration is checked by the use case, for all at once; a span past a century is clamped, and said so
        made = from_envelope(env.obj, lambda _: True, clamp=True)
        if not isinstance(made, Rejected):
            return made
        plan.note(env.path, "envelope_rejected", f"{made.reason}: {made.detail}; imported from its tracker(s)")
    plan.envelope_counts["without_envelope_file"] += len(trackers)
    return [letter for t in trackers for letter in _from_tracker(t.migrated)]


#: (envelope_id, recipient) -> the id of the delivery letter already in the recipient's box.
Known = dict[tuple[str, str], str]


def plan(tree: VnextTree, known: Known | None = None) -> Plan:
    """Every letter ``tree`` becomes (see the module doc), in a fixed order.

    ``known`` names the deliveries the boxes already hold (by envelope and
    recipient): those are not delivered again, and their history and ack name
    the letter that is there, so an import after vNext rewrote a tracker (a
    migration in place drops its drift) never makes a second delivery.
    """
    p = Plan()
    known = known or {}
    envs = _envelopes(tree, p)
    times = _times(tree)
    views: dict[tuple[Any, Any], vt.TrackerView] = {}
    for rec in tree.trackers:
        key = (rec.obj.get("envelope_id"), rec.obj.get("recipient"))
        if not all(isinstance(k, (str, type(None))) for k in key):  # a hand-edited tracker: {"envelope_id": {}}
            p.note(rec.path, "invalid_field", "envelope_id and recipient are text; the tracker is not imported")
        elif key in views:
            p.note(rec.path, "duplicate_tracker", "a second tracker of one envelope and recipient (B13.7); "
                   "the first is imported")
        else:
            views[key] = vt.view(rec.obj)
    ack_files = {(a.record.obj.get("envelope_id"), a.agent): a.record.obj for a in tree.acks
                 if isinstance(a.record.obj.get("envelope_id"), (str, type(None)))}
    p.envelope_counts = {"distinct": len(envs), "pending_not_imported": len(tree.intake["pending"]),
                         "quarantined": len(tree.intake["quarantine"]), "deliveries": 0, "already_in_boxes": 0,
                         "without_envelope_file": 0}
    p.ack_counts = {"files": len(tree.acks), "from_trackers": 0, "unreconciled_not_imported": 0}
    of_envelope: dict[Any, list[vt.TrackerView]] = {}
    for k, v in views.items():
        of_envelope.setdefault(k[0], []).append(v)
    groups: list[tuple[Record | None, list[vt.TrackerView]]] = [
        (rec, of_envelope.get(eid, [])) for eid, rec in envs.items()
    ]
    groups += [(None, [v]) for k, v in views.items() if k[0] not in envs]
    for env, trackers in groups:
        for letter in _deliveries(env, trackers, p):
            who, sender = _name(letter.get("to")), _name(letter.get("from"))
            if who is None or sender is None:
                p.note(str(letter.get("envelope_id")), "invalid_name",
                       f"{letter.get('from')!r} -> {letter.get('to')!r} is not a pair of entity ids")
                continue
            view = views.get((letter.get("envelope_id"), who))
            p.entities.update((sender, who))
            p.envelope_counts["deliveries"] += 1
            ref = known.get((str(letter.get("envelope_id")), who))
            if ref is None:
                ref = p.add(who, _lineage({**letter, "imported": IMPORTED}, view))
            else:
                p.envelope_counts["already_in_boxes"] += 1
            _after(p, letter, view, ack_files, ref, who, times)
    return p


def _lineage(letter: dict[str, Any], view: vt.TrackerView | None) -> dict[str, Any]:
    """The delivery letter with its tracker's drift as written (``schema_drift``) and, for a legacy
    tracker (``ack_status`` without ``ack_state``), its v3 normalization's lineage: the legacy fields
    preserved, each inferred field with its reason, and the migration version. ``derive.delivery.trackers`` reads
    them, so dovecote's own trackers count ``schema_drifted`` and ``legacy_compat_only`` as vNext does."""
    if view is None or not view.drift:
        return letter
    out = {**letter, "schema_drift": list(view.drift)}
    if "legacy_ack_status" in view.drift:
        m = view.migrated
        out.update(legacy_fields_preserved=m["legacy_fields_preserved"],
                   migration_inference=m["migration_inference"], migration_version=m["migration_version"],
                   vnext_delivery_id=m.get("delivery_id"))
    return out


def _after(p: Plan, letter: dict[str, Any], view: vt.TrackerView | None, ack_files: dict[tuple[Any, Any], Any],
           ref: str, who: str, times: dict[tuple[Any, ...], Any]) -> None:
    """What happened to one delivery after it arrived: its tracker history, then its ack."""
    eid = letter.get("envelope_id")
    if view is not None:
        _history(p, view, ref, who, times)
    if view is not None and view.ack in ("acked", "rejected"):
        status = "accepted" if view.ack == "acked" else "rejected"
        p.add(who, _ack(ref, who, eid, status, view.migrated.get("ack_ts"), timed_out(view, times)))
        p.ack_counts["from_trackers"] += 1
    elif (eid, who) in ack_files:
        p.ack_counts["unreconciled_not_imported"] += 1

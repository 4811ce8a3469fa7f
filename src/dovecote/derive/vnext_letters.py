"""The letters a vNext directory becomes: deliveries, acks and tracker history (pure).

Input: the values ``vnext_read.read_tree`` returns. Output: ``(box, line)``
pairs, each line built from the files' content only (no clock, no file
times), so importing the same directory twice builds the same bytes and the
ledgers' content ids append nothing the second time. A letter is built only
from what cannot change once it has happened in vNext (an envelope, a delivery
time, the n-th reping, a timeout, an escalation, an ack), never from a
tracker's current counters, so a re-import after vNext ran on adds only what
happened since.

Per (envelope, recipient), one delivery (keyed like a vNext tracker):

* the envelope, from the first copy found in ``intake/processed``, the agents'
  ``inbox``/``received``/``outbox``, then ``intake/pending`` (copies are
  byte copies; one that differs is noted ``conflicting_copy``). Quarantined
  envelopes are counted, never delivered. A tracker whose envelope file is
  gone (old trackers outlive their envelopes) still becomes a delivery, built
  from the tracker's own fields and marked ``envelope_missing``;
* its tracker history, from the tracker migrated to v3: one reping letter per
  ``reping_count``, a timeout when the ack state is (or was, for a late ack)
  timed out, an escalation into the target's box when ``escalated``, each
  dated by its ledger row (``repings``, ``timeouts``, ``escalations``) when
  there is one;
* its ack: the tracker's acked/rejected state, else an unreconciled ack file
  in ``agents/<recipient>/acks/`` (what ``receipt_watcher`` had not read yet).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from dovecote.addresses import Address, check_name, entity
from dovecote.derive import vnext_trackers as vt
from dovecote.letters import canonical_line, letter_id
from dovecote.vnext_read import Record, VnextTree
from dovecote.vocab import ENGINE_AGENT

#: Where an envelope copy is looked for, first found first.
SOURCES = ("intake/processed", "inbox", "received", "outbox", "intake/pending")
#: What an imported letter says it came from (part of its bytes, so of its id).
IMPORTED = "vnext"


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


def _name(value: object) -> str | None:
    """An agent name usable as an entity id, else None (the plan notes it)."""
    if not isinstance(value, str):
        return None
    try:
        return check_name(value, "agent")
    except Exception:  # a Refusal: not a name dovecote can make a box of
        return None


def recipients(env: dict[str, Any]) -> list[str]:
    """vNext's recipients: ``to_all`` when given, else ``to`` (B2)."""
    if env.get("to_all"):
        return [str(x).strip() for x in env["to_all"] if str(x).strip()]
    return [str(env["to"]).strip()] if env.get("to") else []


def _envelopes(tree: VnextTree, plan: Plan) -> dict[str, dict[str, Any]]:
    """The envelope of each envelope_id, from the first place it is found."""
    found: dict[str, tuple[str, Record]] = {}
    ordered: list[tuple[str, Record]] = [("intake/processed", r) for r in tree.intake["processed"]]
    ordered += [(c.folder, c.record) for folder in ("inbox", "received", "outbox")
                for c in tree.copies if c.folder == folder]
    ordered += [("intake/pending", r) for r in tree.intake["pending"]]
    for where, rec in ordered:
        eid = rec.obj.get("envelope_id")
        if not isinstance(eid, str) or not eid:
            plan.notes.append({"path": rec.path, "reason": "missing_field", "detail": "no envelope_id"})
            continue
        if eid in found:
            if found[eid][1].obj != rec.obj:
                plan.notes.append({"path": rec.path, "reason": "conflicting_copy",
                                   "detail": f"differs from {found[eid][1].path}; that copy is imported"})
            continue
        found[eid] = (where, rec)
    return {eid: rec.obj for eid, (_, rec) in found.items()}


def _delivery(env: dict[str, Any], recipient: str) -> dict[str, Any]:
    """The delivery letter of ``env`` to ``recipient``: the envelope's own fields (and the original), so
    it is the same letter whether the envelope was still pending or already delivered when imported."""
    return {
        "ts": env.get("ts"), "agent": env.get("from"), "kind": env.get("type") or "task", "to": f"entity:{recipient}",
        "recipient": recipient, "envelope_id": env.get("envelope_id"), "work_item_id": env.get("work_item_id"),
        "thread_id": env.get("thread_id") or env.get("work_item_id"), "subject": env.get("subject"),
        "body": env.get("body"), "imported": IMPORTED, "vnext": env,
    }


def _from_tracker(t: dict[str, Any]) -> dict[str, Any]:
    """An envelope rebuilt from a tracker whose envelope file is gone (marked so)."""
    return {
        "envelope_id": t.get("envelope_id"), "type": "task", "from": t.get("sender"), "to": t.get("recipient"),
        "ts": t.get("delivered_ts"), "work_item_id": t.get("work_item_id"), "thread_id": t.get("thread_id"),
        "subject": None, "body": None, "envelope_missing": True,
    }


def _engine(kind: str, ref: str, ts: object, **extra: Any) -> dict[str, Any]:
    return {"ts": ts, "agent": ENGINE_AGENT, "kind": kind, "ref": ref, "imported": IMPORTED, **extra}


#: The ledger rows that date a tracker's history (B6, B7): event type -> the letter kind they date.
DATED_BY = {"ACK_REPING_SENT": "reping", "ACK_TIMEOUT": "ack_timeout", "ACK_ESCALATION": "escalation"}


def _times(tree: VnextTree) -> dict[tuple[Any, ...], Any]:
    """When each reping (by its count), timeout and escalation of a delivery happened, from the ledger rows."""
    out: dict[tuple[Any, ...], Any] = {}
    for row in tree.rows:
        kind = DATED_BY.get(str(row.obj.get("event_type")))
        if kind is not None:
            n = row.obj.get("reping_count") if kind == "reping" else None
            out.setdefault((kind, row.obj.get("delivery_id"), n), row.obj.get("ts"))
    return out


def _history(plan: Plan, t: vt.TrackerView, ref: str, recipient: str, times: dict[tuple[Any, ...], Any]) -> None:
    """Tracker history as engine letters, each dated by its ledger row, else by what cannot change later
    (a timeout by its due time: vNext overwrote ``ack_ts`` with a late ack, B13.8)."""
    m = t.migrated
    did = m.get("delivery_id")
    count = m.get("reping_count")
    for n in range(1, count + 1 if isinstance(count, int) and not isinstance(count, bool) else 1):
        plan.add(recipient, _engine("reping", ref, times.get(("reping", did, n)), n=n, delivery_id=did))
    if t.ack == "timed_out" or (t.ack in ("acked", "rejected") and t.escalated):  # a late ack keeps its timeout
        ts = times.get(("ack_timeout", did, None)) or m.get("ack_due_ts")
        plan.add(recipient, _engine("ack_timeout", ref, ts, delivery_id=did))
    target = _name(m.get("escalation_target"))
    if t.escalated and target is not None and target != "none":
        plan.add(target, _engine("escalation", ref, times.get(("escalation", did, None)), to=f"entity:{target}",
                                 recipient=recipient, delivery_id=did))


def _ack(ref: str, recipient: str, status: str, ts: object, **extra: Any) -> dict[str, Any]:
    return {"ts": ts, "agent": recipient, "kind": "ack", "ref": ref, "status": status, "imported": IMPORTED,
            **extra}


def plan(tree: VnextTree) -> Plan:
    """Every letter ``tree`` becomes (see the module doc), in a fixed order."""
    p = Plan()
    envs = _envelopes(tree, p)
    times = _times(tree)
    views = {}
    for rec in tree.trackers:
        key = (rec.obj.get("envelope_id"), rec.obj.get("recipient"))
        if key in views:
            p.notes.append({"path": rec.path, "reason": "duplicate_tracker",
                            "detail": "a second tracker of one envelope and recipient (B13.7); the first is used"})
            continue
        views[key] = vt.view(rec.obj)
    ack_files = {(a.record.obj.get("envelope_id"), a.agent): a.record for a in tree.acks}
    delivered: set[tuple[Any, Any]] = set()
    p.envelope_counts = {"distinct": len(envs), "quarantined": len(tree.intake["quarantine"]), "deliveries": 0,
                         "without_envelope_file": 0}
    p.ack_counts = {"files": len(tree.acks), "from_trackers": 0, "from_files": 0}
    pairs: list[tuple[Any, dict[str, Any] | None, Any]] = [
        (eid, env, r) for eid, env in envs.items() for r in recipients(env)
    ]
    pairs += [(k[0], None, k[1]) for k in views if k[0] not in envs]
    for eid, env, r in pairs:
        who, sender = _name(r), _name((env or views[(eid, r)].migrated).get("from" if env else "sender"))
        if who is None or sender is None or (eid, r) in delivered:
            if (eid, r) not in delivered:
                p.notes.append({"envelope_id": eid, "reason": "invalid_name", "detail": f"recipient {r!r}"})
            continue
        delivered.add((eid, r))
        view = views.get((eid, r))
        if env is None:
            env = _from_tracker(view.migrated if view else {})
            p.envelope_counts["without_envelope_file"] += 1
        p.entities.add(sender)
        ref = p.add(who, _delivery(env, who))
        p.envelope_counts["deliveries"] += 1
        if view is not None:
            _history(p, view, ref, who, times)
        if view is not None and view.ack in ("acked", "rejected"):
            p.add(who, _ack(ref, who, "accepted" if view.ack == "acked" else "rejected", view.migrated.get("ack_ts")))
            p.ack_counts["from_trackers"] += 1
        elif (eid, r) in ack_files:
            a = ack_files[(eid, r)].obj
            p.add(who, _ack(ref, who, str(a.get("status") or "accepted"), a.get("received_ts"),
                            reason=a.get("reason"), ack_id=a.get("ack_id")))
            p.ack_counts["from_files"] += 1
    return p

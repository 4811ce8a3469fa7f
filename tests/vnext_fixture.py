"""Fixture vNext mailbox directories, written the way the vNext tools write them (notes B1-B10).

``VnextDir`` plays the vNext scripts over a directory: ``send`` is
``send_mail.py`` (an envelope in ``intake/pending``), ``mailman`` one
``haiku_mailman.py --once`` loop (deliver in name order, quarantine, v3
trackers, ledger rows, then reping/timeout/escalation), ``ack`` is
``write_ack.py`` and ``watch`` one ``receipt_watcher.py`` pass. ``legacy``
writes a tracker in the pre-v3 shape the real repository still holds
(``ack_status``, ``receipt_path``, no state axes). Times are passed in, so a
fixture is the same bytes every run. Files are written with ``indent=2`` as
vNext's ``write_json`` writes them.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.verbs import EntityAdd
from dovecote.verbs import Trackers as TrackersVerb
from helpers import new_home
from reference_vnext_status import ref_migrate

T0 = datetime.fromisoformat("2026-03-10T10:00:00+00:00")
AGENTS = ("aya", "arbiter", "haiku", "heru", "jabari", "kimi", "tariq")
REQUIRED = ("envelope_id", "type", "from", "to", "ts", "work_item_id", "trust_plane", "intent_class", "risk",
            "subject", "body", "priority")


def iso(t: datetime) -> str:
    return t.isoformat(timespec="seconds")


def write_json(path: Path, obj: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def append_row(path: Path, row: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")


class VnextDir:
    """A vNext mailbox directory under ``root`` and the scripts that write it."""

    def __init__(self, root: Path, notifier_mode: str = "none") -> None:
        self.root = root
        self.mode = notifier_mode
        self.n = 0
        for d in ("intake/pending", "intake/processed", "intake/quarantine", "haiku/tracking",
                  "ledger/timeouts", "ledger/repings", "ledger/escalations"):
            (root / d).mkdir(parents=True, exist_ok=True)
        for a in AGENTS:
            for d in ("inbox", "outbox", "received", "responses", "acks"):
                (root / "agents" / a / d).mkdir(parents=True, exist_ok=True)

    def _id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_019cd7{self.n:02x}-0000-7000-8000-{self.n:012x}"

    def _row(self, name: str, event_type: str, family: str, state_class: str, ts: datetime, **fields: Any) -> None:
        row = {"schema_version": "mailbox-event-v1", "component": "haiku_mailman", "event_type": event_type,
               "event_family": family, "state_class": state_class, "trust_plane": "plane-a",
               "provenance_writer": "haiku_mailman", "ts": iso(ts), **fields}
        append_row(self.root / "ledger" / name, row)

    # -- send_mail.py ------------------------------------------------------------
    def send(self, frm: str, to: str, *, at: datetime = T0, kind: str = "task", work_item_id: str = "wi-1",
             ack_required: bool = True, ack_timeout_s: int = 300, max_repings: int = 2,
             escalation_target: str = "aya", **extra: Any) -> dict[str, Any]:
        env: dict[str, Any] = {
            "envelope_id": self._id("env"), "type": kind, "from": frm, "to": to, "ts": iso(at),
            "work_item_id": work_item_id, "thread_id": work_item_id, "trust_plane": "plane-b",
            "intent_class": "investigate", "risk": "low", "subject": f"subject {self.n}", "body": "body",
            "priority": "normal",
        }
        if kind == "task":
            env.update(task_type="general", constraints=[], acceptance_criteria=[])
        else:
            env.update(parent_id=extra.pop("parent_id", work_item_id), response_type="result", status="completed",
                       blocker_flag=False, blocker_reason=None, next_action=None)
        env["ack_policy"] = (
            {"ack_required": True, "ack_timeout_s": ack_timeout_s, "max_repings": max_repings,
             "reping_interval_s": 300, "escalation_target": escalation_target, "notify_on_delivery": True,
             "notify_on_ack": True, "notify_on_timeout": True}
            if ack_required else {"ack_required": False}
        )
        env.update(extra)
        write_json(self.root / "intake" / "pending" / f"{env['envelope_id']}.json", env)
        return env

    def drop(self, name: str, data: bytes) -> None:
        """A file in intake/pending that is not what send_mail.py writes (torn, not JSON...)."""
        (self.root / "intake" / "pending" / name).write_bytes(data)

    # -- haiku_mailman.py --once ----------------------------------------------------
    def mailman(self, now: datetime) -> None:
        for p in sorted((self.root / "intake" / "pending").glob("*.json")):
            try:
                env = json.loads(p.read_text(encoding="utf-8"))
            except ValueError:
                continue  # vNext logs PROCESSING_ERROR and leaves it in pending forever (B13.6)
            missing = [f for f in REQUIRED if env.get(f) in (None, "")]
            bad = missing or (env.get("trust_plane") == "plane-a" and env.get("intent_class") == "execute")
            if bad:
                shutil.move(str(p), self.root / "intake" / "quarantine" / p.name)
                self._row("violations.jsonl", "QUARANTINED", "comms/violation", "violation_state", now,
                          envelope_id=env.get("envelope_id"), reason="invalid")
                continue
            for to in [env["to"]]:
                shutil.copy2(p, self.root / "agents" / to / "inbox" / p.name)
                shutil.copy2(p, self.root / "agents" / env["from"] / "outbox" / p.name)
                self._tracker(env, to, now)
            shutil.move(str(p), self.root / "intake" / "processed" / p.name)
        self.tick(now)

    def _tracker(self, env: dict[str, Any], to: str, now: datetime) -> None:
        policy = env.get("ack_policy", {})
        delivery_id = self._id("del") if policy.get("ack_required", True) else None
        self._row("deliveries.jsonl", "DELIVERY_CONFIRMED", "comms/delivery", "delivery_state", now,
                  delivery_truth=True, delivery_id=delivery_id, envelope_id=env["envelope_id"], sender=env["from"],
                  recipient=to, ack_state="pending" if delivery_id else "not_applicable")
        if delivery_id is None:
            return
        adapter = {"none": "disabled", "discover-only": "session_discovery"}.get(self.mode, "openclaw-agent-cli")
        t = {
            "schema_version": "mailbox-tracker-v3", "component": "haiku_mailman", "event_family": "comms/delivery",
            "state_class": "delivery_state", "trust_plane": env["trust_plane"], "provenance_writer": "haiku_mailman",
            "notify_mode": self.mode, "adapter": adapter, "delivery_id": delivery_id,
            "envelope_id": env["envelope_id"], "thread_id": env.get("thread_id"), "work_item_id": env["work_item_id"],
            "sender": env["from"], "recipient": to, "delivered_ts": iso(now), "delivery_state": "durably_delivered",
            "ack_state": "pending", "ack_due_ts": iso(now + timedelta(seconds=policy.get("ack_timeout_s", 300))),
            "ack_ts": None, "live_notify_state": "nudge_failed", "live_notify": None, "last_ping_ts": iso(now),
            "reping_count": 0, "max_repings": policy.get("max_repings", 2), "reping_interval_s": 300,
            "notify_on_delivery": True, "notify_on_ack": True, "notify_on_timeout": True,
            "escalation_target": policy.get("escalation_target", "aya"), "escalated": False, "receipt_id": None,
        }
        write_json(self.root / "haiku" / "tracking" / f"{delivery_id}.json", t)

    def tick(self, now: datetime) -> None:
        """The ack scan of one mailman loop (B6): migrate, then one step per pending tracker past due."""
        for p in sorted((self.root / "haiku" / "tracking").glob("*.json")):
            t, changed = ref_migrate(json.loads(p.read_text(encoding="utf-8")))
            if changed:
                t["migrated_at"] = iso(now)
                write_json(p, t)
            if t.get("ack_state", t.get("ack_status")) != "pending" or now < datetime.fromisoformat(t["ack_due_ts"]):
                continue
            ids = {"delivery_id": t["delivery_id"], "envelope_id": t["envelope_id"], "recipient": t["recipient"]}
            if t["reping_count"] < t["max_repings"]:
                t["reping_count"] += 1
                t["last_ping_ts"] = iso(now)
                t["ack_due_ts"] = iso(now + timedelta(seconds=t["reping_interval_s"]))
                self._row("repings/repings.jsonl", "ACK_REPING_SENT", "comms/live-notify", "live_notify_state", now,
                          reping_count=t["reping_count"], **ids)
            else:
                t["ack_state"], t["ack_ts"] = "timed_out", iso(now)
                self._row("timeouts/timeouts.jsonl", "ACK_TIMEOUT", "comms/timeout", "ack_state", now, **ids)
                target = t.get("escalation_target")
                if target and target != "none" and not t.get("escalated"):
                    t["escalated"] = True
                    self._row("escalations/escalations.jsonl", "ACK_ESCALATION", "comms/escalation", "ack_state",
                              now, escalation_target=target, **ids)
            write_json(p, t)

    # -- write_ack.py and receipt_watcher.py ----------------------------------------
    def ack(self, agent: str, envelope_id: str, at: datetime, status: str = "accepted", reason: str = "") -> None:
        write_json(self.root / "agents" / agent / "acks" / f"{envelope_id}.json", {
            "ack_id": self._id("ack"), "envelope_id": envelope_id, "agent": agent, "status": status,
            "reason": reason, "received_ts": iso(at),
        })
        inbox = self.root / "agents" / agent / "inbox" / f"{envelope_id}.json"
        if inbox.exists():
            shutil.copy2(inbox, self.root / "agents" / agent / "received" / inbox.name)
            inbox.unlink()

    def watch(self, now: datetime) -> None:
        for agent in AGENTS:
            for a in sorted((self.root / "agents" / agent / "acks").glob("*.json")):
                ack = json.loads(a.read_text(encoding="utf-8"))
                for p in sorted((self.root / "haiku" / "tracking").glob("*.json")):
                    t = json.loads(p.read_text(encoding="utf-8"))
                    if t.get("envelope_id") == ack["envelope_id"] and t.get("recipient") == agent:
                        t["ack_state"] = "acked" if ack["status"] == "accepted" else "rejected"
                        t["ack_ts"], t["provenance_writer"] = ack["received_ts"], "receipt_watcher"
                        write_json(p, t)
                        append_row(self.root / "ledger" / "acks.jsonl", {
                            "schema_version": "mailbox-event-v1", "component": "receipt_watcher",
                            "event_type": "ACK_RECORDED", "event_family": "comms/ack", "state_class": "ack_state",
                            "ts": iso(now), "envelope_id": ack["envelope_id"], "recipient": agent,
                            "ack_state": t["ack_state"], "ack_id": ack["ack_id"]})
                        break
                a.unlink()

    # -- a tracker of the pre-v3 mailman ----------------------------------------------
    def legacy(self, sender: str, recipient: str, *, at: datetime = T0, ack_status: str = "pending",
               escalated: bool = False, pinged: bool = True, **extra: Any) -> dict[str, Any]:
        env_id, delivery_id = self._id("env"), self._id("del")
        t = {
            "delivery_id": delivery_id, "envelope_id": env_id, "thread_id": "wi-legacy", "work_item_id": "wi-legacy",
            "sender": sender, "recipient": recipient, "delivered_ts": iso(at),
            "ack_due_ts": iso(at + timedelta(minutes=15)), "ack_status": ack_status,
            "ack_ts": iso(at + timedelta(minutes=20)) if ack_status in ("acked", "rejected") else None,
            "last_ping_ts": iso(at + timedelta(minutes=10)) if pinged else None, "reping_count": 2 if pinged else 0,
            "max_repings": 2, "reping_interval_s": 300, "notify_on_delivery": True, "notify_on_ack": True,
            "notify_on_timeout": True, "escalation_target": "aya", "escalated": escalated, "receipt_path": None,
            **extra,
        }
        write_json(self.root / "haiku" / "tracking" / f"{delivery_id}.json", t)
        return t


# -- scenes and readings the tests share -------------------------------------------

def busy(root: Path) -> VnextDir:
    """A day of vNext: sends, a no-ack send, acks, a rejection, repings, a timeout and escalation, a late ack."""
    v = VnextDir(root)
    ok = v.send("aya", "tariq")
    v.send("kimi", "arbiter", ack_required=False)
    no = v.send("aya", "kimi", kind="response", parent_id="env_x")
    slow = v.send("jabari", "heru")
    late = v.send("haiku", "tariq", escalation_target="none")
    v.mailman(T0)
    v.ack("tariq", ok["envelope_id"], T0 + timedelta(minutes=1))
    v.ack("kimi", no["envelope_id"], T0 + timedelta(minutes=1), status="rejected", reason="not mine")
    v.watch(T0 + timedelta(minutes=2))
    for i in range(1, 6):
        v.mailman(T0 + timedelta(minutes=5 * i + 1))
    v.ack("tariq", late["envelope_id"], T0 + timedelta(minutes=40))
    v.watch(T0 + timedelta(minutes=41))
    v.ack("heru", slow["envelope_id"], T0 + timedelta(minutes=42))  # not reconciled yet: the file stays
    v.send("aya", "jabari")  # still pending in intake
    return v


def busy_with_legacy(root: Path) -> VnextDir:
    """``busy``, plus three trackers of the pre-v3 mailman whose envelopes are long gone."""
    v = busy(root)
    v.legacy("jabari", "tariq", ack_status="acked", escalated=True)
    v.legacy("kimi", "arbiter", ack_status="escalated", escalated=True)
    v.legacy("aya", "heru", ack_status="pending", pinged=False)
    return v


def home_with_agents(tmp: Path) -> Dovecote:
    dc = new_home(tmp / "home")
    for a in AGENTS:
        dc.add_entity(EntityAdd(entity_id=a))
    return dc


#: The eight tracker counts of the vNext status view.
STATE_COUNTS = ("total", "pending_ack", "acked", "rejected", "timed_out", "escalated", "legacy_compat_only",
                "schema_drifted")


def vnext_counts_of(dc: Dovecote) -> dict[str, int]:
    """dovecote's own trackers fold, counted the way the vNext status view counts: over the deliveries that
    need an ack (vNext writes a tracker for those only)."""
    rows = [t for t in builtins(dc.trackers(TrackersVerb(limit=10**6)))["trackers"] if t["ack_required"]]
    by_state = Counter(t["ack_state"] for t in rows)
    return {"total": len(rows), "pending_ack": by_state["pending"], "acked": by_state["acked"],
            "rejected": by_state["rejected"], "timed_out": by_state["timed_out"],
            "escalated": sum(t["escalated"] for t in rows),
            "legacy_compat_only": sum(t["legacy_compat_only"] for t in rows),
            "schema_drifted": sum(bool(t["schema_drift"]) for t in rows)}

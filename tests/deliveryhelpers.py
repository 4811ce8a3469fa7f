"""Helpers for the delivery tests: homes with the vNext agents, and envelopes as ``send_mail.py`` writes them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from dovecote.handle.api import Dovecote
from dovecote.verbs import Ack, EntityAdd, Mailman, PresenceBeat, Send
from helpers import new_home, rewrite_roster

#: The vNext mailbox's fixed agents (notes B1).
AGENTS = ("arbiter", "aya", "haiku", "heru", "jabari", "kimi", "tariq")
T0 = datetime(2026, 3, 18, 10, 0, tzinfo=UTC)


def delivery_home(tmp: Path, *, mode: str = "none", command: str | None = None, timeout: int = 15,
                  discovery: str | None = None) -> Dovecote:
    """A home with the seven vNext agents and the given notifier settings."""
    dc = new_home(tmp)
    for a in AGENTS:
        dc.add_entity(EntityAdd(entity_id=a))
    if mode != "none" or command or discovery or timeout != 15:
        dc = rewrite_roster(dc, notifier_mode=mode, notifier_command=command, notifier_timeout=timeout,
                            discovery_command=discovery)
    return dc


def nudging_home(tmp: Path) -> tuple[Dovecote, Path]:
    """A home in agent-turn-nudge whose command appends ``<agent>|<message>`` to the returned file."""
    marker = tmp / "nudged.txt"
    script = tmp / "nudge.sh"
    script.write_text(f'#!/bin/sh\nprintf "%s|%s\\n" "$1" "$2" >> {marker}\n')
    script.chmod(0o755)
    return delivery_home(tmp, mode="agent-turn-nudge", command=f"{script} {{agent}} {{message}}"), marker


def envelope(**fields: Any) -> dict[str, Any]:
    """A vNext task envelope (notes B2) with every required field; ``fields`` override."""
    env: dict[str, Any] = {
        "envelope_id": f"env_{uuid.uuid4().hex}", "type": "task", "from": "aya", "to": "tariq",
        "ts": "2026-03-18T10:00:00+00:00", "work_item_id": "wi-7", "thread_id": "wi-7", "trust_plane": "plane-b",
        "intent_class": "investigate", "risk": "low", "subject": "review the plan", "body": "see attached",
        "priority": "normal", "task_type": "architecture-review", "constraints": [], "acceptance_criteria": [],
        "ack_policy": {"ack_required": True, "ack_timeout_s": 300, "max_repings": 2, "reping_interval_s": 300,
                       "escalation_target": "aya", "notify_on_delivery": True, "notify_on_ack": True,
                       "notify_on_timeout": True},
    }
    env.update(fields)
    return env


def drop(dc: Dovecote, env: dict[str, Any] | bytes, name: str | None = None, folder: Path | None = None) -> Path:
    """Write one envelope file into ``<intake>/pending/`` as ``send_mail.py`` does; return its path."""
    pending = (folder or dc.layout.root / "intake") / "pending"
    pending.mkdir(parents=True, exist_ok=True)
    data = env if isinstance(env, bytes) else orjson.dumps(env, option=orjson.OPT_INDENT_2)
    fname = name or (f"{env['envelope_id']}.json" if isinstance(env, dict) else f"{uuid.uuid4().hex}.json")
    path = pending / fname
    path.write_bytes(data)
    return path


def box_letters(dc: Dovecote, entity_id: str) -> list[dict[str, Any]]:
    """Every letter in an entity's box, as objects: complete lines only (a writer's line still on its way, with
    no newline yet, is not a letter until its append has ended)."""
    path = dc.layout.entity_box(entity_id)
    if not path.exists():
        return []
    data = path.read_bytes()
    return [orjson.loads(line) for line in data[: data.rfind(b"\n") + 1].splitlines() if line.strip()]


def kinds(dc: Dovecote, entity_id: str, kind: str) -> list[dict[str, Any]]:
    return [x for x in box_letters(dc, entity_id) if x.get("kind") == kind]


def intake_files(dc: Dovecote, which: str, folder: Path | None = None) -> list[str]:
    d = (folder or dc.layout.root / "intake") / which
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".json") and not p.name.endswith(".reason.json")) \
        if d.is_dir() else []


def busy_home(tmp: Path) -> Dovecote:
    """Deliveries in every state: acked, rejected, pending, overdue, repinged, timed out and escalated, a
    broadcast, a quarantined envelope, and two agents with a recent heartbeat."""
    dc = delivery_home(tmp)
    now = datetime.now(UTC).replace(microsecond=0)
    hour = now - timedelta(hours=1)

    def task(to: str, wi: str, subject: str, at: datetime, **kw: Any) -> dict[str, Any]:
        sent = dc.send(Send(type="task", sender="aya", recipient=to, work_item_id=wi, subject=subject, **kw), now=at)
        return sent.to_dict()

    review = task("tariq", "wi-7", "review the migration plan", hour)
    done = review["id"]
    dc.ack(Ack(entity_id="tariq", ref=done), actor="tariq", now=hour + timedelta(minutes=2))
    no = task("kimi", "wi-8", "rewrite the notifier", hour)["id"]
    dc.ack(Ack(entity_id="kimi", ref=no, status="rejected", reason="out of scope"), actor="kimi",
           now=hour + timedelta(minutes=3))
    task("heru", "wi-9", "triage the intake quarantine", hour, ack_timeout=600, reping_interval=600)
    task("jabari", "wi-10", "benchmark group commit", now - timedelta(minutes=3), ack_timeout=600)
    dc.send(Send(type="response", sender="tariq", recipient="aya", work_item_id="wi-7", subject="plan reviewed",
                 parent_id=review["envelope_id"], response_type="result", status="completed"),
            now=hour + timedelta(minutes=20))
    dc.send(Send(type="task", sender="arbiter", to_all=True, work_item_id="wi-11", subject="standup notes",
                 ack_required=False), now=now - timedelta(minutes=10))
    for minutes in (12, 24, 36):  # two repings, then the timeout and its escalation
        dc.mailman(Mailman(), now=hour + timedelta(minutes=minutes))
    drop(dc, envelope(to="nobody-here"), name="env_unknown_recipient.json")
    dc.intake(now=now - timedelta(minutes=5))
    for agent in ("aya", "tariq"):
        dc.presence_beat(PresenceBeat(agent=agent, session=f"{agent}-main"), now=now - timedelta(minutes=4))
    return dc

"""Delivery: intake, mailman, ack, trackers, presence, status, and ``send``'s work options.

Each option is a field of its verb (``verbs.delivery``), its flag the field's
name, its help the field's doc. ``send`` is registered by ``cmd_mail`` (one
command with ``draft``); the options only ``send`` has (``--type``,
``--to-all`` and the vNext envelope's fields) are ``send_options`` below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, opened
from dovecote.cli.listing import left_out
from dovecote.cli.options import argument, option
from dovecote.cli.output import show
from dovecote.model.textsafe import one_line
from dovecote.verbs import (
    Ack,
    Intake,
    Mailman,
    Presence,
    PresenceBeat,
    Send,
    Status,
    Trackers,
    decode,
)

presence_app = Typer(help="Agents recently active, or not (assistive).\n\nPresence is assistive, never delivery truth.",
                     invoke_without_command=True)


def send_options(
    recipient: Optional[str] = option(Send, "recipient", "--recipient", "--to"),
    type: str = option(Send, "type", "--type"),
    to_all: bool = option(Send, "to_all", "--to-all"),
    work_item_id: Optional[str] = option(Send, "work_item_id", "--work-item-id"),
    trust_plane: str = option(Send, "trust_plane", "--trust-plane"),
    intent_class: str = option(Send, "intent_class", "--intent-class"),
    risk: str = option(Send, "risk", "--risk"),
    task_type: str = option(Send, "task_type", "--task-type"),
    constraints: Optional[list[str]] = option(Send, "constraints", "--constraint", repeat="repeat"),
    acceptance_criteria: Optional[list[str]] = option(
        Send, "acceptance_criteria", "--acceptance-criterion", repeat="repeat"
    ),
    parent_id: Optional[str] = option(Send, "parent_id", "--parent-id"),
    response_type: Optional[str] = option(Send, "response_type", "--response-type"),
    status: Optional[str] = option(Send, "status", "--status"),
    blocker_flag: bool = option(Send, "blocker_flag", "--blocker-flag"),
    blocker_reason: Optional[str] = option(Send, "blocker_reason", "--blocker-reason"),
    next_action: Optional[str] = option(Send, "next_action", "--next-action"),
    ack_required: bool = option(Send, "ack_required", "--ack-required/--no-ack-required"),
    ack_timeout: int = option(Send, "ack_timeout", "--ack-timeout"),
    max_repings: int = option(Send, "max_repings", "--max-repings"),
    reping_interval: int = option(Send, "reping_interval", "--reping-interval"),
    escalation_target: Optional[str] = option(Send, "escalation_target", "--escalation-target"),
) -> None:
    """The options only ``send`` takes (its verb is ``Send``; ``draft``'s is ``Message``)."""


def send_fields(given: dict[str, Any]) -> dict[str, Any]:
    """``send_options``' values as the verb's fields (repeated options as lists, unset ones left out)."""
    out = dict(given)
    for k in ("constraints", "acceptance_criteria"):
        out[k] = list(out.get(k) or ())
    return {k: v for k, v in out.items() if v is not None}


def _sent_text(r: dict[str, Any]) -> str:
    if "deliveries" not in r:  # one message: its Delivery
        return f"{r['id']}\n" if r["appended"] else f"{r['id']} (already present: same idempotency key)\n"
    head = f"{r['type']} {r['envelope_id'] or ''}".rstrip()
    lines = [f"{d['id']} -> {one_line(d['to'])}{'' if d['appended'] else ' (already present)'}\n"
             for d in r["deliveries"]]
    inferred = r.get("parent_inferred") or {}
    note = f" (parent {r['parent_id']} inferred from {inferred['from']})" if inferred.get("from") else ""
    return f"{head}: {r['count']} deliver{'y' if r['count'] == 1 else 'ies'}{note}\n" + "".join(lines)


def show_sent(result: Any, json: bool) -> None:
    show(result, json=json, text=_sent_text)


def intake_cmd(
    dir: Optional[Path] = option(Intake, "dir", "--dir"),
    json: JsonOpt = False,
) -> None:
    """Deliver every envelope file waiting in an intake.

    Each file in <intake>/pending/ once per recipient; the undeliverable is quarantined once.
    """
    run = opened().intake(decode(Intake, {"dir": None if dir is None else str(dir)}))
    show(run, json=json, text=lambda r: (
        f"intake {r['dir']}: {r['seen']} seen, {r['processed']} delivered, {r['quarantined']} quarantined, "
        f"{r['left_pending']} left pending ({r['letters_appended']} letters appended)\n"
        + "".join(f"quarantined {one_line(q['file'])}: {q['reason']}: {one_line(q['detail'])}\n"
                  for q in r["quarantine"])
    ))


def mailman_cmd(
    loop: bool = option(Mailman, "loop", "--loop/--once"),
    interval: float = option(Mailman, "interval", "--interval"),
    dir: Optional[Path] = option(Mailman, "dir", "--dir"),
    notify_mode: Optional[str] = option(Mailman, "notify_mode", "--notify-mode"),
    json: JsonOpt = False,
) -> None:
    """Intake, then repings, timeouts and escalations.

    Each pending ack past due is repinged (up to the max), timed out, then escalated once.
    """
    v = decode(Mailman, {"loop": loop, "interval": interval, "dir": None if dir is None else str(dir),
                         "notify_mode": notify_mode})
    dc = opened()
    if not loop:
        show(dc.mailman(v)[0], json=json, text=_pass_text)
        return
    try:
        dc.mailman(v, on_pass=lambda p: show(p, json=json, text=_pass_text))
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def _pass_text(p: dict[str, Any]) -> str:
    i, r = p["intake"], p["reconcile"]
    return (f"mailman {p['ts']} ({p['notify_mode']}): intake {i['processed']} delivered, {i['quarantined']} "
            f"quarantined, {i['left_pending']} left pending; acks: {r['repings']} repinged, {r['timeouts']} "
            f"timed out, {r['escalations']} escalated ({r['open_checked']} open)\n")


def ack_cmd(
    entity_id: str = argument(Ack, "entity_id", metavar="ENTITY"),
    ref: str = argument(Ack, "ref", metavar="ID"),
    status: str = option(Ack, "status", "--status"),
    reason: Optional[str] = option(Ack, "reason", "--reason"),
    json: JsonOpt = False,
) -> None:
    """Acknowledge a delivery as its recipient.

    Once; a late ack is recorded late.
    """
    a = opened().ack(decode(Ack, {"entity_id": entity_id, "ref": ref, "status": status, "reason": reason}))
    show(a, json=json, text=lambda r: f"{r['id']}: {r['entity']} {r['status']} {r['delivery_id']}"
         + (" (late: after the timeout)\n" if r["late"] else "\n"))


def _tracker_line(t: dict[str, Any]) -> str:
    extra = f" due {t['ack_due_ts']}" if t["ack_due_ts"] else ""
    esc = " escalated" if t["escalated"] else ""
    closed = f" closed by {t['closed_by']}" if t.get("closed_by") else ""
    return (f"{t['delivery_id']} {t['kind']} {one_line(t['envelope_id'])} {one_line(t['sender'])} -> "
            f"{one_line(t['recipient'])}: {t['ack_state']}, notify {t['live_notify_state']}, repings "
            f"{t['reping_count']}/{t['max_repings']}{esc}{extra}{closed}\n")


def trackers_cmd(
    entity_id: Optional[str] = option(Trackers, "entity_id", "--entity-id"),
    work_item_id: Optional[str] = option(Trackers, "work_item_id", "--work-item-id", "--work-item"),
    thread_id: Optional[str] = option(Trackers, "thread_id", "--thread-id", "--thread"),
    limit: int = option(Trackers, "limit", "--limit"),
    json: JsonOpt = False,
) -> None:
    """The delivery, ack and notify states of each envelope.

    One v3 tracker per (envelope, recipient), with its repings, escalation and dues."""
    got = opened().trackers(decode(Trackers, {"entity_id": entity_id, "work_item_id": work_item_id,
                                              "thread_id": thread_id, "limit": limit}))
    show(got, json=json, text=lambda r: "".join(_tracker_line(t) for t in r["trackers"]) + (
        left_out(r["total"] - r["returned"], ("--limit", str(r["total"]))) if r["truncated"] else "") + (
        f"{r['returned']} of {r['total']} trackers\n"))


def _presence_text(r: dict[str, Any]) -> str:
    lines = [f"{one_line(a['agent'])}: {'recently active' if a['recently_active'] else 'no recent session'}"
             + (f" (last seen {a['last_seen']} by {a['source']})" if a["last_seen"] else "") + "\n"
             for a in r["agents"]]
    err = r["discovery"]["error"]
    return "".join(lines) + (f"discovery: {one_line(err)}\n" if err else "")


@presence_app.callback()
def presence_default(
    ctx: typer.Context,
    active_minutes: int = option(Presence, "active_minutes", "--active-minutes"),
    json: JsonOpt = False,
) -> None:
    """Agents recently active (a heartbeat or a discovered session within N minutes), or not; never "online"."""
    if ctx.invoked_subcommand is None:
        presence_list(active_minutes, json)


@presence_app.command("list")
def presence_list(
    active_minutes: int = option(Presence, "active_minutes", "--active-minutes"),
    json: JsonOpt = False,
) -> None:
    """Each known agent: recently active or not.

    Reads only."""
    show(opened().presence(decode(Presence, {"active_minutes": active_minutes})), json=json, text=_presence_text)


@presence_app.command("beat")
def presence_beat(
    agent: str = option(PresenceBeat, "agent", "--agent"),
    session: Optional[str] = option(PresenceBeat, "session", "--session"),
    json: JsonOpt = False,
) -> None:
    """Record a heartbeat for an agent's session.

    Heartbeats are kept in a separate, assistive ledger."""
    show(opened().presence_beat(decode(PresenceBeat, {"agent": agent, "session": session})), json=json,
         text=lambda r: f"beat {one_line(r['agent'])} at {r['ts']}\n")


def _status_text(r: dict[str, Any]) -> str:
    i, c = r["intake"], r["tracker_counts"]
    many = len(i["folders"]) + len(i["unreachable"]) > 1
    where = f"in {len(i['folders'])} folders" if many else one_line(i["dir"])
    out = [
        f"intake {where}: {i['pending']} pending, {i['processed']} processed, {i['quarantined']} quarantined "
        f"(of {i['entered']} entered)\n",
        *(f"  {one_line(f['dir'])}: {f['pending']} pending, {f['processed']} processed, {f['quarantined']} "
          "quarantined\n" for f in (i["folders"] if many else ())),
        *(f"  unreachable: {one_line(u['dir'])}: {one_line(u['error'])}\n" for u in i["unreachable"]),
        "trackers: " + ", ".join(f"{k} {v}" for k, v in c.items()) + "\n",
        "ack states: " + ", ".join(f"{k} {v}" for k, v in r["ack_state_counts"].items()) + "\n",
        "notify states: " + ", ".join(f"{k} {v}" for k, v in r["live_notify_state_counts"].items()) + "\n",
        f"overdue acks: {r['overdue_total']}\n",
        *(_tracker_line(t) for t in r["overdue_acks"]),
        f"escalations: {len(r['escalations'])} shown\n",
        *(_tracker_line(t) for t in r["escalations"]),
        "recently active: " + (", ".join(one_line(a["agent"]) for a in r["recently_active_agents"]) or "none")
        + "\n",
    ]
    out += [f"unreachable: {one_line(u['box'])}: {one_line(u['error'])}\n" for u in r["unreachable"]]
    if (found := r.get("search")) is not None:
        out.append(f"ledger search: {found['total_matches']} letter(s) match ("
                   + ", ".join(f"{one_line(k)} {v}" for k, v in found["source_counts"].items()) + ")\n")
    return "".join(out)


def status_cmd(
    active_minutes: int = option(Status, "active_minutes", "--active-minutes"),
    work_item_id: Optional[str] = option(Status, "work_item_id", "--work-item-id", "--work-item"),
    thread_id: Optional[str] = option(Status, "thread_id", "--thread-id", "--thread"),
    limit: int = option(Status, "limit", "--limit"),
    json: JsonOpt = False,
) -> None:
    """The delivery view: counts, overdue acks, escalations.

    Intake, tracker and state counts, and the recently active agents.

    It never writes, and runs the discovery command at most once.
    """
    show(opened().status(decode(Status, {"active_minutes": active_minutes, "work_item_id": work_item_id,
                                         "thread_id": thread_id, "limit": limit})), json=json, text=_status_text)


def register(app: Typer) -> None:
    app.command("intake")(intake_cmd)
    app.command("mailman")(mailman_cmd)
    app.command("ack")(ack_cmd)
    app.command("trackers")(trackers_cmd)
    app.add_typer(presence_app, name="presence")
    app.command("status")(status_cmd)

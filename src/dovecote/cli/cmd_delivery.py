"""Delivery: intake, mailman, ack, trackers, presence, status, and ``send``'s work options.

Each option is a field of its verb (``verbs.delivery``), its flag the field's
name, its help the field's doc. ``send`` is registered by ``cmd_mail`` (one
command with ``draft``); the options only ``send`` has (``--type``,
``--to-all`` and the vNext envelope's fields) are ``send_options`` below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, one_of, opened, repeated
from dovecote.cli.listing import left_out
from dovecote.cli.output import show
from dovecote.model.textsafe import one_line
from dovecote.verbs import (
    ACK_TIMEOUT_S,
    MAX_REPINGS,
    REPING_INTERVAL_S,
    Ack,
    Intake,
    Mailman,
    Presence,
    PresenceBeat,
    Send,
    Status,
    Trackers,
    decode,
    doc,
)

presence_app = Typer(help="Agents recently active, or not (assistive; never delivery truth).",
                     invoke_without_command=True)


def send_options(
    recipient: Annotated[Optional[str], typer.Option("--recipient", "--to", help=doc(Send, "recipient"))] = None,
    type: Annotated[str, typer.Option("--type", metavar=one_of(Send, "type"), help=doc(Send, "type"))] = "message",
    to_all: Annotated[bool, typer.Option("--to-all", help=doc(Send, "to_all"))] = False,
    work_item_id: Annotated[Optional[str], typer.Option("--work-item-id", help=doc(Send, "work_item_id"))] = None,
    trust_plane: Annotated[
        str, typer.Option("--trust-plane", metavar=one_of(Send, "trust_plane"), help=doc(Send, "trust_plane"))
    ] = "plane-b",
    intent_class: Annotated[
        str, typer.Option("--intent-class", metavar=one_of(Send, "intent_class"), help=doc(Send, "intent_class"))
    ] = "investigate",
    risk: Annotated[str, typer.Option("--risk", metavar=one_of(Send, "risk"), help=doc(Send, "risk"))] = "low",
    task_type: Annotated[
        str, typer.Option("--task-type", metavar=one_of(Send, "task_type"), help=doc(Send, "task_type"))
    ] = "general",
    constraints: Annotated[
        Optional[list[str]], typer.Option("--constraint", help=repeated(doc(Send, "constraints"), "repeat"))
    ] = None,
    acceptance_criteria: Annotated[
        Optional[list[str]],
        typer.Option("--acceptance-criterion", help=repeated(doc(Send, "acceptance_criteria"), "repeat")),
    ] = None,
    parent_id: Annotated[Optional[str], typer.Option("--parent-id", help=doc(Send, "parent_id"))] = None,
    response_type: Annotated[
        Optional[str],
        typer.Option("--response-type", metavar=one_of(Send, "response_type"), help=doc(Send, "response_type")),
    ] = None,
    status: Annotated[
        Optional[str], typer.Option("--status", metavar=one_of(Send, "status"), help=doc(Send, "status"))
    ] = None,
    blocker_flag: Annotated[bool, typer.Option("--blocker-flag", help=doc(Send, "blocker_flag"))] = False,
    blocker_reason: Annotated[Optional[str], typer.Option("--blocker-reason", help=doc(Send, "blocker_reason"))] = None,
    next_action: Annotated[Optional[str], typer.Option("--next-action", help=doc(Send, "next_action"))] = None,
    ack_required: Annotated[
        bool, typer.Option("--ack-required/--no-ack-required", help=doc(Send, "ack_required"))
    ] = True,
    ack_timeout: Annotated[int, typer.Option("--ack-timeout", help=doc(Send, "ack_timeout"))] = ACK_TIMEOUT_S,
    max_repings: Annotated[int, typer.Option("--max-repings", help=doc(Send, "max_repings"))] = MAX_REPINGS,
    reping_interval: Annotated[
        int, typer.Option("--reping-interval", help=doc(Send, "reping_interval"))
    ] = REPING_INTERVAL_S,
    escalation_target: Annotated[
        Optional[str], typer.Option("--escalation-target", help=doc(Send, "escalation_target"))
    ] = None,
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
    dir: Annotated[Optional[Path], typer.Option("--dir", help=doc(Intake, "dir"))] = None,
    json: JsonOpt = False,
) -> None:
    """Deliver every envelope file in <intake>/pending/ once per recipient; quarantine the undeliverable once.

    Example: dovecote intake --dir ~/mailbox/intake
    """
    run = opened().intake(decode(Intake, {"dir": None if dir is None else str(dir)}))
    show(run, json=json, text=lambda r: (
        f"intake {r['dir']}: {r['seen']} seen, {r['processed']} delivered, {r['quarantined']} quarantined, "
        f"{r['left_pending']} left pending ({r['letters_appended']} letters appended)\n"
        + "".join(f"quarantined {one_line(q['file'])}: {q['reason']}: {one_line(q['detail'])}\n"
                  for q in r["quarantine"])
    ))


def mailman_cmd(
    loop: Annotated[bool, typer.Option("--loop/--once", help=doc(Mailman, "loop"))] = False,
    interval: Annotated[float, typer.Option("--interval", help=doc(Mailman, "interval"))] = 5.0,
    dir: Annotated[Optional[Path], typer.Option("--dir", help=doc(Mailman, "dir"))] = None,
    notify_mode: Annotated[
        Optional[str],
        typer.Option("--notify-mode", metavar=one_of(Mailman, "notify_mode"), help=doc(Mailman, "notify_mode")),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Intake, then each pending ack past due: reping (up to the max), timeout, one escalation.

    Example: dovecote mailman --loop --interval 5
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
    entity_id: Annotated[str, typer.Argument(metavar="ENTITY", help=doc(Ack, "entity_id"))],
    ref: Annotated[str, typer.Argument(metavar="ID", help=doc(Ack, "ref"))],
    status: Annotated[str, typer.Option("--status", metavar=one_of(Ack, "status"), help=doc(Ack, "status"))] = (
        "accepted"
    ),
    reason: Annotated[Optional[str], typer.Option("--reason", help=doc(Ack, "reason"))] = None,
    json: JsonOpt = False,
) -> None:
    """Acknowledge a delivery as its recipient (once; a late ack is recorded late).

    Example: dovecote ack tariq env_01... --status accepted
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
    entity_id: Annotated[Optional[str], typer.Option("--entity-id", help=doc(Trackers, "entity_id"))] = None,
    work_item_id: Annotated[
        Optional[str], typer.Option("--work-item-id", "--work-item", help=doc(Trackers, "work_item_id"))
    ] = None,
    thread_id: Annotated[
        Optional[str], typer.Option("--thread-id", "--thread", help=doc(Trackers, "thread_id"))
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help=doc(Trackers, "limit"))] = 1000,
    json: JsonOpt = False,
) -> None:
    """The v3 tracker of each (envelope, recipient): delivery, ack and notify states, repings, escalation, dues."""
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
    active_minutes: Annotated[int, typer.Option("--active-minutes", help=doc(Presence, "active_minutes"))] = 120,
    json: JsonOpt = False,
) -> None:
    """Agents recently active (a heartbeat or a discovered session within N minutes), or not; never "online"."""
    if ctx.invoked_subcommand is None:
        presence_list(active_minutes, json)


@presence_app.command("list")
def presence_list(
    active_minutes: Annotated[int, typer.Option("--active-minutes", help=doc(Presence, "active_minutes"))] = 120,
    json: JsonOpt = False,
) -> None:
    """Each known agent: recently active, or no recent session (reads only)."""
    show(opened().presence(decode(Presence, {"active_minutes": active_minutes})), json=json, text=_presence_text)


@presence_app.command("beat")
def presence_beat(
    agent: Annotated[str, typer.Option("--agent", help=doc(PresenceBeat, "agent"))],
    session: Annotated[Optional[str], typer.Option("--session", help=doc(PresenceBeat, "session"))] = None,
    json: JsonOpt = False,
) -> None:
    """Record a heartbeat for an agent's session (a separate, assistive ledger)."""
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
    active_minutes: Annotated[int, typer.Option("--active-minutes", help=doc(Status, "active_minutes"))] = 120,
    work_item_id: Annotated[
        Optional[str], typer.Option("--work-item-id", "--work-item", help=doc(Status, "work_item_id"))
    ] = None,
    thread_id: Annotated[Optional[str], typer.Option("--thread-id", "--thread", help=doc(Status, "thread_id"))] = None,
    limit: Annotated[int, typer.Option("--limit", help=doc(Status, "limit"))] = 10,
    json: JsonOpt = False,
) -> None:
    """The delivery view: intake, tracker and state counts, overdue acks, escalations, recently active agents.

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

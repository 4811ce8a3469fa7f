"""``inbox``: the audit of one entity's mailbox, and its three renderings.

The view (counts, flags, open items by priority then age) is computed by
``derive.inbox.inbox_view`` at the current tic and time; this module supplies
the clocks, counts the loose files a person dropped into the folder view, and
renders the view as JSON, the skill's compact text, or the short injection
block a session-start hook puts into an agent's prompt. Every face calls these
functions, so the CLI, MCP and HTTP print the same words. The text renderings
show what letters say through ``textsafe``: each item is exactly one line,
whatever its subject or sender holds; the JSON stays exact.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dovecote.derive.inbox import FLAG_OVERDUE, FLAG_STALE, Clock, inbox_view
from dovecote.errors import Refusal
from dovecote.names import entity
from dovecote.ops.books import book_for
from dovecote.ops.tics import current_tic, tic_dir
from dovecote.ops.viewnames import loose_files, view_dir
from dovecote.store import files_of
from dovecote.textsafe import one_line, subject_line

if TYPE_CHECKING:
    from dovecote.api import Dovecote

SCHEMA = "dovecote-inbox-v1"
DIRECTIONS = ("inbound", "outbound", "both")


def default_entity(dc: Dovecote) -> str:
    env = os.environ.get("DOVECOTE_ENTITY")
    if env:
        return env
    if len(dc.roster.entities) == 1:
        return dc.roster.entities[0].id
    raise Refusal("missing_field", "name an entity (or set $DOVECOTE_ENTITY)")


def dependencies(dc: Dovecote, entity_id: str) -> list[str]:
    """Every file an inbox reading depends on (for the CLI's cached renderings)."""
    deps = [
        str(dc.layout.config),
        str(files_of(dc.store).path(entity(entity_id))),
        str(view_dir(dc, entity_id) / "inbound"),
    ]
    folder = tic_dir(dc)
    if folder is not None:
        deps.append(str(folder))
        newest = sorted(folder.glob("*.jsonl"))
        if newest:
            deps.append(str(newest[-1]))
    return deps


def read_inbox(
    dc: Dovecote,
    entity_id: str | None = None,
    *,
    current: int | None = None,
    now: datetime | None = None,
    direction: str = "inbound",
    include_terminal: bool = False,
) -> tuple[dict[str, Any], datetime | None]:
    """The audit of one entity's inbox (see ``inbox_view``) as a JSON-ready dict,
    and the moment that answer would change with no new letter."""
    if direction not in DIRECTIONS:
        raise Refusal("invalid_field", f"direction must be one of {', '.join(DIRECTIONS)}")
    who = entity_id or default_entity(dc)
    book = book_for(dc, who)
    tic, source = current_tic(dc, current)
    clock = Clock(tic, now or datetime.now(UTC))
    limits = dc.roster.limits
    view, until = inbox_view(
        book,
        clock,
        limits=limits,
        loose=len(loose_files(dc, who)),
        include_terminal=include_terminal,
    )
    out: dict[str, Any] = {"schema": SCHEMA, "entity": who, "clock": {"tic": tic, "source": source}}
    out["counts"] = view["counts"]
    out["flags"] = view["flags"]
    out["direction"] = direction
    if direction in ("inbound", "both"):
        out["items"] = view["items"]
    if direction in ("outbound", "both"):
        out["outbound"] = view["outbound"]
    return out, until


def _age(item: dict[str, Any]) -> str:
    if item["age_tics"] is not None:
        return f"tic {item['source_tic']}, {item['age_tics']} tics old"
    if item["age_hours"] is not None:
        return f"{item['age_hours']}h old"
    return "age unknown"


def render_text(view: dict[str, Any], *, detailed: bool = False, status_only: bool = False) -> str:
    """The skill's compact layout (counts, then flagged items); ``detailed`` lists every item."""
    c = view["counts"]
    tic = view["clock"]["tic"]
    head = f"tic {tic}" if tic is not None else "no tic (ages in hours)"
    items = view.get("items", [])
    stale = sum(1 for i in items if i["state"] == "WAIT" and FLAG_STALE in i["flags"])
    overdue = sum(1 for i in items if i["state"] == "WAIT" and FLAG_OVERDUE in i["flags"])
    lines = [
        f"INBOX: {one_line(view['entity'])} — {head}",
        f"  Inbound:    {c['inbound']} ({stale} stale, {overdue} overdue)",
        f"  Processing: {c['processing']}",
        f"  Deferred:   {c['deferred']}",
        f"  Outbound:   {c['outbound']} drafts",
        f"  Archive:    {c['archive']}",
        f"  Loose:      {c['loose']} unorganized files",
    ]
    if status_only:
        return "\n".join(lines) + "\n"
    body: list[str] = []
    for i in items:
        label = f"{i['state']}_{i['id']}"
        what = f'"{subject_line(i["subject"])}" from {one_line(i["sender"]) or "?"}'
        if detailed:
            extra = [_age(i)]
            if i["expires_at_tic"] is not None:
                extra.append(f"expires tic {i['expires_at_tic']}")
            if i["reminder_tic"] is not None:
                extra.append(f"reminder tic {i['reminder_tic']}")
            if i["due_tic"] is not None or i["due_time"] is not None:
                extra.append(f"due {i['due_tic'] if i['due_tic'] is not None else i['due_time']}")
            flags = "".join(f" [{f}]" for f in i["flags"])
            body.append(f"  {label} [{i['priority'].upper()}] {what} — {'; '.join(extra)}{flags}")
            continue
        for f in i["flags"]:
            if f == FLAG_OVERDUE:
                body.append(f"  [OVERDUE] {label} — {what} (reminder was tic {i['reminder_tic']})")
            elif f == FLAG_STALE:
                body.append(f"  [STALE] {label} — {what} ({_age(i)})")
            else:
                body.append(f"  [{f}] {label} — {what} (expires tic {i['expires_at_tic']})")
    for d in view.get("outbound", []):
        body.append(f'  EMIT_{d["id"]} — "{subject_line(d["subject"])}" to {one_line(d["to"]) or "?"}')
    quiet = sum(1 for i in items if not i["flags"])
    if quiet and not detailed:  # the compact layout lists flagged items only: say where the rest are
        who = view["entity"]
        body.append(f"  ({quiet} more without flags: `dovecote inbox {one_line(who)} --detailed` lists their ids, "
                    f"`dovecote show {one_line(who)} ID` reads one)")
    if body:
        lines.append("")
        lines.extend(body)
    return "\n".join(lines) + "\n"


def render_injection(view: dict[str, Any]) -> str:
    """The block a session-start hook injects: one header line, then what needs eyes."""
    c = view["counts"]
    who = one_line(view["entity"])
    if not (c["inbound"] or c["processing"] or c["deferred"]):
        return f"[INBOX: {who}] Empty.\n"
    lines = [f"[INBOX: {who}] {c['inbound']} new, {c['processing']} active, {c['deferred']} deferred."]
    tics_known = view["clock"]["tic"] is not None
    for i in view.get("items", []):
        if i["state"] == "WAIT" and i["priority"] in ("high", "urgent"):
            when = f", tic {i['source_tic']}" if i["source_tic"] is not None else ""
            sender = one_line(i["sender"]) or "?"
            lines.append(f"  - [{i['priority'].upper()}] {subject_line(i['subject'])} (from: {sender}{when})")
    for i in view.get("items", []):
        if i["state"] == "ACTIVE":
            when = f" (tic {i['entered_tic']})" if i["entered_tic"] is not None else ""
            lines.append(f"  - [ACTIVE] {subject_line(i['subject'])}{when}")
    if tics_known:
        for i in view.get("items", []):
            if FLAG_STALE in i["flags"]:
                lines.append(
                    f"  - [ATTENTION] {subject_line(i['subject'])} — stale {i['in_state_tics']} tics in {i['state']}"
                )
    return "\n".join(lines) + "\n"

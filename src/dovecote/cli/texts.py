"""Plain-text renderings for people: pure functions of the values the library returns.

Each takes the JSON-ready value a command prints with ``--json`` (a result's
``to_dict()``), so the text never shows what the JSON does not carry. Whatever
comes from a letter or a person's tree is shown through ``textsafe``: one line
each, whatever its subject, sender or path holds; the JSON stays exact.
The inbox's two renderings are what session hooks put into an agent's prompt,
so every face that prints an inbox uses these.
"""

from __future__ import annotations

from typing import Any

from dovecote.cli.listing import left_out
from dovecote.cli.searchtext import search_text as search_text  # re-exported: the faces' one rendering
from dovecote.handle.api import FLAG_OVERDUE, FLAG_STALE
from dovecote.handle.api import inbox_injection as inbox_injection  # written once, in ops.injection
from dovecote.model.textsafe import one_line, plural, subject_line


def _age(item: dict[str, Any]) -> str:
    if item["age_tics"] is not None:
        return f"tic {item['source_tic']}, {item['age_tics']} tics old"
    if item["age_hours"] is not None:
        return f"{item['age_hours']}h old"
    return "age unknown"


def inbox_text(
    view: dict[str, Any], *, detailed: bool = False, status_only: bool = False, limit: int | None = None
) -> str:
    """The skill's compact layout (counts, then flagged items); ``detailed`` lists every item
    (at most ``limit`` of them, None: all, as ``cli.listing`` shows a long listing)."""
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
    if detailed and limit is not None and len(items) > limit:
        body_end = left_out(len(items) - limit).rstrip("\n")
        items = items[:limit]
    else:
        body_end = ""
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
    if body_end:
        body.append(body_end)
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


def show_text(d: dict[str, Any]) -> str:
    """For people: one line a field (newlines and controls in untrusted text are escaped)."""

    def line(v: object) -> str:
        return "-" if v is None else one_line(str(v))

    row, env = d["item"], d["envelope"]
    out = [
        f"{row['id']}  {row['state']}{'  [' + ', '.join(row['flags']) + ']' if row['flags'] else ''}",
        *(f"  {k + ':':<18} {line(env[k])}" for k in env if k != "artifacts" and env[k] is not None),
        f"  {'seen:':<18} {'yes' if row['seen'] else 'no'}",
    ]
    for a in env["artifacts"]:
        out.append(f"  {'artifact:':<18} {line(a)}")
    out.append("body" + (f" (from the artifact store, {d['body_ref']})" if d["body_ref"] else "") + ":")
    out.extend(f"  {line(text)}" for text in (d["body"].splitlines() or [""]))
    out.append(f"thread: {len(d['thread'])}")
    for t in d["thread"]:
        who = t.get("sender") or f"to {t.get('to')}"
        out.append(f"  {line(t['id'])} {t['relation']} {t['direction']} {line(t['created_at'])} {line(who)}: "
                   f"{line(t['subject'])}")
    out.append(f"history: {len(d['history'])}")
    for h in d["history"]:
        extra = " ".join(
            f"{k}={line(h[k])}" for k in ("tic", "until_tic", "until", "reason", "result_ref") if h[k] is not None
        )
        mark = "" if h["applied"] else " (conflict, not applied)"
        extra = f" {extra}" if extra else ""
        out.append(f"  {line(h['ts'])} {line(h['agent'])} {line(h['kind'])} {h['id']}{extra}{mark}")
    return "\n".join(out) + "\n"

def view_text(result: dict[str, Any]) -> str:
    """The summary every face prints; paths and details come from a person's tree, so each is one escaped line."""
    lines = []
    for e in result["entities"]:
        lines.append(
            f"{one_line(e['entity'])}: {e['written']} written, {e['moved']} moved, {e['removed']} removed,"
            f" {e['unchanged']} unchanged -> {one_line(e['path'])}"
        )
        if e["cleaned"]:
            lines.append(f"  cleaned {e['cleaned']} temp name(s) a killed run left")
        for a in e["adopted"]:
            lines.append(f"  adopted {one_line(a['path'])}: {a['verb']} ({a['from']} -> {a['to']})")
        for r in e["refused"]:
            lines.append(
                f"  refused {one_line(r['path'])}: {r['reason']}: {one_line(r['detail'])};"
                f" put back at {one_line(r['put_back'])}"
            )
        for k in e["kept"]:
            lines.append(f"  kept {one_line(k['path'])}: {k['reason']}: {one_line(k['detail'])}")
        for n in e["notes"]:
            lines.append(f"  note {one_line(n['path'])}: {n['reason']}: {one_line(n['detail'])}")
        for u in e["unknown"]:
            lines.append(f"  unknown {one_line(u['path'])} (no such item in this box)")
    if not result["entities"]:
        lines.append("no entities in the roster")
    return "\n".join(lines) + "\n"

def import_text(result: dict[str, Any]) -> str:
    """The summary every face prints."""
    lines = []
    for a in result["entities"].values():
        lines.append(
            f"{a['entity']}: {plural(a['letters_added'], 'letter')} added, {plural(a['links_added'], 'link')} added, "
            f"{a['already_present']} already present, {len(a['adopted_as_wait'])} adopted as WAIT, "
            f"{len(a['refused'])} refused"
        )
        lines += [f"  refused {one_line(r['path'])}: {r['reason']}: {one_line(r['detail'])}" for r in a["refused"]]
        lines += [f"  as WAIT {one_line(w['path'])}: {one_line(w['detail'])}" for w in a["adopted_as_wait"]]
        lines += [f"  note {one_line(n['path'])}: {n['reason']}: {one_line(n['detail'])}" for n in a["notes"]]
        lines += [f"  skipped {one_line(s['path'])}: {one_line(s['detail'])}" for s in a["skipped"]]
    lines += [
        f"skipped {one_line(s['name'])}: {s['reason']}: {one_line(s['detail'])}" for s in result["skipped_entities"]
    ]
    return "\n".join(lines) + "\n"

def stale_text(result: dict[str, Any]) -> str:
    """The plain summary every face prints: the clock, then one line per entity with debt."""
    tic = result["tic"]
    head = f"tic {tic} ({result['clock_source']})" if tic is not None else "no tic (ages in hours)"
    lines = [
        f"STALE-CHECK — {head}: {result['total_stale']} stale item(s) in "
        f"{result['entities_with_debt']} of {result['entities_checked']} inbox(es)"
    ]
    for d in result["details"]:
        old = d["oldest"]
        age = f"{old['in_state_tics']} tics" if "in_state_tics" in old else f"{old['in_state_hours']}h"
        states = ", ".join(f"{n} {s}" for s, n in d["by_state"].items())
        lines.append(f"  {one_line(d['entity'])}: {d['count']} stale ({states}); oldest {old['id']} "
                     f"\"{subject_line(old['subject'])}\" {age} in {old['state']}")
        sig = d.get("signal")
        if sig is not None:
            lines.append(f"    signal {sig['id']} {'emitted' if sig['emitted'] else 'already sent today'}")
    for box in result["unreachable"]:
        lines.append(f"  {one_line(box)}: unreachable (not counted)")
    if any(d.get("signal") is not None for d in result["details"]):
        lines.append(f"signals emitted: {result['signals_emitted']}")
    return "\n".join(lines) + "\n"

def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def organize_text(result: dict[str, Any]) -> str:
    """The plain summary every face prints: each finding and its proposed action."""
    tic = result["tic"]
    lines = [f"ORGANIZE: {one_line(result['entity'])} — " + (f"tic {tic}" if tic is not None else "no tic")]
    lines.append(f"  Loose files:       {len(result['loose'])}")
    for f in result["loose"]:
        lines.append(f"    {one_line(f['path'])} ({f['kind']}, {f['size']} bytes) -> {one_line(f['proposed'])}")
    lines.append(f"  Expired items:     {len(result['expired'])}")
    for e in result["expired"]:
        subject = subject_line(e["subject"])
        lines.append(f"    {e['id']} \"{subject}\" expired at tic {e['expires_at_tic']}: {e['proposed']}")
    lines.append(f"  Duplicate threads: {len(result['duplicate_threads'])}")
    for t in result["duplicate_threads"]:
        thread = one_line(t["thread_id"])
        lines.append(f"    {thread}: {t['count']} open items ({', '.join(t['ids'])}): {t['proposed']}")
    lines.append(f"  Large files:       {len(result['large_files'])}")
    for big in result["large_files"]:
        what = one_line(big["path"]) if big["where"] == "loose" else f"{one_line(big['name'])} of item {big['item']}"
        lines.append(f"    {what} ({_mib(big['size'])}): {big['proposed']}")
    if result["applied"]:
        lines.append(f"  Grouped:           {len(result['applied'])}")
        lines.extend(f"    {one_line(a['from'])} -> {one_line(a['to'])}" for a in result["applied"])
    return "\n".join(lines) + "\n"

"""Case intelligence on the command line: ``receipt``, ``cases``, ``case``, ``sentinels``, ``claims``,
``monitor add`` and ``monitors``.

Each option is a field of its verb (``dovecote.verbs.cases``), and its help is that field's doc.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, LimitOpt, NoLimitOpt, opened
from dovecote.cli.listing import listing, rows_shown
from dovecote.cli.options import argument, option
from dovecote.cli.output import show
from dovecote.verbs import Case, Cases, Claims, MonitorAdd, Monitors, Receipt, Sentinels


def receipt_cmd(
    ctx: typer.Context,
    answers: Optional[list[str]] = option(Receipt, "answers", "--answers", metavar="ID",
                                          repeat="repeat, or comma-separated", optional=True),
    disposition: Optional[str] = option(Receipt, "disposition", "--disposition", optional=True),
    fingerprint: Optional[str] = option(Receipt, "fingerprint", "--fingerprint"),
    case_id: Optional[str] = option(Receipt, "case_id", "--case-id"),
    ref: Optional[str] = option(Receipt, "ref", "--ref"),
    sentinel_probe: Optional[str] = option(Receipt, "sentinel_probe", "--sentinel-probe"),
    sentinel_expect: Optional[str] = option(Receipt, "sentinel_expect", "--sentinel-expect"),
    json: JsonOpt = False,
) -> None:
    """File a triage receipt closing the letters it answers.

    It is filed into the case's box.

    A sentinel probe is run by `dovecote sentinels`; with --sentinel-expect absent (the default)
    it is green when it prints nothing, so give it a command that prints what it finds.

    --answers and --disposition are required (refused missing_field without them), except before a
    subcommand: `dovecote receipt import M` imports a mission's receipt candidate.
    """
    from dovecote.verbs import decode

    if ctx.invoked_subcommand is not None:
        return
    fields: dict[str, Any] = {
        "answers": [a for chunk in answers or () for a in chunk.replace(",", " ").split()] or None,
        "disposition": disposition, "fingerprint": fingerprint, "case_id": case_id, "ref": ref,
        "sentinel_probe": sentinel_probe, "sentinel_expect": sentinel_expect,
    }
    v = decode(Receipt, {k: val for k, val in fields.items() if val is not None})
    show(opened().receipt(v), json=json, text=_receipt_text)


def _receipt_text(d: dict[str, Any]) -> str:
    what = "filed" if d["appended"] else "already present:"
    return f"{what} {d['id']} in {d['box']} (answers {len(d['answers'])}; case {d['fingerprint'] or 'none'})\n"


def cases_cmd(
    box: Optional[str] = option(Cases, "box", "--box"),
    rows: LimitOpt = None,
    every: NoLimitOpt = False,
    json: JsonOpt = False,
) -> None:
    """Every case: its witnesses, boxes, receipt and label.

    Each with its first and last seen, and its one-line case receipt."""
    show(opened().cases(Cases(box=box)), json=json, text=lambda d: _cases_text(d, rows_shown(rows, every)))


def _cases_text(d: dict[str, Any], limit: int | None) -> str:
    lines = [listing(d["cases"], lambda c: f"{c['line']}  [{c['label']}]\n", limit).rstrip("\n")]
    lines.append(f"{d['count']} cases · {d['kindless']} kindless letters")
    if d["unreachable"]:
        lines.append("unreachable: " + ", ".join(d["unreachable"]))
    return "\n".join(line for line in lines if line) + "\n"


def case_cmd(
    fingerprint: str = argument(Case, "fingerprint"),
    json: JsonOpt = False,
) -> None:
    """One case whole, with its receipt and regressions.

    Its witnesses, boxes, receipt, sentinel and regressions."""
    show(opened().case(Case(fingerprint=fingerprint)), json=json, text=_case_text)


def _case_text(c: dict[str, Any]) -> str:
    lines = [c["line"], f"label: {c['label']}", f"first seen {c['first_seen']} · last seen {c['last_seen']}"]
    lines.append("witnesses: " + (", ".join(c["witness_ids"]) or "none"))
    lines.append("boxes: " + (", ".join(c["boxes"]) or "none (spool only)"))
    if c["escalation"]:
        lines.append(f"escalation: {c['escalation']}")
    if c["regressions"]:
        lines.append("regressions: " + ", ".join(c["regressions"]))
    return "\n".join(lines) + "\n"


def sentinels_cmd(
    timeout: float = option(Sentinels, "timeout", "--timeout"),
    json: JsonOpt = False,
) -> None:
    """Run the probe of every fixed receipt (read-only).

    No probe runs in a shell; a red one mints one regression letter."""
    show(opened().sentinels(Sentinels(timeout=timeout)), json=json, text=_sentinels_text)


def _sentinels_text(d: dict[str, Any]) -> str:
    rows = [f"  {s['state']:<11} {s['fingerprint']}  {s['probe']}  ({s['why']})" for s in d["sentinels"]]
    return "\n".join([d["line"], *rows]) + "\n"


def claims_cmd(
    write_labels: bool = option(Claims, "write_labels", "--write-labels"),
    json: JsonOpt = False,
) -> None:
    """Claim vs measure per fingerprint family (counts).

    Claimed right, claimed wrong and unresolved, with each of its claims."""
    show(opened().claims(Claims(write_labels=write_labels)), json=json, text=_claims_text)


def _claims_text(d: dict[str, Any]) -> str:
    lines = [
        f"{fp}: {r['claimed_right']} of {r['claims']} claimed right, {r['claimed_wrong']} of {r['claims']} "
        f"claimed wrong, {r['unresolved']} of {r['claims']} unresolved"
        for fp, r in d["by_fingerprint"].items()
    ]
    t = d["totals"]
    lines.append(
        f"{t['claims']} claims: {t['claimed_right']} right, {t['claimed_wrong']} wrong, {t['unresolved']} unresolved"
    )
    if d["labels_appended"]:
        lines.append(f"{d['labels_appended']} rows appended to {d['labels_path']}")
    return "\n".join(lines) + "\n"


def monitor_add_cmd(
    name: str = argument(MonitorAdd, "name"),
    expect: str = option(MonitorAdd, "expect", "--expect"),
    every: str = option(MonitorAdd, "every", "--every"),
    grace: Optional[str] = option(MonitorAdd, "grace", "--grace"),
    paused: bool = option(MonitorAdd, "paused", "--paused"),
    json: JsonOpt = False,
) -> None:
    """Add a dead-man's switch for letters matching --expect.

    A letter must match at least every period, else the monitor goes down.
    """
    v = MonitorAdd(name=name, expect=expect, every=every, grace=grace, paused=paused)
    show(opened().monitor_add(v), json=json, text=lambda d: f"monitor {d['name']}: {d['id']}\n")


def monitors_cmd(json: JsonOpt = False) -> None:
    """Every monitor and its state: new, up, late or down.

    A monitor may also be paused; a distributing sweep mints a down letter."""
    show(opened().monitors(Monitors()), json=json, text=_monitors_text)


def _monitors_text(d: dict[str, Any]) -> str:
    rows = [f"  {m['state']:<7} {m['name']}  expect {m['expect']} every {m['every']}  last {m['last']}"
            for m in d["monitors"]]
    head = f"{d['count']} monitors: " + ", ".join(f"{d[s]} {s}" for s in ("new", "up", "late", "down", "paused"))
    return "\n".join([head, *rows]) + "\n"


def post_tool_cmd(
    watch: Annotated[
        Optional[str],
        typer.Option("--watch", metavar="PREFIX,...", help="Tool-name prefixes to watch (default: every MCP tool)."),
    ] = None,
    agent: Annotated[
        str, typer.Option("--agent", help="Whose output form: claude-code (plain text) or codex (JSON).")
    ] = "claude-code",
) -> None:
    """Record a watched tool's call (for abandonment).

    A failed last call, then a stop, mints one letter."""
    from dovecote.cli.common import home_path
    from dovecote.cli.hookrun import main

    main(home_path(), ["post-tool", *(["--watch", watch] if watch else []), "--agent", agent])


def register_hooks(app: Typer) -> None:
    """``hook post-tool`` joins the ``hook`` group (abandonment's half of the hooks; stop does both)."""
    for group in app.registered_groups:
        if group.name == "hook" and group.typer_instance is not None:
            group.typer_instance.command("post-tool")(post_tool_cmd)
            return
    raise RuntimeError("the hook group must be registered before hook post-tool")


def register(app: Typer) -> None:
    receipt = Typer(invoke_without_command=True)  # `receipt import M` is its subcommand
    receipt.callback()(receipt_cmd)
    app.add_typer(receipt, name="receipt")
    app.command("cases")(cases_cmd)
    app.command("case")(case_cmd)
    app.command("sentinels")(sentinels_cmd)
    app.command("claims")(claims_cmd)
    monitor = Typer(help="Dead-man's switch monitors.", no_args_is_help=True)
    monitor.command("add")(monitor_add_cmd)
    app.add_typer(monitor, name="monitor")
    app.command("monitors")(monitors_cmd)

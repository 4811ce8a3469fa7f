"""A demo home for ``make run``: a few projects and letters of every fate.

A face-level script: it builds the home only through the handle (``api``).

Timestamps are fixed, so the demo letters have the same ids on every machine
and building the demo twice appends nothing the second time.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from dovecote.handle.api import Actor, Dovecote, init, open_home
from dovecote.util import fileops
from dovecote.verbs import Category, EntityAdd, Message, Move, MoveKind, ProjectAdd


def _report(ts: str, agent: str, repo: str, tool: str, klass: str, what: str, **more: Any) -> dict[str, Any]:
    return {"ts": ts, "agent": agent, "repo": repo, "tool": tool, "class": klass, "what": what, **more}


def build_demo(path: Path, actor: Actor | None = None) -> Path:
    """Build (or top up) the demo home under ``path``; ``actor`` acts in its lifecycle moves."""
    root = path.absolute()
    repos = root / "repos"
    for name in ("atlas", "beacon", "api-gateway", "api-server"):
        fileops.make_dirs(repos / name)
    home, created = init(root / ".dovecote", owner_root=str(root))
    dc = open_home(home, actor=actor)
    if created:
        dc.add_project(ProjectAdd(name="atlas", root=str(repos / "atlas")))
        dc.add_project(ProjectAdd(name="beacon", root=str(repos / "beacon"), box_in_repo=True))
        dc.add_project(ProjectAdd(name="ghost", root=str(repos / "ghost-not-cloned"), box_in_repo=True))
        dc.add_project(ProjectAdd(name="api-gateway", root=str(repos / "api-gateway"), aliases=("api",)))
        dc.add_project(ProjectAdd(name="api-server", root=str(repos / "api-server"), aliases=("api",)))
        dc.add_entity(EntityAdd(entity_id="ent_ops", role="operator"))
        dc.add_entity(EntityAdd(entity_id="ent_builder", role="builder"))
    wet = _report("2026-07-05T10:00:00Z", "probe", "atlas", "seek", "bug", "seek returned nothing for a known symbol")
    picked = _report("2026-07-05T10:05:00Z", "probe", "atlas", "north", "honesty", "north claimed an empty memory beat")
    fixed = _report("2026-07-05T10:10:00Z", "probe", "beacon", "build", "friction", "build step needs a manual retry")
    filed = dc.report([wet, picked, fixed], actor="demo")  # first: the answers below name their ids
    ids = {"picked": filed[1][0], "fixed": filed[2][0]}
    letters = [
        _report("2026-07-05T11:00:00Z", "helper", "atlas", "north", "friction", "looking into the empty beat",
                answers=[ids["picked"]]),
        _report("2026-07-05T12:00:00Z", "triage", "beacon", "triage", "triage", "fixed in the retry loop",
                answers=[ids["fixed"]], disposition="fixed"),
        _report("2026-07-05T12:30:00Z", "probe", "atlas", "playwright (browser)", "bug", "a foreign tool timed out"),
        _report("2026-07-05T13:00:00Z", "probe", "(research task, no repo)", "search", "win", "found the paper fast"),
        _report("2026-07-05T13:30:00Z", "probe", "atlas", "seek", "memory_misdelivery", "beat empty over a full store",
                misdelivery_kind="false_absence"),
        _report("2026-07-05T14:00:00Z", "probe", "api", "deploy", "bug", "which api? two projects answer to it"),
        _report("2026-07-05T14:30:00Z", "probe", "ghost", "lint", "friction", "ghost's repo is not on this machine"),
        _report("2026-07-05T15:00:00Z", "probe", "zephyr", "seek", "bug", "zephyr is not in the roster"),
    ]
    dc.report(letters, actor="demo")
    if created:
        _mail(dc)
    return home


def look_around(home: Path, item: str, dovecote: str = "dovecote") -> str:
    """The commands printed after the demo, spelled with ``dovecote`` as it can
    be run from here (e.g. ``.venv/bin/dovecote``), so each works as printed."""
    h = shlex.quote(str(home))
    views = shlex.quote(str(home / "views" / "agent-mailboxes" / "ent_builder"))
    pad = " " * 14
    return (
        f"Look around:  export DOVECOTE_HOME={h}\n"
        f"{pad}{dovecote} sweep --include-all\n"
        f"{pad}{dovecote} box project:atlas --json\n"
        f"{pad}{dovecote} inbox ent_builder --current-tic 109 --detailed\n"
        f"{pad}{dovecote} show ent_builder {item} --current-tic 109\n"
        f"{pad}{dovecote} view && ls {views}/*\n"
        f"Ledgers:      {home}/spool.jsonl, {home}/boxes/"
    )


#: The header of the MCP client configuration the demo prints (tests find the block by it).
MCP_CONFIG_HEADER = "MCP client config (paste into .mcp.json, or Claude Desktop's mcpServers):"


def mcp_config(home: Path, entities: list[str], dovecote: str) -> str:
    """A ready-to-paste MCP client configuration: one stdio server per demo agent, each bound to
    its entity (``dovecote mcp --as``); ``dovecote`` is the absolute path of this program."""
    import json

    servers = {
        f"dovecote-{e.removeprefix('ent_')}": {"command": dovecote, "args": ["--home", str(home), "mcp", "--as", e]}
        for e in entities
    }
    return f"{MCP_CONFIG_HEADER}\n" + json.dumps({"mcpServers": servers}, indent=2)


def _mail(dc: Dovecote) -> None:
    """A builder's inbox with an item in every open state, a reply, and a draft."""
    def send(subject: str, **kw: Any) -> str:
        return dc.send(Message(sender="ent_ops", recipient="ent_builder", subject=subject, **kw)).id

    urgent = send("index rebuild failed on atlas", priority="urgent", category="directive", current_tic=100)
    query = send("which seek version is deployed?", category="query", priority="high", current_tic=103)
    send("weekly numbers are in", category="notification", current_tic=104, reminder_tic=105)
    later = send("review the ghost repo plan", current_tic=104, expires_at_tic=110)
    dc.move(Move(kind=MoveKind.seen, entity_id="ent_builder", ref=urgent, current_tic=104))
    dc.move(Move(kind=MoveKind.claim, entity_id="ent_builder", ref=urgent, current_tic=104))
    dc.move(Move(kind=MoveKind.defer, entity_id="ent_builder", ref=later, until_tic=108, current_tic=105))
    dc.move(Move(kind=MoveKind.seen, entity_id="ent_builder", ref=query, current_tic=105))
    dc.send(Message(sender="ent_builder", recipient="ent_ops", subject="seek 2.4.1 everywhere",
                    category=Category.response, reply_to=query, current_tic=105))
    dc.move(Move(kind=MoveKind.claim, entity_id="ent_builder", ref=query, current_tic=105))
    dc.move(Move(kind=MoveKind.complete, entity_id="ent_builder", ref=query, current_tic=105))
    dc.draft(Message(sender="ent_builder", recipient="ent_ops", subject="rebuild done, notes attached",
                     current_tic=106))

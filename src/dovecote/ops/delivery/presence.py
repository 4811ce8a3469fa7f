"""Presence: heartbeats in a ledger of their own, read as "recently active" or "no recent session".

Law: presence is assistive (notes B12). A heartbeat is never delivery truth, so
it lives apart from every box (``presence.jsonl`` in the home: append-only,
fsynced, deduplicated like a ledger, deletable without losing any mail). No
reading says "online": an agent is *recently active* when its last beat (or the
discovery command's freshest session) is within ``active_minutes``, otherwise
there is *no recent session*. Reading never writes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from dovecote.ledger import append as ledger_append
from dovecote.ledger import jsonl as ledger
from dovecote.model.letters import canonical_line, format_ts
from dovecote.model.results import Result
from dovecote.ops.delivery.notify import discover
from dovecote.ops.warm.registry import Kind
from dovecote.util.timeutil import order_key, parse_time

if TYPE_CHECKING:
    from dovecote.ops.context import Context

PRESENCE = "presence.jsonl"
RECENTLY_ACTIVE = "recently_active"
NO_RECENT_SESSION = "no_recent_session"
_READER: Kind[ledger.LedgerReader] = Kind("presence-reader")


class Beat(Result, frozen=True):
    """One heartbeat recorded (``appended``: false when the very same beat was there already)."""

    id: str
    agent: str
    session: str | None
    ts: str
    appended: bool


class AgentPresence(Result, frozen=True):
    """One agent recently active or not, with the evidence: its newest beat or discovered session."""

    agent: str
    recently_active: bool
    status: str
    last_seen: str | None
    age_ms: int | None
    source: str | None
    session: str | None


class Discovery(Result, frozen=True):
    """Whether the roster's discovery command is set, whether it ran, and what stopped it."""

    configured: bool
    ran: bool
    error: str | None


class Presence(Result, frozen=True):
    """Every agent recently active or not (never "online"), and how many are."""

    active_minutes: int
    agents: list[AgentPresence]
    recently_active: int
    discovery: Discovery


def _path(ctx: Context) -> Path:
    return ctx.layout.root / PRESENCE


def _reader(ctx: Context) -> ledger.LedgerReader:
    with ctx.warm.lock_of(_READER):
        r = ctx.warm.get(_READER)
        if r is None:
            r = ctx.warm.put(_READER, ledger.LedgerReader(_path(ctx)))
        return r


def beat(ctx: Context, agent: str, session: str | None) -> Beat:
    """Append one heartbeat (durable when this returns)."""
    ts = format_ts(ctx.now())
    line = canonical_line({"ts": ts, "agent": agent, "kind": "beat", **({"session": session} if session else {})})
    ((lid, appended),) = ledger_append.append(_reader(ctx), [line])
    return Beat(lid, agent, session, ts, appended)


def last_beats(ctx: Context) -> dict[str, tuple[str, str | None]]:
    """Each agent's newest beat: (ts, session)."""
    r = _reader(ctx)
    with r.lock:
        r.refresh()
        letters = list(r.letters)
    out: dict[str, tuple[str, str | None]] = {}
    for letter in letters:
        if letter.kind != "beat" or not letter.agent or not letter.ts:
            continue
        old = out.get(letter.agent)
        if old is None or order_key(letter.ts) >= order_key(old[0]):
            session = letter.data().get("session")
            out[letter.agent] = (letter.ts, session if isinstance(session, str) else None)
    return out


def presence(ctx: Context, active_minutes: int, now: datetime) -> Presence:
    """Every roster entity (and every agent that beat), recently active or not, with the evidence."""
    beats = last_beats(ctx)
    found, error, ran = discover(ctx, active_minutes)
    window = timedelta(minutes=active_minutes)
    agents = sorted({e.id for e in ctx.roster.entities} | set(beats) | set(found or {}))
    rows = []
    for agent in agents:
        seen: list[tuple[datetime, str, str | None]] = []
        if agent in beats:
            t = parse_time(beats[agent][0])
            if t is not None:
                seen.append((t, "heartbeat", beats[agent][1]))
        d = (found or {}).get(agent)
        if d is not None and d.get("updated_ms"):
            seen.append((datetime.fromtimestamp(d["updated_ms"] / 1000, tz=now.tzinfo), "discovery",
                         d.get("session_key")))
        last = max(seen, default=None, key=lambda s: s[0])
        age = None if last is None else int((now - last[0]).total_seconds() * 1000)
        active = last is not None and now - last[0] <= window
        rows.append(AgentPresence(
            agent, active, RECENTLY_ACTIVE if active else NO_RECENT_SESSION, format_ts(last[0]) if last else None,
            age, last[1] if last else None, last[2] if last else None,
        ))
    discovery = Discovery(ctx.roster.discovery_command is not None, ran, error)
    return Presence(active_minutes, rows, sum(1 for r in rows if r.recently_active), discovery)

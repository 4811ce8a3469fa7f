"""Monitors (beyond the seed): ``monitor add`` writes a definition letter into home;
``monitors`` lists every monitor's state; a distributing sweep mints the letters of
a change (one ``silent_drop`` letter per down streak, one marker when it is up again).

The rules of the states are ``derive.monitors``; a definition is a letter like
any other (kind ``monitor``: the latest one naming a monitor is in force), so
the monitors travel, merge and recompute as the ledgers do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dovecote import verbs
from dovecote.addresses import HOME
from dovecote.derive import monitors as rules
from dovecote.errors import StoreError
from dovecote.letters import canonical_line, format_ts
from dovecote.ops import casebook, engine

if TYPE_CHECKING:
    from dovecote.context import Context


def add(ctx: Context, v: verbs.MonitorAdd) -> dict[str, Any]:
    """Write the monitor's definition into home (a newer one with the same name replaces it)."""
    rules.parse_filter(v.expect)
    rules.seconds(v.every)
    if v.grace is not None:
        rules.seconds(v.grace)
    obj: dict[str, Any] = {
        "ts": format_ts(ctx.now()), "agent": ctx.actor.author(), "kind": "monitor", "name": v.name,
        "expect": v.expect, "every": v.every, "what": f"monitor {v.name}: expect {v.expect} every {v.every}",
    }
    if v.grace is not None:
        obj["grace"] = v.grace
    if v.paused:
        obj["paused"] = True
    (lid, appended), = ctx.store.append(HOME, [canonical_line(obj)])
    return {"id": lid, "appended": appended, "name": v.name}


def listing(ctx: Context) -> dict[str, Any]:
    """Every monitor with its state, last matching letter and when it goes (or went) down."""
    book = casebook.load(ctx).book
    now = ctx.now()
    rows = []
    for name, m in sorted(book.monitor_defs().items()):
        last = book.last_match(rules.parse_filter(m.expect))
        state, down_at = rules.state(m.ts, m.every, m.grace, m.paused, last, now)
        number, down = book.monitor_streak(name)
        rows.append({
            "name": name, "state": state, "expect": m.expect, "every": m.every, "grace": m.grace or rules.DEFAULT_GRACE,
            "last": last, "down_at": format_ts(down_at) if down_at else None, "down_streak": number,
            "down_letter_open": down,
        })
    counts = {s: sum(1 for r in rows if r["state"] == s) for s in ("new", "up", "late", "down", "paused")}
    return {"monitors": rows, "count": len(rows), **counts}


def mint(ctx: Context) -> list[str]:
    """The letters of a change: down (not yet minted for this streak), or up after a down streak."""
    minted = []
    for row in listing(ctx)["monitors"]:
        name, number = row["name"], row["down_streak"]
        if row["state"] == "down" and not row["down_letter_open"]:
            obj = engine.monitor_down(name, number + 1, row["down_at"], row["last"], row["every"], row["grace"])
            check = engine.same("monitor_down", monitor=name, monitor_streak=number + 1)
        elif row["state"] == "up" and row["down_letter_open"]:
            obj, check = engine.monitor_up(name, number, row["last"]), engine.same("monitor_up", monitor=name,
                                                                                     monitor_streak=number)
        else:
            continue
        try:
            lid, appended = engine.mint(ctx, HOME, obj, check)
        except StoreError:
            continue  # home cannot be written now: the next distributing sweep mints it

        if appended:
            minted.append(lid)
    return minted

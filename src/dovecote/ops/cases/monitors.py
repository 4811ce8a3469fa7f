"""Monitors (beyond the seed): ``monitor add`` writes a definition letter into home;
``monitors`` lists every monitor's state; a distributing sweep mints the letters of
a change (one ``silent_drop`` letter per down streak, one marker when it is up again).

The rules of the states are ``derive.cases.monitors``; a definition is a letter like
any other (kind ``monitor``: the latest one naming a monitor is in force), so
the monitors travel, merge and recompute as the ledgers do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from dovecote import verbs
from dovecote.derive.cases import monitors as rules
from dovecote.errors import StoreError
from dovecote.model.addresses import HOME
from dovecote.model.letters import canonical_line, format_ts
from dovecote.model.results import Result
from dovecote.ops.cases import engine
from dovecote.ops.warm import cases as casebook

if TYPE_CHECKING:
    from dovecote.ops.context import Context


class MonitorAdded(Result, frozen=True):
    """A monitor's definition written (``appended``: false when the very same one was there already)."""

    id: str
    appended: bool
    name: str


class MonitorRow(Result, frozen=True):
    """One monitor: its state, its rule, the last matching report and when it goes (or went) down."""

    name: str
    state: str
    expect: str
    every: str
    grace: str
    last: str | None
    down_at: str | None
    down_streak: int
    down_letter_open: bool


class Monitors(Result, frozen=True):
    """Every monitor, and how many are in each state."""

    monitors: list[MonitorRow]
    count: int
    new: int
    up: int
    late: int
    down: int
    paused: int


def add(ctx: Context, v: verbs.MonitorAdd) -> MonitorAdded:
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
    return MonitorAdded(lid, appended, v.name)


def listing(ctx: Context) -> Monitors:
    """Every monitor with its state, last matching letter and when it goes (or went) down."""
    book = casebook.load(ctx).book
    now = ctx.now()
    rows = []
    for name, m in sorted(book.monitor_defs().items()):
        last = book.last_match(rules.parse_filter(m.expect))
        state, down_at = rules.state(m.ts, m.every, m.grace, m.paused, last, now)
        number, down = book.monitor_streak(name)
        rows.append(MonitorRow(name, state, m.expect, m.every, m.grace or rules.DEFAULT_GRACE, last,
                               format_ts(down_at) if down_at else None, number, down))
    counts = {s: sum(1 for r in rows if r.state == s) for s in ("new", "up", "late", "down", "paused")}
    return Monitors(rows, len(rows), **counts)


def mint(ctx: Context) -> list[str]:
    """The letters of a change: down (not yet minted for this streak), or up after a down streak."""
    minted = []
    for row in listing(ctx).monitors:
        name, number = row.name, row.down_streak
        if row.state == "down" and not row.down_letter_open:
            down_at = cast(str, row.down_at)  # a monitor is down from a time: ``rules.state`` gives it
            obj = engine.monitor_down(name, number + 1, down_at, row.last, row.every, row.grace)
            check = engine.same("monitor_down", monitor=name, monitor_streak=number + 1)
        elif row.state == "up" and row.down_letter_open:
            obj, check = engine.monitor_up(name, number, row.last), engine.same("monitor_up", monitor=name,
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

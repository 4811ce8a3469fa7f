"""``stale-check``: attention debt across every entity's inbox, and its one daily signal.

An item is stale when it has sat in WAIT or ACTIVE longer than the roster's
``limits.stale_tics`` (or ``limits.stale_hours`` when its time in state cannot
be counted in tics: no current tic, or no tic recorded when it entered the
state). The numbers are ``item_row``'s ``in_state_tics``/``in_state_hours``, so
``inbox`` and ``stale-check`` never disagree about an item's age. DEFER is
never stale (it has a due, so it is not forgotten); a DEFER whose due has
passed reads as WAIT from its due on, and can be stale as a WAIT.

Signals (reference A8, A13.4). ``--emit-signals`` appends at most one
``inbox_attention_debt`` engine letter per entity per UTC day to the ``home``
box: per-message signals once flooded a team's attention, and the reference's
check-then-append let two racing runs both emit. Here the rule is a
compare-and-swap under the home box lock: scan the box for a signal for
(entity, day), append only if there is none. The counts can differ between
two runs on one day, so content dedup alone could not enforce the rule; it
still makes an exact replay (the same line again) a no-op.

A signal's ``kind`` is ``signal``, which is not a field-report kind, so the
field-report sweep and doctor never count it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dovecote.derive.inbox.book import Clock, InboxBook, item_row, past_stale
from dovecote.derive.lifecycle import State, effective
from dovecote.errors import StoreError
from dovecote.model.addresses import HOME
from dovecote.model.letters import canonical_line, format_ts
from dovecote.model.results import Result
from dovecote.model.vocab import ENGINE_AGENT
from dovecote.ops.reports.tics import current_tic
from dovecote.ops.warm import inbox as foldcache
from dovecote.roster.config import Limits
from dovecote.util.timeutil import order_key

if TYPE_CHECKING:
    from dovecote.ops.context import Context

SIGNAL = "inbox_attention_debt"
SIGNAL_KIND = "signal"
#: At most this many ids are listed per entity; ``truncated`` says when there were more.
IDS_MAX = 50
#: The states in which an item can go stale, in the order ``by_state`` lists them.
STALE_STATES: tuple[State, ...] = (State.WAIT, State.ACTIVE)


def is_stale(row: dict[str, Any], limits: Limits, now: datetime) -> bool:
    """An item row past the stale threshold (``past_stale``: the inbox's STALE flag's rule)."""
    return past_stale(row["in_state_tics"], row["entered_at"], limits, now)


def _age_key(row: dict[str, Any]) -> tuple[int, int, datetime, str]:
    """Oldest first: items aged in tics (longest first), then those aged in hours; ties by
    the instant the item entered its state, then by id."""
    entered = order_key(row.get("entered_at"))
    if row["in_state_tics"] is not None:
        return (0, -row["in_state_tics"], entered, row["id"])
    return (1, -(row["in_state_hours"] or 0), entered, row["id"])


def stale_rows(book: InboxBook, clock: Clock, limits: Limits) -> list[dict[str, Any]]:
    """The entity's stale items as ``item_row`` rows, oldest first."""
    rows = []
    for item in book.items.values():
        if effective(book.replay_of(item), clock.tic, clock.now) not in STALE_STATES:
            continue
        row = item_row(book, item, clock, limits)
        if is_stale(row, limits, clock.now):
            rows.append(row)
    rows.sort(key=_age_key)
    return rows


def _oldest(row: dict[str, Any]) -> dict[str, Any]:
    out = {"id": row["id"], "subject": row["subject"], "state": row["state"]}
    if row["in_state_tics"] is not None:
        out["in_state_tics"] = row["in_state_tics"]
    else:
        out["in_state_hours"] = row["in_state_hours"]
    return out


def _detail(entity_id: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_state = {str(s): 0 for s in STALE_STATES}
    for r in rows:
        by_state[r["state"]] += 1
    return {
        "entity": entity_id,
        "count": len(rows),
        "by_state": by_state,
        "oldest": _oldest(rows[0]),
        "ids": [r["id"] for r in rows[:IDS_MAX]],
        "truncated": len(rows) > IDS_MAX,
        "signal": None,
    }


def signal_text(detail: dict[str, Any]) -> str:
    """The fixed template of a signal: counts and the oldest id, nothing else."""
    old = detail["oldest"]
    unit = "tics" if "in_state_tics" in old else "hours"
    age = old.get("in_state_tics", old.get("in_state_hours"))
    parts = ", ".join(f"{n} {s}" for s, n in detail["by_state"].items())
    return (
        f"{detail['entity']} has {detail['count']} stale inbox item(s) ({parts}); "
        f"the oldest is {old['id']}, {age} {unit} in {old['state']}."
    )


def signal_letter(detail: dict[str, Any], day: str, ts: str) -> dict[str, Any]:
    """The engine letter for one entity's attention debt on one UTC day."""
    return {
        "ts": ts,
        "agent": ENGINE_AGENT,
        "kind": SIGNAL_KIND,
        "signal": SIGNAL,
        "entity": detail["entity"],
        "day": day,
        "count": detail["count"],
        "oldest": detail["oldest"],
        "what": signal_text(detail),
    }


def signals_on(letters: Any, day: str) -> dict[str, str]:
    """entity -> id of the attention signal already in ``letters`` for ``day``."""
    found: dict[str, str] = {}
    for letter in letters:
        if letter.kind != SIGNAL_KIND or letter.agent != ENGINE_AGENT:
            continue
        d = letter.data()
        if d.get("signal") == SIGNAL and d.get("day") == day and isinstance(d.get("entity"), str):
            found.setdefault(d["entity"], letter.id)
    return found


def emit_signals(ctx: Context, details: list[dict[str, Any]], now: datetime) -> int:
    """Append the day's missing signals, as one compare-and-swap on the home box.

    Sets ``detail["signal"] = {"id", "emitted"}`` on each detail; returns how
    many letters were appended.
    """
    day = now.astimezone(UTC).date().isoformat()
    ts = format_ts(now)
    with ctx.store.guarded(HOME) as led:
        have = signals_on(led.letters, day)
        fresh: list[tuple[dict[str, Any], bytes]] = []
        for d in details:
            if d["entity"] in have:
                d["signal"] = {"id": have[d["entity"]], "emitted": False}
            else:
                fresh.append((d, canonical_line(signal_letter(d, day, ts))))
        results = led.append([line for _, line in fresh]) if fresh else []
    emitted = 0
    for (d, _), (lid, appended) in zip(fresh, results, strict=True):
        d["signal"] = {"id": lid, "emitted": appended}
        emitted += appended
    return emitted


class StaleCheck(Result, frozen=True):
    """Attention debt across every entity: the clock it was read at, the counts, one detail per entity with
    debt (most stale first: its rows as the inbox has them), and the entity boxes that could not be read."""

    tic: int | None
    clock_source: str | None
    entities_checked: int
    entities_with_debt: int
    total_stale: int
    signals_emitted: int
    details: list[dict[str, Any]]
    unreachable: list[str]


def stale_check(
    ctx: Context,
    *,
    current: int | None = None,
    emit: bool = False,
    now: datetime | None = None,
) -> StaleCheck:
    """Attention debt across every registered entity (and, with ``emit``, the day's signals).

    Returns ``{tic, clock_source, entities_checked, entities_with_debt,
    total_stale, signals_emitted, details, unreachable}``; ``details`` has one
    entry per entity with debt, most stale first. An entity box that cannot be
    read is named in ``unreachable``, never counted as clean.
    """
    when = now or ctx.now()
    tic, source = current_tic(ctx, current)
    clock = Clock(tic, when)
    limits = ctx.roster.limits
    details: list[dict[str, Any]] = []
    unreachable: list[str] = []
    checked = 0
    for e in ctx.roster.entities:
        try:
            with foldcache.inbox(ctx, e.id) as book:
                rows = stale_rows(book, clock, limits)
        except StoreError:
            unreachable.append(f"entity:{e.id}")
            continue
        checked += 1
        if rows:
            details.append(_detail(e.id, rows))
    details.sort(key=lambda d: (-d["count"], d["entity"]))
    emitted = emit_signals(ctx, details, when) if emit and details else 0
    return StaleCheck(tic, source, checked, len(details), sum(d["count"] for d in details), emitted, details,
                      unreachable)

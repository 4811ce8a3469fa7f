"""The entity-box fold: items, their lifecycle, drafts and what was sent.

Pure: an ``InboxBook`` is fed the letters of one entity's box and answers
questions; ``inbox_audit`` turns it into the audit the /inbox skill prints, for
a given current tic and wall-clock time. Nothing here opens a file or reads a
clock; the caller passes both.

Letters in an entity box:

* ``message``: an inbound item (the envelope; see ``envelope.py``);
* ``claim`` ... ``seen``: lifecycle links naming an item in ``ref``;
* ``draft``: an outbound draft written by this entity (EMIT);
* ``sent``: this entity sent a message (``message``), maybe delivering a
  draft (``ref``), maybe replying to an item (``reply_to``);
* anything else is kept but plays no part here.

Whether a response to an item exists is decided in ``derive/responses.py``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from dovecote.derive.inbox_item import Item as Item  # re-exported: the fold's items are its own
from dovecote.derive.lifecycle import (
    LINK_KINDS,
    PRIORITY_RANK,
    TERMINAL,
    Link,
    Replay,
    State,
    apply_link,
    effective,
)
from dovecote.envelope import Envelope
from dovecote.errors import Refusal
from dovecote.letters import Letter, is_hex, is_letter_id, text_or_none
from dovecote.roster import Limits
from dovecote.timeutil import order_key, parse_time

FLAG_STALE = "STALE"
FLAG_OVERDUE = "OVERDUE REMINDER"
FLAG_EXPIRING = "EXPIRING SOON"
FLAG_EXPIRED = "EXPIRED"
FLAGS = (FLAG_STALE, FLAG_OVERDUE, FLAG_EXPIRING, FLAG_EXPIRED)
#: The kinds of letter the fold takes; every other letter in the box plays no part.
FOLDED = frozenset({"message", "draft", "sent", *LINK_KINDS})


@dataclass(frozen=True, slots=True)
class SentRecord:
    id: str
    message: str | None
    draft: str | None
    to: str | None
    reply_to: str | None
    ts: str | None


@dataclass
class Draft:
    id: str
    letter: Letter
    env: Envelope


class InboxBook:
    """The fold of one entity's box; incremental, deterministic."""

    def __init__(self, entity: str) -> None:
        self.entity = entity
        self.items: dict[str, Item] = {}
        self.alias: dict[str, str] = {}
        self.drafts: dict[str, Draft] = {}
        self.sent: list[SentRecord] = []
        self.delivered: dict[str, SentRecord] = {}  # draft id -> sent record
        self.replies: dict[str, list[str]] = {}  # reply_to -> the messages received here that name it
        self._orphans: dict[str, list[Link]] = {}
        self.touched: set[str] = set()  # items changed since the last inbox_audit
        self.view_state: ViewState | None = None
        #: every letter id folded: a letter read again (a duplicate line after a
        #: snapshot's mark, which the resumed read cannot know) is not folded twice
        self.ids: set[str] = set()
        #: which view the book's persisted snapshot holds (kept by ``foldcache``; None: not saved)
        self.saved_view: str | None = None

    def add(self, letters: Iterable[Letter]) -> None:
        dirty: set[str] = set()
        ids = self.ids
        for letter in letters:
            kind = letter.kind
            if kind not in FOLDED or letter.id in ids:
                continue
            ids.add(letter.id)
            if kind == "message":
                d = letter.data()
                env = Envelope(d)
                item = Item(letter.id, letter_=letter, env_=env)
                self.items[letter.id] = item
                mid = env.message_id
                if mid and mid not in self.alias:
                    self.alias[mid] = letter.id
                if env.reply_to:
                    self.replies.setdefault(env.reply_to, []).append(letter.id)
                for link in self._orphans.pop(letter.id, ()):
                    item.links.append(link)
                dirty.add(letter.id)
            elif kind in LINK_KINDS:
                link = Link.from_data(letter.id, letter.data())
                target = self.items.get(link.ref)
                if target is None:
                    self._orphans.setdefault(link.ref, []).append(link)
                    continue
                target.links.append(link)
                if target.id in dirty:
                    continue
                r = target.r
                if r is not None and link.prev == r.head and not r.conflicts and apply_link(r, link):
                    self.touched.add(target.id)
                    continue  # the common case: the link extends the chain
                dirty.add(target.id)
            elif kind == "draft":
                self.drafts[letter.id] = Draft(letter.id, letter, Envelope(letter.data()))
            elif kind == "sent":
                d = letter.data()

                def s(k: str, d: dict[str, Any] = d) -> str | None:
                    return text_or_none(d.get(k))

                rec = SentRecord(letter.id, s("message"), s("ref"), s("to"), s("reply_to"), letter.ts)
                self.sent.append(rec)
                if rec.draft:
                    self.delivered.setdefault(rec.draft, rec)
        for iid in dirty:
            self.items[iid].recompute()
        self.touched |= dirty

    def replay_of(self, item: Item) -> Replay:
        return item.r if item.r is not None else item.recompute()

    def resolve(self, ref: str) -> Item:
        """An item by letter id, by the id a foreign writer gave it, or by a unique prefix."""
        item = self.items.get(ref)
        if item is None and ref in self.alias:
            item = self.items.get(self.alias[ref])
        if item is None and len(ref) >= 4 and is_hex(ref) and not is_letter_id(ref):
            hits = [i for i in self.items if i.startswith(ref)]
            if len(hits) > 1:
                raise Refusal("unknown_letter", f"{ref!r} is the prefix of {len(hits)} items; give more digits")
            if hits:
                item = self.items[hits[0]]
        if item is None:
            raise Refusal("unknown_letter", f"no item {ref!r} in {self.entity}'s box")
        return item

    def pending_drafts(self) -> list[Draft]:
        return [d for d in self.drafts.values() if d.id not in self.delivered]



@dataclass(frozen=True, slots=True)
class Clock:
    """The two clocks a read is evaluated at: the team's tic, and wall time."""

    tic: int | None
    now: datetime


def _hours(since: str | None, now: datetime) -> int | None:
    t = parse_time(since)
    if t is None:
        return None
    return max(0, math.floor((now - t).total_seconds() / 3600))


def older_than(since: str | None, hours: int, now: datetime) -> bool:
    """More than ``hours`` since ``since``, to the second (what "stale in hours" means)."""
    t = parse_time(since)
    return t is not None and now - t > timedelta(hours=hours)


def past_stale(in_state_tics: int | None, entered_ts: str | None, limits: Limits, now: datetime) -> bool:
    """The one stale threshold (the inbox's STALE flag and ``stale-check`` both ask it):
    time in state above ``limits``, in tics when counted in tics, else in hours to the second."""
    if in_state_tics is not None:
        return in_state_tics > limits.stale_tics
    return older_than(entered_ts, limits.stale_hours, now)


def item_row(book: InboxBook, item: Item, clock: Clock, limits: Limits) -> dict[str, Any]:
    """One item as every face shows it."""
    r = book.replay_of(item)
    env = item.env
    state = effective(r, clock.tic, clock.now)
    tic = clock.tic
    src = env.source_tic
    age_tics = tic - src if tic is not None and src is not None else None
    age_hours = _hours(env.created_at, clock.now) if age_tics is None else None
    flags: list[str] = []
    if state is State.WAIT and r.state is State.DEFER:  # resurfaced by time: WAIT began at the due
        entered_tic, entered_ts = r.due_tic, r.due_time or r.entered_ts
    else:
        entered_tic, entered_ts = r.entered_tic, r.entered_ts
    in_state_tics = in_state_hours = None
    if tic is not None and entered_tic is not None:
        in_state_tics = tic - entered_tic
    else:
        in_state_hours = _hours(entered_ts, clock.now)
    if state is State.WAIT and past_stale(in_state_tics, entered_ts, limits, clock.now):
        flags.append(FLAG_STALE)
    if state not in TERMINAL and tic is not None:
        if env.reminder_tic is not None and env.reminder_tic < tic:
            flags.append(FLAG_OVERDUE)
        exp = env.expires_at_tic
        if exp is not None:
            if tic > exp:
                flags.append(FLAG_EXPIRED)
            elif exp - tic <= limits.expiring_tics:
                flags.append(FLAG_EXPIRING)
    return {
        "id": item.id,
        "message_id": env.message_id,
        "state": str(state),
        "subject": env.subject,
        "sender": env.sender,
        "thread_id": env.thread_id,
        "category": env.category,
        "priority": env.priority,
        "source_tic": src,
        "created_at": env.created_at,
        "age_tics": age_tics,
        "age_hours": age_hours,
        "entered_tic": entered_tic,
        "entered_at": entered_ts,
        "in_state_tics": in_state_tics,
        "in_state_hours": in_state_hours,
        "expires_at_tic": env.expires_at_tic,
        "reminder_tic": env.reminder_tic,
        "due_tic": r.due_tic if state is State.DEFER else None,
        "due_time": r.due_time if state is State.DEFER else None,
        "seen": r.seen,
        "response_expected": env.response_expected,
        "flags": flags,
        "conflicts": len(r.conflicts),
    }


def _order(row: dict[str, Any]) -> tuple[int, float, datetime, str]:
    src = row["source_tic"]
    created = order_key(row["created_at"])
    return (PRIORITY_RANK.get(row["priority"], 2), src if src is not None else math.inf, created, row["id"])


BUCKETS = {
    State.WAIT: "inbound",
    State.ACTIVE: "processing",
    State.DEFER: "deferred",
    State.DONE: "archive",
    State.NACK: "archive",
}
#: The folder an entry of no lifecycle state lives in: outbound drafts, loose hand drops.
OUTBOUND, LOOSE = "outbound", "loose"
#: Every count the inbox reports, in the order it reports them: the open states' folders,
#: drafts, the terminal states' folder, loose drops. Folder names come from ``BUCKETS`` alone.
BUCKET_NAMES: tuple[str, ...] = (
    *dict.fromkeys(BUCKETS[s] for s in State if s not in TERMINAL),
    OUTBOUND,
    *dict.fromkeys(BUCKETS[s] for s in State if s in TERMINAL),
    LOOSE,
)


def _row_until(row: dict[str, Any], now: datetime, stale_hours: int) -> datetime | None:
    """When this row would first read differently with no new letter and no new
    tic: an age in hours ticking over, the stale threshold passing, or a defer
    coming due by time."""
    times: list[datetime] = []
    for hours, since in ((row["age_hours"], row["created_at"]), (row["in_state_hours"], row["entered_at"])):
        t = parse_time(since)
        if hours is not None and t is not None:
            times.append(t + timedelta(hours=hours + 1))
    entered = parse_time(row["entered_at"])
    if row["in_state_hours"] is not None and entered is not None:
        crossing = entered + timedelta(hours=stale_hours, microseconds=1)
        if crossing > now:
            times.append(crossing)
    due = parse_time(row["due_time"])
    if due is not None and due > now:
        times.append(due)
    return min(times) if times else None


def _fresh(since: datetime, until: datetime | None, now: datetime) -> bool:
    """An answer computed at ``since`` holds for ``since <= now < until``."""
    return since <= now and (until is None or now < until)


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    return a if b is None or a <= b else b


@dataclass
class ViewState:
    """The last view of a book, kept so the next read redoes only what changed."""

    key: tuple[Any, ...]
    since: datetime
    until: datetime | None = None
    buckets: dict[str, str] = field(default_factory=dict)
    rows: dict[str, tuple[tuple[int, float, datetime, str], dict[str, Any]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BUCKET_NAMES, 0))
    flags: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FLAGS, 0))
    ordered: list[dict[str, Any]] | None = None



def _place(vs: ViewState, book: InboxBook, item: Item, clock: Clock, limits: Limits) -> None:
    """Put one item's bucket and row into the view state (replacing what was there)."""
    include_terminal = vs.key[-1]
    r = book.replay_of(item)
    state = effective(r, clock.tic, clock.now)
    bucket = BUCKETS[state]
    old = vs.buckets.get(item.id)
    if old is not None:
        vs.counts[old] -= 1
    vs.counts[bucket] += 1
    vs.buckets[item.id] = bucket
    prev = vs.rows.pop(item.id, None)
    if prev is not None:
        for f in prev[1]["flags"]:
            vs.flags[f] -= 1
    if state in TERMINAL and not include_terminal:
        return
    row = item_row(book, item, clock, limits)
    for f in row["flags"]:
        vs.flags[f] += 1
    vs.rows[item.id] = (_order(row), row)
    vs.until = _earliest(vs.until, _row_until(row, clock.now, limits.stale_hours))


def inbox_audit(
    book: InboxBook,
    clock: Clock,
    *,
    limits: Limits,
    loose: int = 0,
    include_terminal: bool = False,
) -> tuple[dict[str, Any], datetime | None]:
    """Counts, flags and the open items, ordered by priority then age; and the
    moment this answer would first change with no new letter and no new tic.

    Warm calls are cheap: the book keeps its last view, and while the tic and
    thresholds are the same and the clock has not passed the moment any row
    would change by itself, the next read redoes only the items touched by new
    letters. The view is a snapshot: its rows are copies, so neither a caller
    changing them nor a later read changes the other.
    """
    key = (clock.tic, limits, include_terminal)
    vs = book.view_state
    if vs is None or vs.key != key or not _fresh(vs.since, vs.until, clock.now):
        vs = ViewState(key, clock.now)
        for item in book.items.values():
            _place(vs, book, item, clock, limits)
    else:
        for iid in book.touched:
            _place(vs, book, book.items[iid], clock, limits)
        if book.touched:
            vs.ordered = None
    book.touched.clear()
    book.view_state = vs
    if vs.ordered is None:
        vs.ordered = [row for _, row in sorted(vs.rows.values(), key=lambda pair: pair[0])]
    drafts = book.pending_drafts()
    counts = {**vs.counts, OUTBOUND: len(drafts), LOOSE: loose}
    view = {
        "entity": book.entity,
        "current_tic": clock.tic,
        "counts": counts,
        "flags": dict(vs.flags),
        "items": [{**row, "flags": [*row["flags"]]} for row in vs.ordered],  # the one nested list
        "outbound": [
            {
                "id": d.id,
                "to": d.env.recipient,
                "subject": d.env.subject,
                "priority": d.env.priority,
                "category": d.env.category,
                "created_at": d.env.created_at,
            }
            for d in sorted(drafts, key=lambda d: order_key(d.env.created_at))  # stable: ties keep ledger order
        ],
    }
    return view, vs.until

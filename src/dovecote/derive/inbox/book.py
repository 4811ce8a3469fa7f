"""The entity-box fold: items, their lifecycle, drafts and what was sent.

Pure: an ``InboxBook`` is fed the letters of one entity's box and answers
questions; ``inbox_view.inbox_audit`` turns it into the audit the /inbox skill
prints, for a given current tic and wall-clock time. Nothing here opens a file
or reads a clock; the caller passes both.

Letters in an entity box:

* ``message``: an inbound item (the envelope; see ``envelope.py``);
* ``claim`` ... ``seen``: lifecycle links naming an item in ``ref``;
* ``draft``: an outbound draft written by this entity (EMIT);
* ``sent``: this entity sent a message (``message``), maybe delivering a
  draft (``ref``), maybe replying to an item (``reply_to``);
* ``surfaced``: a hook told a session of items (``derive.inbox.surfaced``), kept apart
  in ``told``: no item's state depends on it;
* anything else is kept but plays no part here.

Whether a response to an item exists is decided in ``derive/responses.py``.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

import msgspec

from dovecote.derive.inbox.item import Item as Item  # re-exported: the fold's items are its own
from dovecote.derive.inbox.state import FLAG_EXPIRED, FLAG_EXPIRING, FLAG_OVERDUE, FLAG_STALE, ViewState
from dovecote.derive.inbox.surfaced import KIND as SURFACED
from dovecote.derive.inbox.surfaced import told_in
from dovecote.derive.lifecycle import (
    LINK_KINDS,
    TERMINAL,
    Link,
    Replay,
    State,
    apply_link,
    effective,
)
from dovecote.errors import Refusal
from dovecote.model.envelope import Envelope
from dovecote.model.ids import ID_LENGTH
from dovecote.model.letters import Letter, is_hex, is_letter_id, text_or_none
from dovecote.model.vocab import LetterKind
from dovecote.model.vocab_delivery import DELIVERY_KINDS
from dovecote.roster.config import Limits
from dovecote.util.timeutil import parse_time

#: The kinds of letter the fold takes; every other letter in the box plays no part.
FOLDED = frozenset({*DELIVERY_KINDS, "draft", "sent", SURFACED, *LINK_KINDS})


class SentRecord(msgspec.Struct, frozen=True):
    id: str
    message: str | None
    draft: str | None
    to: str | None
    reply_to: str | None
    ts: str | None


class Draft(msgspec.Struct):
    id: str
    letter: Letter
    env: Envelope


class InboxBook:
    """The fold of one entity's box; incremental, deterministic."""

    def __init__(self, entity: str) -> None:
        self.entity = entity
        self.items: dict[str, Item] = {}
        self._alias: dict[str, str] | None = {}
        #: how a restored book unpacks its alias map on first use (see ``alias``)
        self._unpack_alias: Callable[[], dict[str, str]] | None = None
        self.drafts: dict[str, Draft] = {}
        self.sent: list[SentRecord] = []
        self.delivered: dict[str, SentRecord] = {}  # draft id -> sent record
        self.replies: dict[str, list[str]] = {}  # reply_to -> the messages received here that name it
        self._orphans: dict[str, list[Link]] = {}
        self.told: dict[str, set[str]] = {}  # session -> the item ids hooks announced to it (``surfaced``)
        self.touched: set[str] = set()  # items changed since the last inbox_audit
        self.view_state: ViewState | None = None
        #: every letter id folded: a letter read again (a duplicate line after a
        #: snapshot's mark, which the resumed read cannot know) is not folded twice
        self.ids: set[str] = set()
        #: the ids of the box's other letters (kinds not folded), so ``count`` counts each letter once
        self.other_ids: set[str] = set()
        #: a restored book's letters folded before its snapshot, kept packed (``pack_ids``): a cold read
        #: looks up the few new letters' ids there instead of building a set of every id in the box
        self.folded_before = b""
        #: how many distinct letters the box holds, and the last one's id: the box's cursor
        #: (``wait --after``) after exactly the letters this book shows, with no read of its own
        self.count = 0
        self.last: str | None = None
        #: which view the book's persisted snapshot holds (kept by ``foldcache``; None: not saved)
        self.saved_view: str | None = None

    @property
    def alias(self) -> dict[str, str]:
        """The id a foreign writer gave an item (its ``message_id``) -> the item's letter id.

        A book restored from a snapshot unpacks it on first use (``restore_alias``):
        a cold read after a lifecycle letter never needs it.
        """
        alias = self._alias
        if alias is None:
            assert self._unpack_alias is not None
            alias = self._alias = self._unpack_alias()
            self._unpack_alias = None
        return alias

    def restore_alias(self, unpack: Callable[[], dict[str, str]]) -> None:
        """Set the alias map to what ``unpack`` returns, called when the map is first used."""
        self._alias, self._unpack_alias = None, unpack

    def add(self, letters: Iterable[Letter]) -> None:
        dirty: set[str] = set()
        ids = self.ids
        others = self.other_ids
        before = self.folded_before
        for letter in letters:
            kind = letter.kind
            lid = letter.id
            if lid in ids or lid in others or (before and in_packed(before, lid)):
                continue
            self.count += 1
            self.last = lid
            if kind not in FOLDED:
                others.add(lid)
                continue
            ids.add(lid)
            if kind in DELIVERY_KINDS:  # a message, or work mail (a task or response)
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
            elif kind == LetterKind.draft:
                self.drafts[letter.id] = Draft(letter.id, letter, Envelope(letter.data()))
            elif kind == LetterKind.sent:
                d = letter.data()

                def s(k: str, d: dict[str, Any] = d) -> str | None:
                    return text_or_none(d.get(k))

                rec = SentRecord(letter.id, s("message"), s("ref"), s("to"), s("reply_to"), letter.ts)
                self.sent.append(rec)
                if rec.draft:
                    self.delivered.setdefault(rec.draft, rec)
            elif kind == SURFACED:
                told = told_in(letter)
                if told is not None:
                    self.told.setdefault(told[0], set()).update(told[1])
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



def pack_ids(ids: Iterable[str], packed: bytes = b"") -> tuple[bytes, list[str]]:
    """``ids`` merged with ``packed`` as one sorted run of ASCII letter ids (no separators),
    and the ids that are not letter ids (kept apart; a store gives none such)."""
    odd = [i for i in ids if not is_letter_id(i)]
    run = {i.encode("ascii") for i in ids if is_letter_id(i)}
    run.update(packed[i : i + ID_LENGTH] for i in range(0, len(packed), ID_LENGTH))
    return b"".join(sorted(run)), sorted(odd)


def in_packed(packed: bytes, lid: str) -> bool:
    """Whether ``lid`` is in a ``pack_ids`` run (a binary search over its fixed-width records)."""
    if not is_letter_id(lid):
        return False
    key = lid.encode("ascii")
    at = bisect_left(range(len(packed) // ID_LENGTH), key, key=lambda i: packed[i * ID_LENGTH : (i + 1) * ID_LENGTH])
    return packed[at * ID_LENGTH : (at + 1) * ID_LENGTH] == key


class Clock(msgspec.Struct, frozen=True):
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

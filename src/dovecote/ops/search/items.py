"""The search index's item table: each entity item's lifecycle state, kept as letters are tailed.

Which items a search leaves out (DONE, NACK) and what state a match shows
are the lifecycle of ``derive/lifecycle.py``, nothing else: an item's state is
``replay`` of its root (``inbox_item.initial``: WAIT, or DEFER when the message is
deferred to a tic) over every link letter naming it in ``ref``, exactly what
``InboxBook`` feeds it. Replay is order-free (siblings are sorted by time and
id), so the table keeps each item's links and replays them again whenever a
new one arrives, in whatever order and across however many index updates the
letters came; a link whose message has not arrived yet waits in the same row.

The table is a cache like the rest of the index: rebuilt from the ledgers,
proven equal to a cold fold (tests/ops/search/test_search_items.py, ``verify``). Rows:
``items(n, id, doc, fold)``: the box number, the item id, the rowid of its
message in ``docs`` (NULL while only links have arrived) and a ``Fold`` (the
root and the links, msgpack). ``term`` holds the doc rowids of the items whose
state is terminal, so the query leaves them out in SQL; a shown state is
replayed from the fold of the (at most ``limit``) matches.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

import msgspec

from dovecote.derive.inbox.item import initial
from dovecote.derive.lifecycle import TERMINAL, Link, Replay, State, effective, replay
from dovecote.model.letters import Letter
from dovecote.model.vocab import LetterKind

ITEMS_DDL = """
CREATE TABLE IF NOT EXISTS items(
    n INTEGER NOT NULL, id TEXT NOT NULL, doc INTEGER, fold BLOB NOT NULL, PRIMARY KEY(n, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS term(rowid INTEGER PRIMARY KEY);
"""

_CHUNK = 500


class LinkRow(msgspec.Struct, array_like=True, frozen=True, omit_defaults=True):
    """What replay reads of one link (``Link``'s other fields never move a state)."""

    id: str
    kind: str
    prev: str
    ts: str
    tic: int | None = None
    until_tic: int | None = None
    until: str | None = None

    @classmethod
    def of(cls, link: Link) -> LinkRow:
        return cls(link.id, link.kind, link.prev, link.ts, link.tic, link.until_tic, link.until)

    def link(self, ref: str) -> Link:
        return Link(self.id, self.kind, ref, self.prev, self.ts, "", self.tic, self.until_tic, self.until)


class Fold(msgspec.Struct, array_like=True, omit_defaults=True):
    """One item's row: its root (None until the message arrives) and its links.

    The state itself is not kept: replaying a handful of links is cheaper than
    the bytes, and it cannot disagree with the rule.
    """

    init: str | None = None
    init_due: int | None = None
    links: list[LinkRow] = msgspec.field(default_factory=list)

    def replayed(self, item_id: str) -> Replay | None:
        """The item replayed from its root over its links (the one rule, ``lifecycle.replay``)."""
        if self.init is None:
            return None
        return replay(item_id, State(self.init), [lk.link(item_id) for lk in self.links], due_tic=self.init_due)

    def terminal(self, item_id: str) -> bool:
        if not self.links:  # nothing to replay: the root, which is never terminal (``inbox_item.initial``)
            return False
        r = self.replayed(item_id)
        return r is not None and r.state in TERMINAL

    def shown(self, item_id: str, tic: int | None, now: datetime) -> str | None:
        """The state at (tic, now): a DEFER come due reads as WAIT (``lifecycle.effective``)."""
        r = self.replayed(item_id)
        return None if r is None else str(effective(r, tic, now))


class _LinkKeys(msgspec.Struct):
    """The keys of a link line ``Link.from_data`` reads beyond the letter's own ``kind``, ``ref``
    and ``ts``; every other key of the line is skipped unparsed (no dict per line)."""

    prev: Any = None
    tic: Any = None
    until_tic: Any = None
    until: Any = None


_decode_link_keys = msgspec.json.Decoder(_LinkKeys).decode


def _int(v: object) -> int | None:
    """``Link``'s reading of a number field: an int (never a bool), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def wide(v: object) -> bool:
    """An integer beyond 64 bits, which msgspec keeps exact and ``Letter.data`` does not."""
    return isinstance(v, int) and not -(1 << 63) <= v < (1 << 64)


def link_row(letter: Letter) -> tuple[str, LinkRow]:
    """(the item it names, what replay reads of it) for one link letter, as ``Link.from_data``
    reads the whole line; a line the typed decoder refuses, or a number wider than 64 bits
    (which the whole-line reader may not keep exact), is read whole."""
    try:
        k = _decode_link_keys(letter.raw)
    except (msgspec.DecodeError, ValueError):
        k = None
    if k is None or wide(k.tic) or wide(k.until_tic):
        link = Link.from_data(letter.id, letter.data())
        return link.ref, LinkRow.of(link)
    ref = letter.ref or ""
    prev = k.prev if isinstance(k.prev, str) else None
    until = k.until if isinstance(k.until, str) else None
    return ref, LinkRow(letter.id, letter.kind or "", prev or letter.ref or "", letter.ts or "", _int(k.tic),
                        _int(k.until_tic), until)


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(Fold).decode


def decode(blob: bytes) -> Fold:
    return _decode(blob)


def load(conn: sqlite3.Connection, n: int, ids: Iterable[str]) -> dict[str, tuple[int | None, Fold]]:
    """The rows of these items of box ``n`` that exist."""
    out: dict[str, tuple[int | None, Fold]] = {}
    want = list(ids)
    for i in range(0, len(want), _CHUNK):
        part = want[i : i + _CHUNK]
        marks = ",".join("?" * len(part))
        for iid, doc, blob in conn.execute(
            f"SELECT id, doc, fold FROM items WHERE n = ? AND id IN ({marks})", [n, *part]
        ):
            out[iid] = (doc, _decode(blob))
    return out


class Batch:
    """The item rows one tail of one box changes, written in one go by ``write``.

    ``fresh``: the box has no rows yet (a first index, or one dropped), so
    nothing needs loading. Messages are added with the doc rowid ``docs`` gave
    them; links with the ids they name.
    """

    def __init__(self, conn: sqlite3.Connection, n: int, *, fresh: bool) -> None:
        self.conn, self.n, self.fresh = conn, n, fresh
        self.rows: dict[str, tuple[int | None, Fold]] = {}
        self.was_terminal: set[int] = set()
        self._links: dict[str, list[LinkRow]] = {}

    def prepare(self, letters: Iterable[Letter], link_kinds: frozenset[str]) -> set[str]:
        """Read the links among ``letters`` and load every row they or the messages touch;
        returns the ids of the messages already indexed (a replayed tail skips them)."""
        message_ids: list[str] = []
        for letter in letters:
            if letter.kind == LetterKind.message:
                message_ids.append(letter.id)
            elif letter.kind in link_kinds:
                ref, row = link_row(letter)
                self._links.setdefault(ref, []).append(row)
        if not self.fresh:
            self.rows = load(self.conn, self.n, {*message_ids, *self._links})
            self.was_terminal = {doc for i, (doc, f) in self.rows.items() if doc is not None and f.terminal(i)}
        return {i for i in message_ids if i in self.rows and self.rows[i][0] is not None}

    def message(self, item_id: str, defer_until_tic: int | None, doc: int) -> None:
        """The item's message arrived: its root (``inbox_item.initial``) and its doc rowid."""
        init, due = initial(defer_until_tic)
        _, fold = self.rows.get(item_id) or (None, Fold())
        fold.init, fold.init_due = str(init), due
        self.rows[item_id] = (doc, fold)

    def write(self) -> None:
        self.store(self.planned())

    def planned(self) -> Planned:
        """The rows ``write`` writes, worked out without touching the connection."""
        for ref, new in self._links.items():
            doc, fold = self.rows.get(ref) or (None, Fold())
            have = {lk.id for lk in fold.links}
            fold.links.extend(lk for lk in new if lk.id not in have)
            self.rows[ref] = (doc, fold)
        done: list[tuple[int]] = []
        for iid, (doc, fold) in self.rows.items():
            if doc is not None and fold.terminal(iid):
                done.append((doc,))
        undone = self.was_terminal - {d for (d,) in done}
        items = [(self.n, iid, doc, _encode(fold)) for iid, (doc, fold) in sorted(self.rows.items())]
        return Planned(items, done, [(d,) for d in undone])

    def store(self, p: Planned) -> None:
        conn = self.conn
        conn.executemany("INSERT OR REPLACE INTO items(n, id, doc, fold) VALUES (?, ?, ?, ?)", p.items)
        conn.executemany("INSERT OR IGNORE INTO term(rowid) VALUES (?)", p.done)
        conn.executemany("DELETE FROM term WHERE rowid = ?", p.undone)


class Planned(NamedTuple):
    """One batch's writes: the item rows, the doc rowids now terminal, those no longer."""

    items: list[tuple[int, str, int | None, bytes]]
    done: list[tuple[int]]
    undone: list[tuple[int]]


def drop(conn: sqlite3.Connection, n: int) -> None:
    """Forget box ``n``'s items and terminal marks (its docs are dropped by the caller)."""
    conn.execute("DELETE FROM term WHERE rowid IN (SELECT doc FROM items WHERE n = ? AND doc IS NOT NULL)", (n,))
    conn.execute("DELETE FROM items WHERE n = ?", (n,))


def states(
    conn: sqlite3.Connection, wanted: Iterable[tuple[int, str]], tic: int | None, now: datetime
) -> dict[tuple[int, str], str | None]:
    """The shown state of each (box number, item id): one read per box."""
    by_box: dict[int, list[str]] = {}
    for n, iid in wanted:
        by_box.setdefault(n, []).append(iid)
    out: dict[tuple[int, str], str | None] = {}
    for n, ids in by_box.items():
        rows = load(conn, n, ids)
        for iid in ids:
            found = rows.get(iid)
            out[(n, iid)] = found[1].shown(iid, tic, now) if found is not None else None
    return out

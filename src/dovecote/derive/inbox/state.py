"""The inbox view's held state (``ViewState``) and its vocabulary: buckets, flags, a row's order
and the lines each row adds to the injection block.

Pure, and a leaf of the inbox modules: the book (``inbox``) holds its last view,
the view (``inbox_view``) patches it, the snapshot (``inbox_snapshot``) packs it,
and none of them is imported here, so each can import this one.

A row's injection lines are decided once per row. The block
(``ops.mail.injection.inbox_injection``) lists, in view order, the waiting urgent
items, then the active ones, then (when tics are known) the stale ones; each
row gives at most one line to each list. So the view state keeps these three
lines beside each row (``ViewState.rows``, persisted in the fold snapshot) and a
cold read after a new letter renders the block by joining strings, without
decoding or copying six thousand rows. Both renderings call ``row_lines``, so
they print the same bytes by construction (and tests/ops/mail/test_injection_path.py
checks it over random boxes and clocks).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from dovecote.derive.lifecycle import TERMINAL, State
from dovecote.model.textsafe import one_line, subject_line

FLAG_STALE = "STALE"
FLAG_OVERDUE = "OVERDUE REMINDER"
FLAG_EXPIRING = "EXPIRING SOON"
FLAG_EXPIRED = "EXPIRED"
FLAGS = (FLAG_STALE, FLAG_OVERDUE, FLAG_EXPIRING, FLAG_EXPIRED)
#: The priorities a Stop hook interrupts a busy agent for (and the block lists first).
URGENT = ("high", "urgent")

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

#: A row's lines: (waiting urgent, active, stale); None where the row adds none.
Lines = tuple[str | None, str | None, str | None]
#: Where a row stands in the view: priority rank, source tic, creation instant, id (unique: the id is last).
Order = tuple[int, float, datetime, str]
#: A row as the view holds it: a dict, or its msgpack bytes until first read (restored from a snapshot).
Held = dict[str, Any] | msgspec.Raw

_decode_row = msgspec.msgpack.Decoder(dict[str, Any]).decode
_decode_bin = msgspec.msgpack.Decoder(bytes).decode


def row_of(held: Held) -> dict[str, Any]:
    """The row itself (decoded, if it was held packed: a ``bin`` holding the row's msgpack)."""
    return held if isinstance(held, dict) else _decode_row(_decode_bin(held))


def row_lines(row: dict[str, Any]) -> Lines:
    """The three lines ``row`` can add to the block (see the module docstring)."""
    state = row["state"]
    urgent = active = stale = None
    if state == "WAIT" and row["priority"] in URGENT:
        when = f", tic {row['source_tic']}" if row["source_tic"] is not None else ""
        sender = one_line(row["sender"]) or "?"
        urgent = f"  - [{row['priority'].upper()}] {subject_line(row['subject'])} (from: {sender}{when})"
    if state == "ACTIVE":
        when = f" (tic {row['entered_tic']})" if row["entered_tic"] is not None else ""
        active = f"  - [ACTIVE] {subject_line(row['subject'])}{when}"
    if FLAG_STALE in row["flags"]:
        stale = f"  - [ATTENTION] {subject_line(row['subject'])} — stale {row['in_state_tics']} tics in {state}"
    return urgent, active, stale


def block(entity: str, counts: dict[str, int], tics_known: bool, lines: list[Lines]) -> str:
    """The injection block: the header, then each row's lines (``lines`` in view order)."""
    who = one_line(entity)
    if not (counts["inbound"] or counts["processing"] or counts["deferred"]):
        return f"[INBOX: {who}] Empty.\n"
    out = [f"[INBOX: {who}] {counts['inbound']} new, {counts['processing']} active, {counts['deferred']} deferred."]
    out += [u for u, _, _ in lines if u is not None]
    out += [a for _, a, _ in lines if a is not None]
    if tics_known:
        out += [s for _, _, s in lines if s is not None]
    return "\n".join(out) + "\n"


class ViewState(msgspec.Struct):
    """The last view of a book, kept so the next read redoes only what changed.

    ``since``: when it was built whole; ``placed``: the latest clock a row was placed at (a read
    at an earlier clock builds it whole again: a row says what it says from then on);
    ``rows``: each shown item's order, row (``Held``) and injection lines;
    ``untils``: each shown row's own moment to change (``inbox_view._row_until``; absent: none), whose
    earliest is ``until`` or later (a row placed again may leave ``until`` early, never late);
    ``ordered``: the shown ids in view order (None: to sort again);
    ``replaced``: rows placed again for their own moment since the view was restored or saved
    (``foldcache`` writes the snapshot again past a few hundred; not persisted).
    """

    key: tuple[Any, ...]
    since: datetime
    placed: datetime
    until: datetime | None = None
    buckets: dict[str, str] = msgspec.field(default_factory=dict)
    rows: dict[str, tuple[Order, Held, Lines]] = msgspec.field(default_factory=dict)
    counts: dict[str, int] = msgspec.field(default_factory=lambda: dict.fromkeys(BUCKET_NAMES, 0))
    flags: dict[str, int] = msgspec.field(default_factory=lambda: dict.fromkeys(FLAGS, 0))
    ordered: list[str] | None = None
    untils: dict[str, datetime] = msgspec.field(default_factory=dict)
    replaced: int = 0

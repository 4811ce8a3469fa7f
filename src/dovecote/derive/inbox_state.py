"""The inbox view's held state (``ViewState``) and its vocabulary: buckets, flags, a row's order.

Pure, and a leaf of the inbox modules: the book (``inbox``) holds its last view,
the view (``inbox_view``) patches it, the snapshot (``inbox_snapshot``) packs it,
and none of them is imported here, so each can import this one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from dovecote.derive.inbox_lines import STALE, Lines
from dovecote.derive.lifecycle import TERMINAL, State

FLAG_STALE = STALE
FLAG_OVERDUE = "OVERDUE REMINDER"
FLAG_EXPIRING = "EXPIRING SOON"
FLAG_EXPIRED = "EXPIRED"
FLAGS = (FLAG_STALE, FLAG_OVERDUE, FLAG_EXPIRING, FLAG_EXPIRED)

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

#: Where a row stands in the view: priority rank, source tic, creation instant, id (unique: the id is last).
Order = tuple[int, float, datetime, str]
#: A row as the view holds it: a dict, or its msgpack bytes until first read (restored from a snapshot).
Held = dict[str, Any] | msgspec.Raw

_decode_row = msgspec.msgpack.Decoder(dict[str, Any]).decode
_decode_bin = msgspec.msgpack.Decoder(bytes).decode


def row_of(held: Held) -> dict[str, Any]:
    """The row itself (decoded, if it was held packed: a ``bin`` holding the row's msgpack)."""
    return held if isinstance(held, dict) else _decode_row(_decode_bin(held))


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

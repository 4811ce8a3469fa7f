"""``verify``: delete every cache, rebuild it from the ledgers, and prove that
every read answers byte for byte the same as before (DESIGN 1.1).

The "before" answers come from the caller's handle, warm readers and folds
and persisted caches included; the "after" answers from a brand-new handle on
a home whose caches were deleted. Any difference means a cache was an
authority, which the law forbids, and verify exits 1 naming what differed.

Both runs read one fixed snapshot of the ledgers: the settled size of every
ledger is taken when verify starts (``FileStore.snapshot``), and every read of
either handle stops there (``FileStore.bounded``), so a letter appended while
verify runs is never a difference; it is simply not yet read. The warm caches
the "before" run fills may then lag the ledgers, which their own incremental
reads catch up with afterwards, as after any read.

Folder views are never deleted wholesale: a person may keep hand-dropped files
beside the view's entries. Instead each entity's view is written by the warm
handle, then rebuilt by the fresh one (every owned entry removed and rewritten),
and the owned files must hash the same both times (``view entity:<id>``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from dovecote.names import Address

if TYPE_CHECKING:
    from dovecote.api import Dovecote
    from dovecote.store import Where


@dataclass
class VerifyResult:
    ok: bool
    checked: list[str]
    differ: list[dict[str, Any]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checked": self.checked, "differ": self.differ, "deleted": self.deleted}


def answers(dc: Dovecote, now: datetime) -> dict[str, bytes]:
    """Every read verify compares, as the bytes a face would print.

    ``now`` pins doctor's 7-day window so both runs use the same instant.
    """
    out: dict[str, bytes] = {
        # first, while the handle has no warm fold: answered from the fold snapshot in
        # cache/ when there is one (the fresh run has none: it folds from nothing)
        "sweep": b"".join(dc.sweep(distribute=False).json_chunks()),
        "sweep --all": orjson.dumps(dc.sweep(distribute=False, include_all=True).to_dict()),
        "doctor": orjson.dumps(dc.doctor(now=now)),
    }
    boxes = [*dc.report_boxes(), *(("entity:" + e.id) for e in dc.roster.entities)]
    for addr in boxes:
        out[f"box {addr} --all"] = orjson.dumps(dc.box(addr, include_all=True).to_dict())
    for e in dc.roster.entities:
        out[f"inbox {e.id} --all"] = orjson.dumps(dc.inbox(e.id, now=now, include_terminal=True, direction="both"))
    for word in search_words(dc):
        out[f"search {word} --include-terminal"] = orjson.dumps(
            dc.search(word, include_terminal=True, now=now, limit=1000)
        )
    return out


def ledgers(dc: Dovecote) -> list[Where]:
    """Every ledger a compared read can touch: the spool, the report boxes, the entity boxes."""
    return ["spool", *dc.report_boxes(), *(Address("entity", e.id) for e in dc.roster.entities)]


def search_words(dc: Dovecote, most: int = 5) -> list[str]:
    """A few words the search index must find, taken from the ledgers themselves."""
    from dovecote.ops.books import book_for

    words: set[str] = set()
    for e in dc.roster.entities:
        for item in book_for(dc, e.id).items.values():
            words.update(w.lower() for w in item.env.subject.split() if w.isalnum() and len(w) >= 4)
    return sorted(words)[:most]


def view_digests(dc: Dovecote, now: datetime, *, rebuild: bool) -> dict[str, bytes]:
    """Write every entity's view (``rebuild``: from scratch) and hash its owned files."""
    from dovecote.ops import view as view_op

    view_op.view(dc, now=now, rebuild=rebuild)
    return {f"view entity:{e.id}": view_op.owned_digest(dc, e.id).encode() for e in dc.roster.entities}


def _first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def verify(dc: Dovecote) -> VerifyResult:
    from dovecote.api import Dovecote

    now = datetime.now(UTC)
    deleted = []
    if dc.layout.cache.is_symlink():  # a link is no cache of ours (reads refuse it): drop the link, never its target
        dc.layout.cache.unlink()
        deleted.append(str(dc.layout.cache))
    bounds = dc.store.snapshot(ledgers(dc))
    with dc.store.bounded(bounds):
        before = {**answers(dc, now), **view_digests(dc, now, rebuild=False)}
    if dc.layout.cache.exists():
        shutil.rmtree(dc.layout.cache)
        deleted.append(str(dc.layout.cache))
    fresh = Dovecote(dc.layout.root)
    with fresh.store.bounded(bounds):
        after = {**view_digests(fresh, now, rebuild=True), **answers(fresh, now)}
    differ = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name, b""), after.get(name, b"")
        if a != b:
            differ.append({
                "read": name,
                "bytes_before": len(a),
                "bytes_after": len(b),
                "first_difference_at": _first_difference(a, b),
            })
    dc.warm.clear()
    return VerifyResult(not differ, sorted(after), differ, deleted)

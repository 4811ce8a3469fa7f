"""``verify``: delete every cache, rebuild it from the ledgers, and prove that
every read answers byte for byte the same as before (DESIGN 1.1).

The "before" answers come from the caller's context, warm readers and folds
and persisted caches included; the "after" answers from a cold copy of it
(``Context.cold``: the roster read again, a new store, no warm folds) on a
home whose caches were deleted. Any difference means a cache was an
authority, which the law forbids, and verify exits 1 naming what differed.

Both runs read one fixed snapshot of the ledgers: the settled size of every
ledger is taken when verify starts (``FileStore.snapshot``), and every read of
either context stops there (``FileStore.bounded``), so a letter appended while
verify runs is never a difference; it is simply not yet read. The warm caches
the "before" run fills may then lag the ledgers, which their own incremental
reads catch up with afterwards, as after any read.

The persisted folds get a run of their own: after the "before" answers, a
cold context with the caches still in place answers every inbox from its
snapshot in ``cache/folds`` (plus the letters after its mark), and each must
equal the inbox folded from nothing (``inbox <id> --all, from its snapshot``).
The hook's injection block is read first of all, from the snapshot's own view
and the lines kept beside its rows, and must equal the block folded from
nothing (``inbox <id> --format injection, from its snapshot``).

Folder views are never deleted wholesale: a person may keep hand-dropped files
beside the view's entries. Instead each entity's view is written by the warm
context, then rebuilt by the cold one (every owned entry removed and rewritten),
and the owned files must hash the same both times (``view entity:<id>``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

import orjson

from dovecote.model.addresses import Address
from dovecote.model.results import builtins
from dovecote.store.capability import Capability, can
from dovecote.store.core import Store
from dovecote.util import fileops

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Where
    from dovecote.store.files import FileStore


@dataclass
class VerifyResult:
    ok: bool
    checked: list[str]
    differ: list[dict[str, Any]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checked": self.checked, "differ": self.differ, "deleted": self.deleted}


def answers(ctx: Context, now: datetime) -> dict[str, bytes]:
    """Every read verify compares, as the bytes a face would print.

    ``now`` pins doctor's 7-day window so both runs use the same instant.
    """
    from dovecote.ops.admin import doctor
    from dovecote.ops.cases import cases
    from dovecote.ops.delivery import trackers as tracker_read
    from dovecote.ops.mail import inbox
    from dovecote.ops.reports.box import box
    from dovecote.ops.reports.sweep import sweep
    from dovecote.ops.search import query as search

    out: dict[str, bytes] = {
        # first, while the context has no warm fold: answered from the fold snapshot in
        # cache/ when there is one (the fresh run has none: it folds from nothing)
        "sweep": b"".join(sweep(ctx, do_distribute=False).json_chunks()),
        "sweep --all": orjson.dumps(sweep(ctx, do_distribute=False, include_all=True).to_dict()),
        "doctor": orjson.dumps(builtins(doctor.doctor(ctx, now))),
        "cases": orjson.dumps(builtins(cases.cases(ctx))),  # a case is derived, its cache no authority
        "claims": orjson.dumps(builtins(cases.claims(ctx))),
    }
    for addr in [*ctx.roster.report_boxes(), *(Address("entity", e.id) for e in ctx.roster.entities)]:
        out[f"box {addr} --all"] = orjson.dumps(box(ctx, addr, include_all=True).to_dict())
    for e in ctx.roster.entities:
        view, _ = inbox.read_inbox(ctx, e.id, now=now, include_terminal=True, direction="both")
        out[f"inbox {e.id} --all"] = orjson.dumps(view.to_dict())
    # the warm tracker folds (fed incrementally, and under each compare-and-swap) are a cache too
    out["trackers --all"] = orjson.dumps(builtins(tracker_read.trackers(ctx, None, None, None, 2**31, now)))
    for word in search_words(ctx):
        for every in (True, False):  # with the filter too: the index keeps the items' states
            out[f"search {word}" + (" --include-terminal" if every else "")] = orjson.dumps(
                builtins(search.search(ctx, word, include_terminal=every, now=now, limit=1000))
            )
    return out


SNAPSHOT = "inbox {} --all, from its snapshot"
#: The hook's read (``inbox E --format injection``): from the snapshot, its rows' lines as kept there.
INJECTION = "inbox {} --format injection, from its snapshot"


def injections(ctx: Context, now: datetime) -> dict[str, bytes]:
    """Every entity's injection block, as the hook's cold path reads it (from the snapshot, on a
    context with no warm fold yet)."""
    from dovecote.ops.mail import inbox

    return {INJECTION.format(e.id): inbox.read_injection(ctx, e.id, None, now, "inbound", False)[0].encode()
            for e in ctx.roster.entities}


def inbox_answers(ctx: Context, now: datetime) -> dict[str, bytes]:
    """Every entity's inbox, as ``answers`` reads it, under the name of the snapshot run."""
    from dovecote.ops.mail import inbox

    return {
        SNAPSHOT.format(e.id): orjson.dumps(inbox.read_inbox(ctx, e.id, now=now, include_terminal=True,
                                                             direction="both")[0].to_dict())
        for e in ctx.roster.entities
    }


def ledgers(ctx: Context) -> list[Where]:
    """Every ledger a compared read can touch: the spool, the report boxes, the entity boxes."""
    return ["spool", *ctx.roster.report_boxes(), *(Address("entity", e.id) for e in ctx.roster.entities)]


def search_words(ctx: Context, most: int = 5) -> list[str]:
    """A few words the search index must find, taken from the ledgers themselves."""
    from dovecote.ops.warm import inbox as foldcache

    words: set[str] = set()
    for e in ctx.roster.entities:
        for item in foldcache.book_for(ctx, e.id).items.values():
            words.update(w.lower() for w in item.env.subject.split() if w.isalnum() and len(w) >= 4)
    return sorted(words)[:most]


def view_digests(ctx: Context, now: datetime, *, rebuild: bool) -> dict[str, bytes]:
    """Write every entity's view (``rebuild``: from scratch) and hash its owned files."""
    from dovecote.ops.tree import view as view_op

    view_op.view(ctx, now=now, rebuild=rebuild)
    return {f"view entity:{e.id}": view_op.owned_digest(ctx, e.id).encode() for e in ctx.roster.entities}


def _first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


@contextmanager
def bounded(store: Store, bounds: dict[Any, int]) -> Iterator[None]:
    """Reads of ``store`` stop at ``bounds`` (files only: a database's reads are not bounded, so a
    letter sent while verify runs on PostgreSQL can be a difference; verify a quiet home)."""
    if can(store, Capability.bounded_reads):
        with cast("FileStore", store).bounded(bounds):
            yield
    else:
        yield


def verify(ctx: Context) -> VerifyResult:

    now = ctx.now()
    deleted = []
    if ctx.layout.cache.is_symlink():  # a link is no cache of ours (reads refuse it): drop the link, never its target
        fileops.unlink(ctx.layout.cache)
        deleted.append(str(ctx.layout.cache))
    bounded_reads = can(ctx.store, Capability.bounded_reads)
    bounds = cast("FileStore", ctx.store).snapshot(ledgers(ctx)) if bounded_reads else {}
    with bounded(ctx.store, bounds):
        # the hook's blocks first, while no read has replaced the snapshot's view (and its rows' lines)
        before = {**injections(ctx, now), **answers(ctx, now), **view_digests(ctx, now, rebuild=False)}
    restored = ctx.cold()  # no warm fold: every inbox starts from its snapshot, as a cold process does
    with bounded(restored.store, bounds):
        before.update(inbox_answers(restored, now))
    if ctx.layout.cache.exists():
        fileops.remove_tree(ctx.layout.cache)
        deleted.append(str(ctx.layout.cache))
    fresh = ctx.cold()
    with bounded(fresh.store, bounds):
        after = {**view_digests(fresh, now, rebuild=True), **answers(fresh, now)}
    after.update({SNAPSHOT.format(e.id): after[f"inbox {e.id} --all"] for e in fresh.roster.entities})
    with bounded(fresh.store, bounds):
        after.update(injections(fresh, now))  # folded from nothing
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
    checked = sorted(after)
    if can(ctx.store, Capability.database_rows):  # what a database holds true beyond the reads (loads its driver)
        from dovecote.ops.admin.verify_pg import database_checks

        more_checked, more_differ = database_checks(ctx)
        checked += more_checked
        differ += more_differ
    ctx.warm.clear()
    return VerifyResult(not differ, checked, differ, deleted)

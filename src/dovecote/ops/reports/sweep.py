"""``sweep``: fates across every box (``box``, within one, is ``ops.reports.box``).

The sweep unions the spool and every reachable report box (home and the
projects), counts each letter once, names every box it cannot reach, reports
every malformed or torn line, and derives fates with ``derive.fates``. A warm
handle feeds the fold only the letters appended since its last sweep; the
answer is the same as a cold sweep (``verify`` checks it byte for byte).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dovecote.derive.fates import FateBook
from dovecote.errors import StoreError
from dovecote.ledger.jsonl import Defect
from dovecote.model.addresses import Address
from dovecote.ops.reports.distribute import Distribution, distribute
from dovecote.ops.reports.sweeprows import BATCH, Row, indented_chunks, make_rows, open_dicts, owners, whats
from dovecote.ops.warm import sweep as sweepcache
from dovecote.ops.warm.registry import Kind
from dovecote.store.capability import Capability, can
from dovecote.util.osutil import collector_paused as _collector_paused  # a sweep makes a million objects, frees none

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Cursor, Where

SCHEMA = "dovecote-sweep-v1"
Progress = Callable[[str, int, int], None]


@dataclass
class SweepState:
    """The warm union of the sweep's sources: the fate book and where each source's read stopped."""

    key: tuple[object, ...] = ()
    book: FateBook | None = None
    fed: dict[str, Cursor] = field(default_factory=dict)
    lent: bool = False  # a SweepResult holds ``book``: the next sweep feeds a copy


SWEEP: Kind[SweepState] = Kind("sweep")


Boxes = list[tuple[str, dict[str, Any]]]  # (label, reader index), sorted by label


def _book_batches(book: FateBook, ids: list[str], boxes: Boxes) -> Iterator[list[dict[str, Any]]]:
    """The rows of ``ids`` from the full fold, a batch at a time: ``what`` decoded for the
    whole batch, boxes found by one set intersection per box."""
    refs = book.referrers()
    fate = book.fate_of
    for n in range(0, len(ids), BATCH):
        letters = [book.entries[i] for i in ids[n : n + BATCH]]
        owner = owners(ids[n : n + BATCH], boxes)  # type: ignore[arg-type]
        yield [
            {
                "id": lt.id,
                "ts": lt.ts,
                "agent": lt.agent,
                "class": lt.klass,
                "repo": lt.repo,
                "brain": lt.brain,
                "tool": lt.tool,
                "what": what,
                "answers": list(lt.answers or ()),
                "answered_by": sorted(set(refs.get(lt.id) or ())),
                "fate": fate(lt.id),
                "box": owner.get(lt.id),
            }
            for lt, what in zip(letters, whats(letters), strict=True)
        ]


def counts_of(book: FateBook) -> dict[str, int]:
    return {k: book.counts[k] for k in ("wet_ink", "in_flight", "fired_clay", "external")}


@dataclass
class SweepResult:
    """One sweep's answer, a snapshot: the numbers are taken when the sweep ends, and its
    book and box indexes are never fed again (the next warm sweep feeds a copy of the
    book), so no later call changes it. The rows are built on demand, from the full fold
    (``book``) or from the fold snapshot (``resumed``, which holds the open rows ready)."""

    spool_path: str
    distribution: Distribution | None
    book: FateBook | None
    boxes: Boxes
    unreachable: list[str]
    malformed: list[Defect]
    include_all: bool = False
    resumed: sweepcache.Resumed | None = None
    #: the open rows and their referrers (no receipt: it would close them), built for the snapshot
    ready: tuple[list[Row], dict[str, list[str]]] | None = None
    #: recurrence and kindless (``ops.cases.overlay``), computed when first shown: a caller that
    #: asks only for counts or open ids never folds the cases
    overlay: Callable[[], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        fold: FateBook | sweepcache.Resumed | None = self.book if self.book is not None else self.resumed
        assert fold is not None
        self.total: int = fold.total
        self.open: int = fold.open
        self.receipts: int = fold.receipts
        self.misdelivery: int = fold.misdelivery
        self._counts = dict(fold.counts)

    @property
    def counts(self) -> dict[str, int]:
        return {k: self._counts[k] for k in ("wet_ink", "in_flight", "fired_clay", "external")}

    @property
    def cases(self) -> dict[str, Any]:
        if self.overlay is not None:
            self._cases, self.overlay = self.overlay(), None
        return getattr(self, "_cases", {})

    def letter_ids(self) -> list[str]:
        if self.resumed is not None:
            return [r.id for r in self.resumed.sorted_rows()]
        assert self.book is not None
        with _collector_paused():
            return self.book.all_letters() if self.include_all else self.book.open_letters()

    def _batches(self) -> Iterator[list[dict[str, Any]]]:
        if self.resumed is not None:
            return self.resumed.batches()
        assert self.book is not None
        if self.ready is not None:
            return open_dicts(self.ready[0], self.book.picked, self.ready[1])
        return _book_batches(self.book, self.letter_ids(), self.boxes)

    def letters(self) -> list[dict[str, Any]]:
        with _collector_paused():
            return [row for batch in self._batches() for row in batch]

    def _head(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "spool_path": self.spool_path,
            "distribution": self.distribution.to_dict() if self.distribution else None,
            "total": self.total,
            "open": self.open,
            "counts": self.counts,
            "receipts": self.receipts,
            "misdelivery": self.misdelivery,
            **self.cases,
            "unreachable": self.unreachable,
            "malformed": [d.to_dict() for d in self.malformed],
        }

    def to_dict(self) -> dict[str, Any]:
        return {**self._head(), "letters": self.letters()}

    def json_chunks(self) -> Iterator[bytes]:
        """``orjson.dumps(self.to_dict(), option=OPT_INDENT_2) + b"\\n"``, byte for byte,
        in chunks: the rows are serialized a batch at a time, never all at once."""
        yield from indented_chunks(self._head(), "letters", self._batches())


def _fold(
    ctx: Context, sources: list[Where], unreachable: list[str], progress: Progress | None
) -> tuple[FateBook, Boxes, list[Defect], bool] | None:
    """Feed the warm book what is new in each source; None if a file was replaced.
    The flag says whether the book was folded from nothing (and every source read)."""
    st = ctx.warm.get(SWEEP) or ctx.warm.put(SWEEP, SweepState())
    key = (ctx.roster.signature, tuple(str(s) for s in sources))
    fresh = key != st.key or st.book is None
    if fresh:
        st = ctx.warm.put(SWEEP, SweepState(key, FateBook(ctx.roster.foreign_markers)))
    assert st.book is not None
    if st.lent:  # a result still reads this book: leave it as it was, feed a copy
        st.book, st.lent = st.book.copy(), False
    book = st.book
    malformed: list[Defect] = []
    boxes: Boxes = []
    for n, where in enumerate(sources, 1):
        label = str(where)
        cursor = st.fed.get(label)
        try:
            read = ctx.store.read(where, after=cursor)
        except StoreError:
            unreachable.append(label)
            fresh = False  # nothing to snapshot: not every source was folded
            continue
        if cursor is not None and read.fresh:  # replaced since: the union is folded again
            ctx.warm.pop(SWEEP)
            return None
        if cursor is not None:
            book.add(read.letters)
        else:
            book.add_source(read.index)
        st.fed[label] = read.cursor
        if isinstance(where, Address):
            boxes.append((label, dict(read.index)))  # the store's index grows in place; the result must not
        malformed += [*read.defects, *([read.torn] if read.torn else [])]
        if progress:
            progress(label, n, len(sources))
    boxes.sort(key=lambda b: b[0])
    st.lent = True
    return book, boxes, malformed, fresh


def sweep(
    ctx: Context,
    *,
    do_distribute: bool = True,
    include_all: bool = False,
    progress: Progress | None = None,
    persisted: bool = True,
) -> SweepResult:
    """Fates across the spool and every reachable box.

    ``persisted``: a handle that has not swept yet may answer the open letters
    from the fold snapshot in ``cache/`` (reading only what was appended since),
    and a sweep folded from nothing writes one. Callers that need the letters
    themselves (``result.book``) pass False.
    """
    with _collector_paused(), ctx.warm.lock_of(SWEEP):
        return _sweep(ctx, do_distribute, include_all, progress, persisted)


def _sources(ctx: Context) -> tuple[list[Where], list[str]]:
    sources: list[Where] = ["spool"]
    unreachable: list[str] = []
    for addr in ctx.roster.report_boxes():
        if ctx.store.reachable(addr):
            sources.append(addr)
        else:
            unreachable.append(str(addr))
    return sources, unreachable


def _sweep(
    ctx: Context, do_distribute: bool, include_all: bool, progress: Progress | None, persisted: bool
) -> SweepResult:
    receipt = distribute(ctx) if do_distribute else None
    overlay = _cases(ctx, do_distribute, persisted)  # escalates now; the overlay is read when shown
    sources, unreachable = _sources(ctx)
    files = can(ctx.store, Capability.lasting_marks)
    if persisted and files and not include_all and SWEEP not in ctx.warm:
        resumed = _resume(ctx, sources, progress)
        if resumed is not None:
            fold, malformed = resumed
            return SweepResult(
                str(ctx.layout.spool), receipt, None, [], sorted(set(unreachable)), malformed, False, fold,
                overlay=overlay,
            )
    folded = _fold(ctx, sources, unreachable, progress)
    if folded is None:  # a ledger was replaced under us: fold everything again
        folded = _fold(ctx, sources, unreachable, progress)
        assert folded is not None
    book, boxes, malformed, fresh = folded
    result = SweepResult(
        spool_path=str(ctx.layout.spool),
        distribution=receipt,
        book=book,
        boxes=boxes,
        unreachable=sorted(set(unreachable)),
        malformed=malformed,
        include_all=include_all,
        overlay=overlay,
    )
    if persisted and files and fresh:
        _persist(ctx, result, sources)
    return result


def _cases(ctx: Context, escalate: bool, persisted: bool) -> Callable[[], dict[str, Any]]:
    """Case intelligence's part of the sweep: a distributing sweep escalates and mints the
    monitors' letters first (they are then in what it sweeps); every sweep shows recurrence
    and kindless."""
    from dovecote.ops.cases import cases, monitors

    if escalate:
        cases.escalate(ctx)
        monitors.mint(ctx)
    return lambda: cases.overlay(ctx, persisted)


def _persist(ctx: Context, result: SweepResult, sources: list[Where]) -> None:
    """Snapshot a fold made from nothing; its open rows are the ones the result will list."""
    assert result.book is not None
    book = result.book
    keys = book.open_keys()  # the fold's own keys: no open letter's time is read again
    entries = book.entries
    rows = make_rows([entries[i] for i in book.open_letters()], result.boxes, keys)  # type: ignore[arg-type]
    st = ctx.warm.get(SWEEP)
    assert st is not None
    marks = [sweepcache.source_of(str(w), ctx.store.mark(w), ctx.store.read(w, after=st.fed.get(str(w))).defects)
             for w in sources]
    snap = sweepcache.from_book(result.book, rows, sweepcache.fold_key(ctx, sources), marks)
    if not result.include_all:
        result.ready = rows, snap.refs
    sweepcache.save(ctx, snap)


def _resume(
    ctx: Context, sources: list[Where], progress: Progress | None
) -> tuple[sweepcache.Resumed, list[Defect]] | None:
    """The sweep answered from its snapshot plus what was appended since; None: no usable snapshot."""
    key = sweepcache.fold_key(ctx, sources)
    snap = sweepcache.load(ctx, key)
    if snap is None or [s.label for s in snap.sources] != [str(w) for w in sources]:
        return None
    tails = []
    for where, src in zip(sources, snap.sources, strict=True):
        t = sweepcache.resume(ctx.store, where, src)
        if t is None:
            return None
        tails.append(t)
    fold = sweepcache.Resumed(snap, ctx.roster.foreign_markers)
    malformed: list[Defect] = []
    marks = []
    moved = False
    for n, (where, src, t) in enumerate(zip(sources, snap.sources, tails, strict=True), 1):
        fold.feed(sweepcache.box_label(where), t.letters)
        old = sweepcache.old_defects(src)
        malformed += [*old, *t.defects, *([t.torn] if t.torn else [])]
        mark = sweepcache.source_of(str(where), t.mark, t.defects)
        mark.defects[:0] = src.defects
        marks.append(mark)
        moved = moved or mark.mark != src.mark
        if progress:
            progress(str(where), n, len(sources))
    if moved:
        sweepcache.save(ctx, fold.snapshot(key, marks))
    return fold, malformed

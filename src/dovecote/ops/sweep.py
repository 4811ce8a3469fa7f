"""``sweep`` and ``box``: fates across every box, or within one.

The sweep unions the spool and every reachable report box (home and the
projects), counts each letter once, names every box it cannot reach, reports
every malformed or torn line, and derives fates with ``derive.fates``. A warm
handle feeds the fold only the letters appended since its last sweep; the
answer is the same as a cold sweep (``verify`` checks it byte for byte).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dovecote.derive.fates import FateBook
from dovecote.errors import StoreError
from dovecote.ledger import Defect
from dovecote.letters import Letter, text_or_none
from dovecote.names import Address
from dovecote.ops.distribute import Receipt, distribute
from dovecote.osutil import collector_paused as _collector_paused  # a sweep makes a million objects, frees none

if TYPE_CHECKING:
    from dovecote.context import Context
    from dovecote.store import Where

SCHEMA = "dovecote-sweep-v1"
Progress = Callable[[str, int, int], None]


@dataclass
class SweepState:
    key: tuple[object, ...] = ()
    book: FateBook | None = None
    fed: dict[str, tuple[int, int]] = field(default_factory=dict)
    lent: bool = False  # a SweepResult holds ``book``: the next sweep feeds a copy


Boxes = list[tuple[str, dict[str, Any]]]  # (label, reader index), sorted by label


def box_of(boxes: Boxes, lid: str) -> str | None:
    """The first box (by label) holding the letter; None when only the spool does."""
    for label, index in boxes:
        if lid in index:
            return label
    return None


def _row(book: FateBook, lid: str, boxes: Boxes) -> dict[str, Any]:
    letter = book.entries[lid]
    d = letter.data()

    return {
        "id": lid,
        "ts": letter.ts,
        "agent": letter.agent,
        "class": letter.klass,
        "repo": letter.repo,
        "brain": letter.brain,
        "tool": letter.tool,
        "what": text_or_none(d.get("what")),
        "answers": list(letter.answers or ()),
        "answered_by": book.answered_by(lid),
        "fate": book.fate_of(lid),
        "box": box_of(boxes, lid),
    }


def counts_of(book: FateBook) -> dict[str, int]:
    return {k: book.counts[k] for k in ("wet_ink", "in_flight", "fired_clay", "external")}


@dataclass
class SweepResult:
    """One sweep's answer, a snapshot: its book and box indexes are never fed again
    (the next warm sweep feeds a copy of the book), so no later call changes it."""

    spool_path: str
    distribution: Receipt | None
    book: FateBook
    boxes: Boxes
    unreachable: list[str]
    malformed: list[Defect]
    include_all: bool = False

    @property
    def total(self) -> int:
        return self.book.total

    @property
    def open(self) -> int:
        return self.book.open

    @property
    def counts(self) -> dict[str, int]:
        return counts_of(self.book)

    def letter_ids(self) -> list[str]:
        with _collector_paused():
            return self.book.all_letters() if self.include_all else self.book.open_letters()

    def letters(self) -> list[dict[str, Any]]:
        return [_row(self.book, i, self.boxes) for i in self.letter_ids()]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "spool_path": self.spool_path,
            "distribution": self.distribution.to_dict() if self.distribution else None,
            "total": self.total,
            "open": self.open,
            "counts": self.counts,
            "receipts": self.book.receipts,
            "misdelivery": self.book.misdelivery,
            "unreachable": self.unreachable,
            "malformed": [d.to_dict() for d in self.malformed],
            "letters": self.letters(),
        }


def _fold(
    dc: Context, sources: list[Where], unreachable: list[str], progress: Progress | None
) -> tuple[FateBook, Boxes, list[Defect]] | None:
    """Feed the warm book what is new in each source; None if a file was replaced."""
    st: SweepState = dc.warm.setdefault("sweep", SweepState())
    key = (dc.roster.signature, tuple(str(s) for s in sources))
    if key != st.key or st.book is None:
        st = dc.warm["sweep"] = SweepState(key, FateBook(dc.roster.foreign_markers))
    assert st.book is not None
    if st.lent:  # a result still reads this book: leave it as it was, feed a copy
        st.book, st.lent = st.book.copy(), False
    book = st.book
    malformed: list[Defect] = []
    boxes: Boxes = []
    for n, where in enumerate(sources, 1):
        label = str(where)
        try:
            read = dc.store.read(where)
        except StoreError:
            unreachable.append(label)
            continue
        gen, count = st.fed.get(label, (read.generation, 0))
        if gen != read.generation:
            dc.warm.pop("sweep")
            return None
        if count:
            book.add(read.letters[count:])
        else:
            book.add_source(read.index)
        st.fed[label] = (read.generation, len(read.letters))
        if isinstance(where, Address):
            boxes.append((label, dict(read.index)))  # the store's index grows in place; the result must not
        malformed += [*read.defects, *([read.torn] if read.torn else [])]
        if progress:
            progress(label, n, len(sources))
    boxes.sort(key=lambda b: b[0])
    st.lent = True
    return book, boxes, malformed


def sweep(
    dc: Context,
    *,
    do_distribute: bool = True,
    include_all: bool = False,
    progress: Progress | None = None,
) -> SweepResult:
    with _collector_paused():
        return _sweep(dc, do_distribute, include_all, progress)


def _sweep(dc: Context, do_distribute: bool, include_all: bool, progress: Progress | None) -> SweepResult:
    receipt = distribute(dc) if do_distribute else None
    sources: list[Where] = ["spool"]
    unreachable: list[str] = []
    for addr in dc.roster.report_boxes():
        if dc.store.reachable(addr):
            sources.append(addr)
        else:
            unreachable.append(str(addr))
    folded = _fold(dc, sources, unreachable, progress)
    if folded is None:  # a ledger was replaced under us: fold everything again
        folded = _fold(dc, sources, unreachable, progress)
        assert folded is not None
    book, boxes, malformed = folded
    return SweepResult(
        spool_path=str(dc.layout.spool),
        distribution=receipt,
        book=book,
        boxes=boxes,
        unreachable=sorted(set(unreachable)),
        malformed=malformed,
        include_all=include_all,
    )


def kind_of(letter: Letter) -> str:
    """What a letter is, for counting: ``report``, ``receipt``, or its own ``kind``."""
    if letter.is_report:
        return "receipt" if letter.is_receipt else "report"
    return str(letter.kind)


def count_kinds(letters: Iterable[Letter]) -> dict[str, int]:
    """Every letter counted once by ``kind_of``, keys sorted."""
    counts = Counter(kind_of(lt) for lt in letters)
    return {k: counts[k] for k in sorted(counts)}


@dataclass
class BoxView:
    """One box read alone (INV-17): every letter it holds counted by kind, and
    the fates of its field reports (an entity box holds messages and lifecycle
    letters, home holds signals: ``held`` counts them all, ``total`` only the
    field reports and receipts the fates are about)."""

    address: str
    exists: bool
    known: bool
    book: FateBook
    boxes: Boxes
    malformed: list[Defect]
    include_all: bool = False
    by_kind: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        ids = self.book.all_letters() if self.include_all else self.book.open_letters()
        return {
            "box": self.address,
            "exists": self.exists,
            "known": self.known,
            "held": sum(self.by_kind.values()),
            "by_kind": self.by_kind,
            "total": self.book.total,
            "open": self.book.open,
            "counts": counts_of(self.book),
            "receipts": self.book.receipts,
            "malformed": [d.to_dict() for d in self.malformed],
            "letters": [_row(self.book, i, self.boxes) for i in ids],
        }


def box(dc: Context, address: Address, *, include_all: bool = False) -> BoxView:
    """Read one box only; a box that does not exist reads zero, never a guess."""
    if address.kind == "project":
        p = dc.roster.project(address.name)  # names match case-insensitively: label as the roster spells it
        known = p is not None
        if p is not None:
            address = Address("project", p.name)
    else:
        known = address.kind == "home" or dc.roster.entity(address.name) is not None
    book = FateBook(dc.roster.foreign_markers)
    if not known or not dc.store.reachable(address):
        return BoxView(str(address), False, known, book, [], [], include_all)
    read = dc.store.read(address)
    book.add(read.letters)
    defects = [*read.defects, *([read.torn] if read.torn else [])]
    return BoxView(
        str(address), read.exists, known, book, [(str(address), dict(read.index))], defects, include_all,
        count_kinds(read.letters),
    )

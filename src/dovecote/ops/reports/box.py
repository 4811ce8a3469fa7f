"""``box``: one box read alone, every letter it holds counted by kind, the fates of its field reports.

It reads the box whole (never the sweep's snapshot): a box is small beside the union the sweep folds, and
a reader of one box wants what it holds now. Its rows are the sweep's (``sweep._book_batches``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dovecote.derive.fates import FateBook
from dovecote.ledger.jsonl import Defect
from dovecote.model.addresses import Address
from dovecote.model.letters import Letter
from dovecote.ops.reports.sweep import Boxes, _book_batches, counts_of

if TYPE_CHECKING:
    from dovecote.ops.context import Context


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
class BoxContents:
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
            "letters": [row for batch in _book_batches(self.book, ids, self.boxes) for row in batch],
        }


def box(ctx: Context, address: Address, *, include_all: bool = False) -> BoxContents:
    """Read one box only; a box that does not exist reads zero, never a guess."""
    if address.kind == "project":
        p = ctx.roster.project(address.name)  # names match case-insensitively: label as the roster spells it
        known = p is not None
        if p is not None:
            address = Address("project", p.name)
    else:
        known = address.kind == "home" or ctx.roster.entity(address.name) is not None
    book = FateBook(ctx.roster.foreign_markers)
    if not known or not ctx.store.reachable(address):
        return BoxContents(str(address), False, known, book, [], [], include_all)
    read = ctx.store.read(address)
    book.add(read.letters)
    defects = [*read.defects, *([read.torn] if read.torn else [])]
    return BoxContents(
        str(address), read.exists, known, book, [(str(address), dict(read.index))], defects, include_all,
        count_kinds(read.letters),
    )

"""The fate fold (m1nd): external > fired_clay > in_flight > wet_ink.

Pure: a ``FateBook`` is fed letters and answers questions; it never opens a
file. It is incremental, so a warm reader can feed it only the letters appended
since the last sweep, and the result is the same as folding everything again
(the property tests prove it for any order of arrival).

* external: the lowercased ``tool`` contains a foreign marker;
* fired_clay: some receipt (class ``triage``) lists the id in ``answers``;
* in_flight: a non-receipt report lists it in ``answers`` (picked up), and no
  receipt does;
* wet_ink: nothing refers to it yet.

open = wet_ink + in_flight. A receipt is what gives fates, so it has none of
its own: receipts are counted apart (``receipts``) and are never open, and
total = wet_ink + in_flight + fired_clay + external + receipts. Only field
reports and receipts take part; missions, messages and lifecycle letters are
other folds' business.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dovecote.letters import Letter
from dovecote.vocab import FATES

WET, FLIGHT, CLAY, EXTERNAL = "wet_ink", "in_flight", "fired_clay", "external"


class FateBook:
    """Union of report letters (each id once) with their derived fates."""

    def __init__(self, markers: Sequence[str]) -> None:
        self.markers = tuple(m.lower() for m in markers)
        self.entries: dict[str, tuple[Letter, str | None]] = {}  # id -> (letter, box)
        self.fate: dict[str, str] = {}
        self.counts: dict[str, int] = dict.fromkeys(FATES, 0)
        self.closed: set[str] = set()
        self.picked: set[str] = set()
        self.referrers: dict[str, list[str]] = {}
        self.open_ids: set[str] = set()
        self.open_order: list[str] = []
        self.receipts = 0
        self.misdelivery = 0
        self._external_tool: dict[str | None, bool] = {None: False}

    def _is_external(self, tool: str | None) -> bool:
        hit = self._external_tool.get(tool)
        if hit is None:
            low = tool.lower() if tool else ""
            hit = any(m in low for m in self.markers)
            self._external_tool[tool] = hit
        return hit

    def _move(self, lid: str, new: str) -> None:
        old = self.fate[lid]
        self.fate[lid] = new
        self.counts[old] -= 1
        self.counts[new] += 1
        if lid in self.open_ids and new not in (WET, FLIGHT):
            self.open_ids.discard(lid)

    def add(self, letters: Iterable[Letter], box: str | None) -> None:
        """Fold letters in. A letter already present only moves to a better box label."""
        entries = self.entries
        fate = self.fate
        counts = self.counts
        closed = self.closed
        picked = self.picked
        for letter in letters:
            if not letter.is_report:
                continue
            lid = letter.id
            prev = entries.get(lid)
            if prev is not None:
                if box is not None and (prev[1] is None or box < prev[1]):
                    entries[lid] = (letter, box)
                continue
            entries[lid] = (letter, box)
            receipt = letter.is_receipt
            if letter.is_misdelivery:
                self.misdelivery += 1
            if receipt:
                self.receipts += 1
            else:
                if self._is_external(letter.tool):
                    f = EXTERNAL
                elif lid in closed:
                    f = CLAY
                elif lid in picked:
                    f = FLIGHT
                else:
                    f = WET
                fate[lid] = f
                counts[f] += 1
                if f is WET or f is FLIGHT:
                    self.open_ids.add(lid)
                    self.open_order.append(lid)
            answers = letter.answers
            if not answers:
                continue
            for a in answers:
                refs = self.referrers.get(a)
                if refs is None:
                    self.referrers[a] = [lid]
                else:
                    refs.append(lid)
                if receipt:
                    if a in closed:
                        continue
                    closed.add(a)
                    if fate.get(a) in (WET, FLIGHT):
                        self._move(a, CLAY)
                elif a not in closed and a not in picked:
                    picked.add(a)
                    if fate.get(a) is WET:
                        self._move(a, FLIGHT)

    @property
    def total(self) -> int:
        return len(self.entries)

    @property
    def open(self) -> int:
        return len(self.open_ids)

    def open_letters(self) -> list[str]:
        """Open ids, oldest first (ts, then id)."""
        entries = self.entries
        live = [i for i in self.open_order if i in self.open_ids]
        live.sort(key=lambda i: (entries[i][0].ts or "", i))
        self.open_order = live
        return live

    def all_letters(self) -> list[str]:
        entries = self.entries
        return sorted(entries, key=lambda i: (entries[i][0].ts or "", i))

    def answered_by(self, lid: str) -> list[str]:
        return sorted(self.referrers.get(lid, ()))


def fold(letters: Iterable[Letter], markers: Sequence[str]) -> FateBook:
    """Fold a whole collection at once (no box labels)."""
    book = FateBook(markers)
    book.add(letters, None)
    return book

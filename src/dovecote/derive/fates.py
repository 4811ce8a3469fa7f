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

from collections.abc import Collection, Iterable, Mapping, Sequence

from dovecote.model.letters import Letter
from dovecote.model.vocab import FATES, MISDELIVERY_CLASS, RECEIPT_CLASS, REPORT_CLASSES, REPORT_KINDS
from dovecote.util.timeutil import instant_text

EXTERNAL, CLAY, FLIGHT, WET = FATES  # the names, in precedence order (highest first)


def precedence(external: bool, closed: bool, picked: bool) -> str:
    """The one fate rule: the highest of the fates a letter qualifies for (see ``FATES``)."""
    return EXTERNAL if external else CLAY if closed else FLIGHT if picked else WET


# Classes known not to be the receipt class: the hot loop skips the lowercase
# comparison for them. Derived from the vocabulary, so it can never drift.
_NOT_RECEIPT = frozenset(REPORT_CLASSES) - {RECEIPT_CLASS}
#: Where the id starts in an open-list sort key (``instant_text`` is fixed width).
KEY_AT = len(instant_text(None))


class Tally:
    """The numbers a fold answers with, from its sets and counts: one definition for the
    fate book and for the sweep's fold resumed from a snapshot (``ops.warm.sweep``)."""

    entries: Collection[str]
    receipt_ids: set[str]
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return len(self.entries)

    @property
    def receipts(self) -> int:
        return len(self.receipt_ids)

    @property
    def open(self) -> int:
        return self.counts[WET] + self.counts[FLIGHT]


class FateBook(Tally):
    """Union of report letters (each id once) with their derived fates.

    A fate is a function of four sets (``external``, ``receipt_ids``,
    ``closed``, ``picked``), so nothing per letter is stored but the letter
    itself; counts are kept incrementally and moved when a new answer arrives.
    ``add`` is the sweep's hot path, so it is written flat, with locals.
    """

    def __init__(self, markers: Sequence[str]) -> None:
        self.markers = tuple(m.lower() for m in markers)
        self.entries: dict[str, Letter] = {}
        self.external: set[str] = set()
        self.receipt_ids: set[str] = set()
        self.closed: set[str] = set()
        self.picked: set[str] = set()
        self.counts: dict[str, int] = dict.fromkeys(FATES, 0)
        self.answering: list[Letter] = []  # every letter with answers, in arrival order
        self._referrers: dict[str, list[str]] = {}
        self._referrers_upto = 0
        # The open list, oldest first, kept between calls: ids in (ts, id) order, ts
        # as the instant it names, with None where a letter has closed since (a
        # tombstone), and each id's position. Sort keys are one string each,
        # ``instant_text(ts) + id`` (fixed width, so it orders as (instant, id) does).
        self.open_order: list[str] = []  # keys of letters open on arrival, not yet listed
        self._listing: list[str | None] = []
        self._position: dict[str, int] | None = None  # built on the first close after listing
        self._last_key = ""
        self._tombstones = 0
        self.misdelivery = 0
        self._external_tool: dict[str | None, bool] = {None: False}

    def copy(self) -> FateBook:
        """An independent book with the same answers: feeding either never changes the other.

        Every container is copied one level deep (letters are immutable); the
        referrer index is left to be rebuilt on demand, since its lists grow in place.
        """
        new = object.__new__(FateBook)
        for name, value in vars(self).items():
            setattr(new, name, value.copy() if isinstance(value, (dict, set, list)) else value)
        new._referrers, new._referrers_upto = {}, 0
        return new

    def fate_of(self, lid: str) -> str | None:
        """The fate of a letter in the book; None for a receipt or an unknown id."""
        if lid not in self.entries or lid in self.receipt_ids:
            return None
        return precedence(lid in self.external, lid in self.closed, lid in self.picked)

    def is_external(self, tool: str | None) -> bool:
        """Does ``tool`` name a foreign tool (a marker occurs in it, case-insensitively)?"""
        hit = self._external_tool.get(tool)
        return self._is_external(tool) if hit is None else hit  # type: ignore[arg-type]

    def _is_external(self, tool: str) -> bool:
        low = tool.lower()
        hit = any(m in low for m in self.markers)
        self._external_tool[tool] = hit
        return hit

    def add_source(self, index: Mapping[str, Letter]) -> None:
        """Fold a whole ledger (id -> letter).

        A ledger that shares no id with the book (the usual case: each letter
        lives in one box) is merged by one C-level ``dict.update``; letters
        that are not reports are taken out again afterwards.
        """
        entries = self.entries
        if entries.keys().isdisjoint(index):
            entries.update(index)
            self._add(index.values(), fresh=True)
        else:
            self._add(index.values(), fresh=False)

    def add(self, letters: Iterable[Letter]) -> None:
        """Fold letters in; a letter already present is skipped."""
        self._add(letters, fresh=False)

    def _add(self, letters: Iterable[Letter], fresh: bool) -> None:
        entries = self.entries
        closed = self.closed
        picked = self.picked
        ext_cache = self._external_tool
        open_append = self.open_order.append
        external_add, receipt_add = self.external.add, self.receipt_ids.add
        key = instant_text
        report_kinds = REPORT_KINDS
        fate = precedence
        tally = dict.fromkeys(FATES, 0)
        n_mis = 0
        answering: list[Letter] = []
        others: list[str] = []
        for letter in letters:
            lid = letter.id
            kind = letter.kind
            if fresh:
                if kind is not None and kind not in report_kinds:
                    others.append(lid)
                    continue
            else:
                if lid in entries or (kind is not None and kind not in report_kinds):
                    continue
                entries[lid] = letter
            klass = letter.klass
            if klass is not None and klass not in _NOT_RECEIPT and klass.lower() == RECEIPT_CLASS:
                receipt_add(lid)
            else:
                if klass == MISDELIVERY_CLASS:
                    n_mis += 1
                tool = letter.tool
                ext = ext_cache.get(tool)
                if ext is None:
                    ext = self._is_external(tool)  # type: ignore[arg-type]
                f = fate(ext, lid in closed, lid in picked)  # the one rule, never spelled again here
                if f is EXTERNAL:
                    external_add(lid)
                else:
                    tally[f] += 1
                    if f is not CLAY:
                        open_append(key(letter.ts) + lid)
            if letter.answers:
                answering.append(letter)
        for lid in others:
            del entries[lid]
        self.misdelivery += n_mis
        self.answering += answering
        # Answers last: a letter answered within this same batch moves below. An
        # answer moves its target from the fate it had to the fate it has now.
        receipt_ids = self.receipt_ids
        external = self.external
        for letter in answering:
            marks = closed if letter.id in receipt_ids else picked
            for a in letter.answers or ():
                if a in marks:
                    continue
                marks.add(a)
                if a not in entries or a in receipt_ids or a in external:  # no fate, or one no answer moves
                    continue
                # ``fate_of`` before and after the mark, read from the sets once (the sweep's hot path)
                after = fate(False, a in closed, a in picked)
                before = fate(False, a in closed and (marks is not closed), a in picked and (marks is not picked))
                if before == after:
                    continue
                tally[before] -= 1
                tally[after] += 1
                if after is CLAY and self._listing:  # it leaves the open list: a tombstone where it was
                    p = self._positions().pop(a, None)
                    if p is not None:
                        self._listing[p] = None
                        self._tombstones += 1
        counts = self.counts
        for f in (WET, FLIGHT, CLAY):
            counts[f] += tally[f]
        counts[EXTERNAL] = len(self.external)

    def _key(self, lid: str) -> str:
        return instant_text(self.entries[lid].ts) + lid

    def _positions(self) -> dict[str, int]:
        if self._position is None:
            self._position = {lid: n for n, lid in enumerate(self._listing) if lid is not None}
        return self._position

    def _relist(self, keys: list[str]) -> None:
        """Replace the listing with these keys, already sorted."""
        self._listing = [k[KEY_AT:] for k in keys]
        self._position = None
        self._last_key = keys[-1] if keys else ""
        self._tombstones = 0

    def open_letters(self) -> list[str]:
        """Open ids, oldest first (ts, then id).

        Kept between calls: a letter that closes leaves a tombstone at its
        position (found in O(1)), newer letters are appended, and only an
        out-of-order arrival or too many tombstones re-sort. A warm call costs
        one C-speed pass to drop the tombstones, not a sort.
        """
        if self.open_order:
            new = self._arrivals()
            if not self._listing:
                self._relist(new)
            elif new and new[0] < self._last_key:
                self._merge_late(new)
            elif new:
                base = len(self._listing)
                self._listing += [k[KEY_AT:] for k in new]
                if self._position is not None:
                    self._position.update({k[KEY_AT:]: base + n for n, k in enumerate(new)})
                self._last_key = new[-1]
        if self._tombstones * 2 > len(self._listing):
            self._relist(sorted(self._key(i) for i in self._listing if i is not None))
        return list(filter(None, self._listing))

    def open_keys(self) -> list[str]:
        """``open_letters`` as their sort keys (``instant_text(ts) + id``): a book folded from
        nothing hands over the keys its fold made, so a caller that orders or files rows by
        them (the sweep's snapshot) never reads each open letter's time again."""
        if self._listing or not self.open_order:
            return [self._key(i) for i in self.open_letters()]
        keys = self._arrivals()
        self._relist(keys)
        return keys

    def _arrivals(self) -> list[str]:
        """The keys of the letters open on arrival that are open still, sorted; ``open_order`` emptied."""
        closed = self.closed
        new = [k for k in self.open_order if k[KEY_AT:] not in closed] if closed else self.open_order
        new.sort()
        self.open_order = []
        return new

    def _bisect(self, key: str) -> int:
        """The first position whose live letter sorts at or after ``key`` (tombstones skipped)."""
        listing = self._listing
        lo, hi = 0, len(listing)
        while lo < hi:
            mid = (lo + hi) // 2
            m = mid
            while m < hi and listing[m] is None:
                m += 1
            if m == hi:
                hi = mid
                continue
            if self._key(listing[m]) < key:  # type: ignore[arg-type]
                lo = m + 1
            else:
                hi = mid
        return lo

    def _merge_late(self, new: list[str]) -> None:
        """Merge letters older than the newest listed one: only the tail from the
        first insertion point is re-sorted (late letters are usually only a little late)."""
        p0 = self._bisect(new[0])
        tail = self._listing[p0:]
        live = [self._key(i) for i in tail if i is not None]
        self._tombstones -= len(tail) - len(live)
        merged = sorted([*live, *new])
        del self._listing[p0:]
        self._listing += [k[KEY_AT:] for k in merged]
        if self._position is not None:
            self._position.update({k[KEY_AT:]: p0 + n for n, k in enumerate(merged)})
        self._last_key = merged[-1]

    def all_letters(self) -> list[str]:
        entries = self.entries
        return [k[KEY_AT:] for k in sorted([instant_text(entries[i].ts) + i for i in entries])]

    def referrers(self) -> dict[str, list[str]]:
        """id -> ids of the letters whose answers name it, in arrival order (may repeat)."""
        refs = self._referrers
        for letter in self.answering[self._referrers_upto :]:
            for a in letter.answers or ():
                refs.setdefault(a, []).append(letter.id)
        self._referrers_upto = len(self.answering)
        return refs

    def answered_by(self, lid: str) -> list[str]:
        """Ids of every letter (receipt or not) whose answers name ``lid``."""
        return sorted(set(self.referrers().get(lid, ())))


def fold(letters: Iterable[Letter], markers: Sequence[str]) -> FateBook:
    """Fold a whole collection at once."""
    book = FateBook(markers)
    book.add(letters)
    return book

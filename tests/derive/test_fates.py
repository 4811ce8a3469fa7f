"""The fate fold (DESIGN 3): pure unit tests and an order/batching property."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.derive.fates import FateBook, fold
from dovecote.model.letters import Letter, canonical_line, decode_line, make_letter
from dovecote.model.vocab import DEFAULT_FOREIGN_MARKERS
from reference_fates import reference

MARKERS = DEFAULT_FOREIGN_MARKERS


def L(what: str, ts: str = "2026-07-05T10:00:00Z", **more: Any) -> Letter:
    obj: dict[str, Any] = {"ts": ts, "agent": "a", "tool": "seek", "class": "bug", "what": what}
    obj.update(more)
    return make_letter({k: v for k, v in obj.items() if v is not None})


def receipt(ts: str, *answers: str, **more: Any) -> Letter:
    return L("receipt", ts, tool="triage", answers=list(answers), **{"class": "triage", **more})


# -- the four fates and receipts ------------------------------------------------------------


def test_wet_ink_is_nothing_yet() -> None:
    a = L("a")
    book = fold([a], MARKERS)
    assert book.fate_of(a.id) == "wet_ink"
    assert book.counts == {"external": 0, "fired_clay": 0, "in_flight": 0, "wet_ink": 1}
    assert book.open == 1 and book.open_letters() == [a.id]


def test_in_flight_is_picked_up_by_a_non_receipt() -> None:
    a = L("a")
    pick = L("looking into it", "2026-07-05T11:00:00Z", answers=[a.id])
    book = fold([a, pick], MARKERS)
    assert book.fate_of(a.id) == "in_flight"
    # the letter that picked it up is itself a report nobody answered
    assert book.fate_of(pick.id) == "wet_ink"
    assert book.counts["in_flight"] == 1 and book.counts["wet_ink"] == 1
    assert book.open == 2
    assert book.answered_by(a.id) == [pick.id]


def test_a_receipt_closes_an_in_flight_letter() -> None:
    a = L("a")
    pick = L("on it", "2026-07-05T11:00:00Z", answers=[a.id])
    r = receipt("2026-07-05T12:00:00Z", a.id)
    book = fold([a, pick, r], MARKERS)
    assert book.fate_of(a.id) == "fired_clay"
    assert book.counts == {"external": 0, "fired_clay": 1, "in_flight": 0, "wet_ink": 1}
    assert a.id not in book.open_letters()
    assert book.answered_by(a.id) == sorted([pick.id, r.id])


def test_a_receipt_is_never_open_and_has_no_fate() -> None:
    r = receipt("2026-07-05T12:00:00Z", "000000000000")
    book = fold([r], MARKERS)
    assert book.fate_of(r.id) is None
    assert book.receipts == 1 and book.open == 0 and book.open_letters() == []
    assert sum(book.counts.values()) == 0
    assert book.total == 1


def test_receipt_class_is_case_insensitive() -> None:
    a = L("a")
    r = L("done", "2026-07-05T12:00:00Z", answers=[a.id], **{"class": "Triage"})
    book = fold([a, r], MARKERS)
    assert book.fate_of(a.id) == "fired_clay" and book.receipts == 1


def test_a_receipt_answering_nothing_closes_nothing() -> None:
    a = L("a")
    r = L("note", "2026-07-05T12:00:00Z", **{"class": "triage"})
    book = fold([a, r], MARKERS)
    assert book.fate_of(a.id) == "wet_ink"


def test_external_is_a_foreign_marker_substring_of_the_tool() -> None:
    ext = L("x", tool="Playwright (browser)")
    ours = L("y", tool="seek")
    book = fold([ext, ours], MARKERS)
    assert book.fate_of(ext.id) == "external"
    assert book.fate_of(ours.id) == "wet_ink"
    assert book.open == 1


def test_external_beats_fired_clay_and_in_flight() -> None:
    ext = L("x", tool="semgrep")
    r = receipt("2026-07-05T12:00:00Z", ext.id)
    pick = L("p", answers=[ext.id])
    book = fold([ext, r, pick], MARKERS)
    assert book.fate_of(ext.id) == "external"
    assert book.counts["external"] == 1 and book.counts["fired_clay"] == 0


def test_fired_clay_beats_in_flight_whatever_the_order() -> None:
    a = L("a")
    pick = L("p", answers=[a.id])
    r = receipt("2026-07-05T12:00:00Z", a.id)
    for order in ([a, pick, r], [r, pick, a], [pick, r, a], [a, r, pick]):
        book = FateBook(MARKERS)
        for letter in order:
            book.add([letter])
        assert book.fate_of(a.id) == "fired_clay", order


def test_markers_are_the_ones_given() -> None:
    a = L("a", tool="seek")
    assert fold([a], ("seek",)).fate_of(a.id) == "external"
    assert fold([a], ("SEEK",)).fate_of(a.id) == "external"
    assert fold([L("p", tool="playwright")], ()).counts["external"] == 0


def test_non_report_letters_take_no_part() -> None:
    a = L("a")
    mission = make_letter({"kind": "mission", "answers": [a.id], "class": "triage"})
    message = make_letter({"kind": "message", "answers": [a.id]})
    book = fold([a, mission, message], MARKERS)
    assert book.total == 1 and book.fate_of(a.id) == "wet_ink"
    assert book.fate_of(mission.id) is None


def test_legacy_misdelivery_kind_lines_are_reports() -> None:
    legacy = make_letter({"class": "memory_misdelivery", "kind": "false_absence", "tool": "seek"})
    book = fold([legacy], MARKERS)
    assert book.total == 1 and book.misdelivery == 1 and book.fate_of(legacy.id) == "wet_ink"


def test_open_letters_are_oldest_first() -> None:
    late = L("late", "2026-07-06T00:00:00Z")
    early = L("early", "2026-07-01T00:00:00Z")
    mid = L("mid", "2026-07-03T00:00:00Z")
    book = FateBook(MARKERS)
    book.add([late])
    assert book.open_letters() == [late.id]
    book.add([early, mid])
    assert book.open_letters() == [early.id, mid.id, late.id]
    book.add([receipt("2026-07-07T00:00:00Z", mid.id)])
    assert book.open_letters() == [early.id, late.id]


def test_each_letter_counts_once() -> None:
    a = L("a")
    book = FateBook(MARKERS)
    book.add([a, a])
    book.add([a])
    book.add_source({a.id: a})
    assert book.total == 1 and book.counts["wet_ink"] == 1


def test_totals_add_up() -> None:
    a, b, c = L("a"), L("b"), L("c", tool="context7")
    letters = [a, b, c, L("p", answers=[a.id]), receipt("2026-07-05T12:00:00Z", b.id)]
    book = fold(letters, MARKERS)
    assert book.total == sum(book.counts.values()) + book.receipts == 5
    assert book.open == book.counts["wet_ink"] + book.counts["in_flight"]


# -- property: any order, any batching == one fold == the definition ------------------
# The definition is ``reference_fates.reference`` (DESIGN 3 written as directly as possible).


_SPEC = st.fixed_dictionaries(
    {
        "klass": st.sampled_from(["bug", "friction", "triage", "TRIAGE", "memory_misdelivery", None, 3]),
        "tool": st.sampled_from(["seek", "north", "Playwright (x)", "my-semgrep", None, 5]),
        "kind": st.sampled_from([None, None, None, "report", "false_absence", "mission", "message"]),
        "ts": st.sampled_from([None, "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z", "2026-07-03T00:00:00Z"]),
        "refs": st.lists(st.integers(min_value=0, max_value=40), max_size=3),
        "phantom": st.booleans(),
    }
)


def _build(specs: list[dict[str, Any]]) -> list[Letter]:
    """Letter i may answer any earlier letter (ids are content hashes, so only earlier)."""
    out: list[Letter] = []
    for n, s in enumerate(specs):
        obj: dict[str, Any] = {"n": n}
        for k, field in (("klass", "class"), ("tool", "tool"), ("kind", "kind"), ("ts", "ts")):
            if s[k] is not None:
                obj[field] = s[k]
        answers = [out[r % n].id for r in s["refs"]] if n else []
        if s["phantom"]:
            answers.append("0123456789ab")
        if answers:
            obj["answers"] = answers
        # the canonical line, decoded the way a reader decodes it (leniently)
        letter = decode_line(canonical_line(obj))
        assert letter is not None
        out.append(letter)
    return out


def _observe(book: FateBook, ids: Iterable[str]) -> dict[str, Any]:
    return {
        "counts": dict(book.counts),
        "receipts": book.receipts,
        "misdelivery": book.misdelivery,
        "total": book.total,
        "open": book.open,
        "open_ids": book.open_letters(),
        "all_ids": book.all_letters(),
        "fates": {i: book.fate_of(i) for i in ids},
        "answered_by": {i: book.answered_by(i) for i in ids},
    }


@settings(max_examples=300, deadline=None)
@given(
    specs=st.lists(_SPEC, min_size=1, max_size=25),
    data=st.data(),
)
def test_any_order_and_batching_equals_one_fold_and_the_definition(
    specs: list[dict[str, Any]], data: st.DataObject
) -> None:
    letters = _build(specs)
    ids = sorted({lt.id for lt in letters} | {"0123456789ab", "ffffffffffff"})

    ref = reference(letters, MARKERS)
    one = fold(letters, MARKERS)
    seen = _observe(one, ids)
    assert seen["counts"] == ref.counts
    assert seen["receipts"] == ref.receipts
    assert seen["misdelivery"] == ref.misdelivery
    assert seen["total"] == len(ref.fates) == sum(ref.counts.values()) + ref.receipts
    assert seen["open"] == ref.counts["wet_ink"] + ref.counts["in_flight"] == len(ref.open_ids)
    assert seen["open_ids"] == ref.open_ids
    assert seen["all_ids"] == ref.all_ids
    assert seen["fates"] == {i: ref.fates.get(i) for i in ids}
    assert seen["answered_by"] == {i: ref.answered_by.get(i, []) for i in ids}

    # a shuffled arrival (with repeats) in random batches, each fed by add or add_source,
    # with reads in between (the warm path keeps sorted state between calls)
    arrival = data.draw(st.permutations(letters))
    arrival = arrival + data.draw(st.lists(st.sampled_from(letters), max_size=5))
    book = FateBook(MARKERS)
    lent: list[tuple[FateBook, dict[str, Any]]] = []
    pos = 0
    while pos < len(arrival):
        size = data.draw(st.integers(min_value=1, max_value=len(arrival) - pos))
        batch = arrival[pos : pos + size]
        pos += size
        if data.draw(st.booleans()):
            book.add(batch)
        else:
            book.add_source({lt.id: lt for lt in batch})
        if data.draw(st.booleans()):
            book.open_letters()
            book.answered_by(batch[0].id)
        if data.draw(st.booleans()):  # a copy goes on alone; the book it came from never changes again
            lent.append((book, _observe(book, ids)))
            book = book.copy()
        partial = reference(arrival[:pos], MARKERS)
        assert book.counts == partial.counts
    assert _observe(book, ids) == seen
    for old, answers in lent:
        assert _observe(old, ids) == answers


def test_open_letters_called_again_as_letters_arrive_between_calls() -> None:
    """The open list is kept between calls (tombstones, appends, a late arrival merged in): each call
    must still give what a fold of everything so far gives, oldest first."""
    a, b, c = L("a", "2026-07-05T10:00:00Z"), L("b", "2026-07-05T11:00:00Z"), L("c", "2026-07-05T12:00:00Z")
    book = FateBook(MARKERS)
    seen: list[Letter] = []

    def feed(*letters: Letter) -> list[str]:
        book.add(letters)
        seen.extend(letters)
        got = book.open_letters()
        assert got == fold(seen, MARKERS).open_letters() == book.open_letters()
        return got

    assert feed(a, b, c) == [a.id, b.id, c.id]
    d = L("d", "2026-07-05T13:00:00Z")
    picked = L("picks c", "2026-07-05T13:30:00Z", answers=[c.id])  # picked up, still open
    assert feed(receipt("2026-07-05T14:00:00Z", b.id), d, picked) == [a.id, c.id, d.id, picked.id]
    late = L("late", "2026-07-05T10:30:00Z")
    assert feed(late, receipt("2026-07-05T14:01:00Z", d.id)) == [a.id, late.id, c.id, picked.id]
    assert feed(receipt("2026-07-05T14:02:00Z", a.id, c.id, picked.id)) == [late.id]
    early, same_time = L("early", "2026-07-05T09:00:00Z"), L("same time", "2026-07-05T09:00:00Z")
    assert feed(early, same_time) == [*sorted([early.id, same_time.id]), late.id]  # one instant: by id


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 59), st.lists(st.integers(0, 99), max_size=3), st.booleans()),
                min_size=1, max_size=40),
       st.lists(st.integers(1, 6), min_size=1, max_size=12))
def test_open_letters_after_every_batch_is_the_fold_of_everything_so_far(
    specs: list[tuple[int, list[int], bool]], cuts: list[int]
) -> None:
    """The kept open list (tombstones, appends, late letters merged in, re-sorts) read after every
    batch: each read equals a fresh fold's, for letters of many times closing each other in any order."""
    letters: list[Letter] = []
    for n, (minute, closes, is_receipt) in enumerate(specs):
        ts = f"2026-07-05T10:{minute:02d}:00Z"
        if is_receipt and letters:
            letters.append(receipt(ts, *{letters[c % len(letters)].id for c in closes}, n=n))
        else:
            letters.append(L(f"letter {n}", ts))
    book = FateBook(MARKERS)
    pos = 0
    for cut in cuts * 40:
        if pos >= len(letters):
            break
        book.add(letters[pos : pos + cut])
        pos += cut
        assert book.open_letters() == fold(letters[:pos], MARKERS).open_letters()


def test_the_kept_open_list_after_a_merge_a_close_at_its_end_and_letters_closed_unlisted() -> None:
    t = [L(f"t{n}", f"2026-07-05T1{n}:00:00Z") for n in range(8)]
    book = FateBook(MARKERS)
    seen: list[Letter] = []

    def feed(*letters: Letter) -> list[str]:
        book.add(letters)
        seen.extend(letters)
        got = book.open_letters()
        assert got == fold(seen, MARKERS).open_letters()
        return got

    assert feed(t[0], t[2], t[4]) == [t[0].id, t[2].id, t[4].id]
    assert feed(receipt("2026-07-06T00:00:00Z", t[0].id), t[5], t[6]) == [t[2].id, t[4].id, t[5].id, t[6].id]
    # appended after a close built the positions: closing the second appended one hides no other
    assert feed(receipt("2026-07-06T00:01:00Z", t[6].id)) == [t[2].id, t[4].id, t[5].id]
    assert feed(t[3]) == [t[2].id, t[3].id, t[4].id, t[5].id]  # late: merged in
    assert feed(t[7]) == [t[2].id, t[3].id, t[4].id, t[5].id, t[7].id]  # newer than the merge's newest
    assert feed(receipt("2026-07-06T00:02:00Z", t[7].id), t[1]) == [t[1].id, t[2].id, t[3].id, t[4].id, t[5].id]
    closed_at_once = L("closed before it was listed", "2026-07-05T23:00:00Z")
    assert feed(closed_at_once, receipt("2026-07-06T00:03:00Z", closed_at_once.id)) == [
        t[1].id, t[2].id, t[3].id, t[4].id, t[5].id]


def test_is_external_matches_a_marker_anywhere_in_the_tool_case_insensitively() -> None:
    book = FateBook(["SemGrep", "context7"])
    assert [book.is_external(t) for t in ("my-semgrep-2", "CONTEXT7", "seek", None)] == [True, True, False, False]
    assert [book.is_external(t) for t in ("my-semgrep-2", "CONTEXT7", "seek", None)] == [True, True, False, False]


def test_referrers_grow_with_each_answer_once_however_often_they_are_read() -> None:
    # the sweep's rows and its snapshot take these lists as they are: a second read must not repeat them
    a, b = L("a"), L("b")
    pick = L("pick", answers=[a.id, b.id])
    book = fold([a, b, pick], MARKERS)
    assert book.referrers() == {a.id: [pick.id], b.id: [pick.id]}
    assert book.referrers() == {a.id: [pick.id], b.id: [pick.id]}
    r = receipt("2026-07-06T00:00:00Z", a.id)
    book.add([r])
    assert book.referrers() == {a.id: [pick.id, r.id], b.id: [pick.id]}
    assert book.referrers() == {a.id: [pick.id, r.id], b.id: [pick.id]}

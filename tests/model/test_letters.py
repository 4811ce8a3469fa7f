"""Letters: content identity, the canonical line, lenient decoding."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.ledger.jsonl import LedgerReader
from dovecote.model.letters import (
    canonical_line,
    decode_line,
    decode_lines_fast,
    is_letter_id,
    letter_id,
    letter_ids,
    make_letter,
    text_or_none,
)
from dovecote.verbs import Sweep
from helpers import VECTOR, VECTOR_ID, VECTOR_LINE, lid, new_home, rep

# -- the id vector --------------------------------------------------------------


def test_vector_line_has_the_m1nd_id() -> None:
    assert letter_id(VECTOR_LINE) == VECTOR_ID
    # the definition itself: the first 12 hex digits of sha256 over the bytes
    assert hashlib.sha256(VECTOR_LINE).hexdigest()[:12] == VECTOR_ID


def test_trailing_newline_does_not_change_the_id() -> None:
    assert letter_id(VECTOR_LINE + b"\n") == VECTOR_ID
    assert letter_id(VECTOR_LINE + b"\r\n") == VECTOR_ID


def test_other_whitespace_is_part_of_the_bytes() -> None:
    # only the trailing newline is removed: a space changes the content, hence the id
    assert letter_id(VECTOR_LINE + b" ") != VECTOR_ID
    assert letter_id(b" " + VECTOR_LINE) != VECTOR_ID


def test_canonical_line_of_the_vector_is_the_vector_line() -> None:
    assert canonical_line(VECTOR) == VECTOR_LINE


def test_canonical_line_ignores_input_key_order() -> None:
    shuffled = dict(reversed(list(VECTOR.items())))
    assert list(shuffled) != list(VECTOR)
    assert canonical_line(shuffled) == VECTOR_LINE
    assert letter_id(canonical_line(shuffled)) == VECTOR_ID


def test_report_with_exactly_the_vector_fields_gets_the_vector_id(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    [(i, appended)] = dc.report([dict(VECTOR)])
    assert (i, appended) == (VECTOR_ID, True)
    assert dc.layout.spool.read_bytes() == VECTOR_LINE + b"\n"


def test_canonical_form_orders_known_fields_first_then_the_rest_sorted() -> None:
    line = canonical_line({"zeta": 1, "what": "w", "alpha": {"b": 1, "a": 2}, "ts": "t", "class": "bug"})
    assert line == b'{"ts":"t","class":"bug","what":"w","alpha":{"a":2,"b":1},"zeta":1}'


#: One letter with every field the canonical order names, plus an unknown key that sorts before all of
#: them, given in reverse order: written out by hand, not built from ``CANONICAL_ORDER``, so a change
#: of that order (a field dropped from it, two fields swapped) changes these bytes and every id.
GOLDEN = {
    "a_extra": {"b": [2, {"d": 1, "c": 0}], "a": None},
    "ref": "0123456789ab",
    "answers": ["e59b1adb1c4b"],
    "snippet": "s",
    "expected": "e",
    "what": "w",
    "misdelivery_kind": "false_absence",
    "symptom": "crash",
    "class": "bug",
    "tool": "seek",
    "to": "project:alpha",
    "repo": "repo-a",
    "brain": "b1",
    "kind": "report",
    "agent": "probe",
    "ts": "2026-07-05T10:00:00Z",
}
GOLDEN_LINE = (
    b'{"ts":"2026-07-05T10:00:00Z","agent":"probe","kind":"report","brain":"b1","repo":"repo-a",'
    b'"to":"project:alpha","tool":"seek","class":"bug","symptom":"crash","misdelivery_kind":"false_absence",'
    b'"what":"w","expected":"e","snippet":"s","answers":["e59b1adb1c4b"],"ref":"0123456789ab",'
    b'"a_extra":{"a":null,"b":[2,{"c":0,"d":1}]}}'
)


def test_the_canonical_form_of_every_known_field_is_fixed_to_its_bytes_and_id() -> None:
    # every id ever given depends on these bytes: known fields in m1nd's order, then the rest sorted
    assert canonical_line(GOLDEN) == GOLDEN_LINE
    assert letter_id(canonical_line(GOLDEN)) == "f9b7877f7c3b"
    letter = make_letter(GOLDEN)
    assert (letter.id, letter.raw) == ("f9b7877f7c3b", GOLDEN_LINE)


def test_letter_ids_strip_each_line_ending_and_hash_a_bare_line_as_it_is() -> None:
    a, b, c = canonical_line(rep("a")), canonical_line(rep("b")), VECTOR_LINE
    want = [lid(rep("a")), lid(rep("b")), VECTOR_ID]
    assert letter_ids([a + b"\n", b + b"\r\n", c]) == want
    assert letter_ids([a, b, c]) == want
    assert letter_ids([a + b"\r\n", b + b"\r\n", c + b"\r\n"]) == want
    assert letter_ids([c + b"\r"]) == [VECTOR_ID]  # a lone CR is stripped as a reader strips it
    assert letter_ids([c + b" "]) == [letter_id(c + b" ")] != [VECTOR_ID]
    assert letter_ids([]) == []


def test_is_letter_id() -> None:
    assert is_letter_id(VECTOR_ID)
    assert not is_letter_id(VECTOR_ID.upper())
    assert not is_letter_id(VECTOR_ID[:11])
    assert not is_letter_id(VECTOR_ID + "0")
    assert not is_letter_id("g" * 12)
    assert not is_letter_id(12)


# -- canonical form is stable (property) ---------------------------------------

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
)
_json = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
_keys = st.sampled_from(["ts", "agent", "kind", "brain", "repo", "tool", "class", "what", "answers", "x", "Z", "a_b"])
_objects = st.dictionaries(_keys | st.text(max_size=6), _json, max_size=10)


@settings(deadline=None)
@given(_objects)
def test_canonical_line_is_a_fixed_point(d: dict[str, Any]) -> None:
    line = canonical_line(d)
    assert canonical_line(json.loads(line)) == line


@settings(deadline=None)
@given(_objects, st.randoms(use_true_random=False))
def test_key_order_never_changes_the_id(d: dict[str, Any], rnd: random.Random) -> None:
    def shuffled(value: Any) -> Any:
        if isinstance(value, dict):
            items = list(value.items())
            rnd.shuffle(items)
            return {k: shuffled(v) for k, v in items}
        if isinstance(value, list):
            return [shuffled(v) for v in value]
        return value

    assert letter_id(canonical_line(shuffled(d))) == letter_id(canonical_line(d))


@settings(deadline=None)
@given(_objects)
def test_canonical_line_keeps_every_key_and_value(d: dict[str, Any]) -> None:
    # unknown keys are part of the letter (DESIGN 2): nothing is dropped
    assert json.loads(canonical_line(d)) == json.loads(json.dumps(d))


def _spec_line(d: dict[str, Any]) -> bytes:
    """The canonical form as DESIGN 2 and the first ids fixed it: known fields first, the rest sorted,
    every nested object's keys sorted, rebuilt in Python (the reference the fast form must equal)."""
    from dovecote.model.letters import CANONICAL_ORDER

    def deep(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: deep(v[k]) for k in sorted(v)}
        return [deep(x) for x in v] if isinstance(v, list) else v

    head = {k: deep(d[k]) for k in CANONICAL_ORDER if k in d}
    return orjson.dumps({**head, **{k: deep(d[k]) for k in sorted(d) if k not in head}})


@settings(deadline=None)
@given(_objects)
def test_canonical_line_is_byte_identical_to_the_reference_form(d: dict[str, Any]) -> None:
    # a letter's id is over these bytes: a faster canonical form that wrote other bytes would change ids
    assert canonical_line(d) == _spec_line(d)


# -- decoding --------------------------------------------------------------------


def test_decode_line_reads_the_known_fields_and_keeps_the_bytes() -> None:
    letter = decode_line(VECTOR_LINE)
    assert letter is not None
    assert letter.id == VECTOR_ID
    assert letter.raw == VECTOR_LINE
    assert (letter.ts, letter.agent, letter.repo, letter.tool, letter.klass) == (
        "2026-07-05T10:00:00Z", "probe", "repo-a", "seek", "bug",
    )
    assert letter.data() == VECTOR
    assert letter.is_report and not letter.is_receipt and not letter.is_misdelivery


def test_a_stored_id_is_ignored_and_never_trusted() -> None:
    line = b'{"id":"000000000000","tool":"seek","class":"bug"}'
    letter = decode_line(line)
    assert letter is not None
    assert letter.id == letter_id(line) != "000000000000"


def test_wrong_typed_known_fields_read_as_absent() -> None:
    line = b'{"ts":5,"agent":["a"],"repo":{"x":1},"brain":false,"tool":7,"class":"bug","answers":"abc","what":"w"}'
    letter = decode_line(line)
    assert letter is not None, "a wrong-typed field must not drop the letter"
    assert letter.id == letter_id(line)
    assert (letter.ts, letter.agent, letter.repo, letter.brain, letter.tool, letter.answers) == (
        None, None, None, None, None, None,
    )
    assert letter.klass == "bug"


def test_lenient_decoding_keeps_every_correctly_typed_field() -> None:
    # one wrong entry (the 3 in answers) sends the line to the lenient path: every other known field must still be read
    line = (
        b'{"ts":"2026-07-05T10:00:00Z","agent":"probe","kind":"message","repo":"repo-a","brain":"b1",'
        b'"tool":"seek","ref":"0123456789ab","symptom":"crash","class":"bug","answers":["e59b1adb1c4b",3]}'
    )
    letter = decode_line(line)
    assert letter is not None
    assert (letter.ts, letter.agent, letter.kind, letter.repo, letter.brain, letter.tool, letter.ref) == (
        "2026-07-05T10:00:00Z", "probe", "message", "repo-a", "b1", "seek", "0123456789ab",
    )
    assert (letter.symptom, letter.klass, letter.answers) == ("crash", "bug", [VECTOR_ID])
    assert (letter.id, letter.raw) == (letter_id(line), line)
    wrong = decode_line(b'{"ts":"t","kind":7,"class":["bug"],"symptom":null,"ref":{}}')
    assert wrong is not None
    assert (wrong.ts, wrong.kind, wrong.klass, wrong.symptom, wrong.ref) == ("t", None, None, None, None)


def test_answers_keep_only_their_string_entries() -> None:
    letter = decode_line(b'{"class":"triage","answers":[1,"e59b1adb1c4b",null]}')
    assert letter is not None
    assert letter.answers == [VECTOR_ID]
    assert letter.is_receipt


def test_non_object_lines_are_not_letters() -> None:
    for line in (b"[1,2]", b'"text"', b"42", b"null", b"true", b"not json", b"{", b"{}x"):
        assert decode_line(line) is None, line


def test_empty_object_is_a_letter() -> None:
    letter = decode_line(b"{}")
    assert letter is not None and letter.is_report


def test_receipt_class_is_case_insensitive_misdelivery_is_exact() -> None:
    assert make_letter({"class": "TRIAGE"}).is_receipt
    assert make_letter({"class": "Triage"}).is_receipt
    assert make_letter({"class": "memory_misdelivery"}).is_misdelivery
    assert not make_letter({"class": "Memory_Misdelivery"}).is_misdelivery


def test_report_kinds() -> None:
    assert make_letter({"kind": "report"}).is_report
    # legacy m1nd lines carry the misdelivery sub-kind in ``kind``
    assert make_letter({"kind": "false_absence", "class": "memory_misdelivery"}).is_report
    assert not make_letter({"kind": "mission"}).is_report
    assert not make_letter({"kind": "message"}).is_report


def test_reader_reads_a_wrong_typed_line_as_a_letter(tmp_path: Path) -> None:
    # the batch decoder fails on a type error; the reader must fall back, not drop lines
    path = tmp_path / "l.jsonl"
    good = canonical_line(rep("good"))
    odd = b'{"tool":5,"class":"bug","what":"odd"}'
    path.write_bytes(good + b"\n" + odd + b"\n")
    r = LedgerReader(path)
    r.refresh()
    assert [lt.id for lt in r.letters] == [letter_id(good), letter_id(odd)]
    assert r.index[letter_id(odd)].tool is None
    assert r.defects == []


def test_reader_reports_non_object_lines_with_their_line_number(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    good = canonical_line(rep("good"))
    path.write_bytes(good + b"\n[1]\n\nnot json\n" + canonical_line(rep("after")) + b"\n")
    r = LedgerReader(path)
    r.refresh()
    assert len(r.letters) == 2
    assert [(d.line, d.kind) for d in r.defects] == [(2, "malformed"), (4, "malformed")]
    assert all(d.path == str(path) for d in r.defects)


# -- lines the batch decoder accepts but a full JSON parse refuses -----------------------------

ODD_LINES = (
    b'{"tool":"seek","class":"bug","what":"w","x":1e400}',  # a number beyond a double
    b'{"tool":"seek","class":"bug","what":"caf\xe9"}',  # latin-1 bytes in a field the folds skip
)


def _nested(depth: int) -> bytes:
    return b'{"tool":"seek","class":"bug","x":' + b"[" * depth + b"]" * depth + b"}"


def test_a_letter_with_odd_bytes_still_has_data() -> None:
    for line in ODD_LINES:
        letter = decode_line(line)
        if letter is None:
            continue  # refusing it as malformed would be fine too
        d = letter.data()
        assert d["tool"] == "seek" and d["class"] == "bug", line


def test_data_reads_what_orjson_refuses_with_the_standard_library() -> None:
    # bytes that are not UTF-8 send data() to json; an integer past its digit limit reads as a float there
    line = b'{"tool":"seek","n":12,"x":' + b"9" * 5000 + b',"what":"caf\xe9"}'
    letter = decode_line(line)
    assert letter is not None
    assert letter.data() == {"tool": "seek", "n": 12, "x": float("inf"), "what": "caf\ufffd"}
    assert type(letter.data()["n"]) is int


def test_text_or_none_reads_only_strings() -> None:
    assert text_or_none("a") == "a" and text_or_none("") == ""
    assert [text_or_none(v) for v in (None, 5, 1.5, True, ["a"], {"a": 1}, b"a")] == [None] * 7


def test_the_batch_decoder_takes_clean_lines_and_sends_the_rest_back() -> None:
    lines = [canonical_line(rep("a")), canonical_line(rep("b"))]
    got = decode_lines_fast(b"\n".join(lines), lines)
    assert got is not None
    assert [(lt.tool, lt.klass, lt.ts) for lt in got] == [("seek", "bug", "2026-07-05T10:00:00Z")] * 2
    assert decode_lines_fast(b"", []) is None  # nothing to decode: the slow path says so
    for odd in ([b' {"a":1}'], [b""], [b'{"a":1}{"b":2}'], [b'{"tool":5}'], [b"[1]"], [_nested(5000)]):
        assert decode_lines_fast(b"\n".join(odd), odd) is None, odd


def test_a_deeply_nested_line_is_malformed_not_a_crash(tmp_path: Path) -> None:
    deep = _nested(5000)
    assert decode_line(deep) is None
    path = tmp_path / "l.jsonl"
    path.write_bytes(canonical_line(rep("a")) + b"\n" + deep + b"\n" + canonical_line(rep("b")) + b"\n")
    r = LedgerReader(path)
    r.refresh()
    assert [lt.id for lt in r.letters] == [lid(rep("a")), lid(rep("b"))]
    assert [(d.line, d.kind) for d in r.defects] == [(2, "malformed")]


def test_odd_lines_never_break_a_sweep(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    dc.report([rep("plain", repo="all")])
    with open(dc.layout.spool, "ab") as f:
        for line in (*ODD_LINES, _nested(5000)):
            f.write(line + b"\n")
    d = dc.sweep(Sweep(include_all=True)).to_dict()
    # every line is either a letter or a reported defect, and nothing crashes
    assert d["total"] + len(d["malformed"]) == 4
    assert d["total"] >= 1
    assert dc.doctor().mailbox["available"] is True

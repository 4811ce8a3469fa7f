"""``report``: every validation rule, all-or-nothing batches, idempotent appends."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.letters import canonical_line, letter_id
from dovecote.roster.config import Limits
from helpers import VECTOR, VECTOR_ID, new_home, rep, rewrite_roster

ID = VECTOR_ID


def refused(dc: Dovecote, objs: list[Any], *, agent: str | None = "tester") -> Refusal:
    """Assert ``report`` refuses and leaves the spool byte for byte as it was."""
    before = dc.layout.spool.read_bytes() if dc.layout.spool.exists() else None
    with pytest.raises(Refusal) as e:
        dc.report(objs, actor=agent)
    after = dc.layout.spool.read_bytes() if dc.layout.spool.exists() else None
    assert after == before
    return e.value


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return new_home(tmp_path)


# -- accepted ---------------------------------------------------------------------------------


def test_a_report_lands_in_the_spool_as_its_canonical_line(dc: Dovecote) -> None:
    obj = rep("w1", symptom="false_absence", expected="e", snippet="s", brain="beacon")
    [(i, appended)] = dc.report([obj])
    assert appended
    assert dc.layout.spool.read_bytes() == canonical_line(obj) + b"\n"
    assert i == letter_id(canonical_line(obj))


def test_ts_and_agent_are_filled_in_when_absent(dc: Dovecote) -> None:
    [(i, _)] = dc.report([{"tool": "seek", "class": "bug", "what": "w"}], actor="alice")
    line = dc.layout.spool.read_bytes().rstrip(b"\n")
    d = orjson.loads(line)
    assert d["agent"] == "alice"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", d["ts"])
    assert letter_id(line) == i


def test_the_letters_own_agent_wins_over_the_default(dc: Dovecote) -> None:
    [(i, _)] = dc.report([dict(VECTOR)], actor="someone-else")
    assert i == ID


def test_a_duplicate_report_appends_nothing_and_says_so(dc: Dovecote) -> None:
    assert dc.report([dict(VECTOR)]) == [(ID, True)]
    before = dc.layout.spool.read_bytes()
    assert dc.report([dict(VECTOR)]) == [(ID, False)]
    assert dc.report([dict(VECTOR), dict(VECTOR)]) == [(ID, False), (ID, False)]
    assert dc.layout.spool.read_bytes() == before


def test_duplicates_within_one_batch_are_written_once(dc: Dovecote) -> None:
    assert dc.report([dict(VECTOR), dict(VECTOR)]) == [(ID, True), (ID, False)]
    assert dc.layout.spool.read_bytes().count(b"\n") == 1


def test_none_values_are_dropped_not_written(dc: Dovecote) -> None:
    [(i, _)] = dc.report([{**VECTOR, "expected": None}])
    assert i == ID


def test_a_receipt_with_every_receipt_field(dc: Dovecote) -> None:
    obj = rep(
        "fixed", klass="triage", tool="triage", answers=[ID], disposition="fixed",
        fingerprint="fp:north/false_absence", case_id="case-1", sentinel={"probe": "p", "expect": "absent"},
    )
    [(_, appended)] = dc.report([obj])
    assert appended


def test_a_misdelivery_with_its_kind(dc: Dovecote) -> None:
    for kind in ("leak", "false_absence", "wrong_store_write", "misattribution", "vanished"):
        [(_, appended)] = dc.report([rep(kind, klass="memory_misdelivery", misdelivery_kind=kind)])
        assert appended


@pytest.mark.parametrize("ts", ["2026-07-05T10:00:00Z", "2026-07-05T10:00:00.123Z", "2026-07-05T10:00:00+00:00"])
def test_good_timestamps(dc: Dovecote, ts: str) -> None:
    dc.report([rep(ts=ts)])


# -- refused, with the keyword, nothing written ----------------------------------------------


def test_unknown_field(dc: Dovecote) -> None:
    assert refused(dc, [rep(colour="blue")]).reason == "unknown_field"
    assert refused(dc, [rep(id=ID)]).reason == "unknown_field"


@pytest.mark.parametrize(
    "field,value",
    [("tool", 5), ("what", ["w"]), ("repo", {"x": 1}), ("ts", 1), ("agent", True), ("class", 3), ("brain", 1.5)],
)
def test_wrong_type(dc: Dovecote, field: str, value: Any) -> None:
    assert refused(dc, [{**rep(), field: value}]).reason == "invalid_field"


def test_nul_in_a_string(dc: Dovecote) -> None:
    assert refused(dc, [rep("a\x00b")]).reason == "invalid_field"


@pytest.mark.parametrize("field", ["tool", "class", "what"])
@pytest.mark.parametrize("blank", ["", "   "])
def test_blank_required_field(dc: Dovecote, field: str, blank: str) -> None:
    assert refused(dc, [{**rep(), field: blank}]).reason == "missing_field"


@pytest.mark.parametrize("field", ["tool", "class", "what"])
def test_absent_required_field(dc: Dovecote, field: str) -> None:
    obj = rep()
    del obj[field]
    assert refused(dc, [obj]).reason == "missing_field"


def test_blank_agent(dc: Dovecote) -> None:
    assert refused(dc, [rep(agent=" ")]).reason == "missing_field"


def test_empty_batch(dc: Dovecote) -> None:
    assert refused(dc, []).reason == "missing_field"


def test_not_an_object(dc: Dovecote) -> None:
    assert refused(dc, ["text"]).reason == "invalid_json"
    assert refused(dc, [[1]]).reason == "invalid_json"


@pytest.mark.parametrize("klass", ["Bug", "note", "triage ", "other"])
def test_bad_class(dc: Dovecote, klass: str) -> None:
    assert refused(dc, [rep(klass=klass)]).reason == "invalid_field"


def test_bad_symptom(dc: Dovecote) -> None:
    assert refused(dc, [rep(symptom="other")]).reason == "unknown_symptom"  # issue 10: no "other"


def test_bad_kind(dc: Dovecote) -> None:
    assert refused(dc, [rep(kind="mission")]).reason == "invalid_field"
    dc.report([rep(kind="report")])


def test_misdelivery_needs_its_kind(dc: Dovecote) -> None:
    assert refused(dc, [rep(klass="memory_misdelivery")]).reason == "missing_field"


def test_bad_misdelivery_kind(dc: Dovecote) -> None:
    assert refused(dc, [rep(klass="memory_misdelivery", misdelivery_kind="lost")]).reason == "invalid_field"


def test_misdelivery_kind_on_another_class(dc: Dovecote) -> None:
    assert refused(dc, [rep(misdelivery_kind="leak")]).reason == "invalid_field"


@pytest.mark.parametrize(
    "field,value",
    [("disposition", "fixed"), ("fingerprint", "fp:north/crash"), ("case_id", "c1"), ("sentinel", {"probe": "p"})],
)
def test_receipt_only_fields_on_a_non_receipt(dc: Dovecote, field: str, value: Any) -> None:
    assert refused(dc, [rep(**{field: value})]).reason == "invalid_field"
    # the same field is fine on a receipt (a sentinel only on a fixed one)
    extra = {"disposition": "fixed"} if field == "sentinel" else {}
    dc.report([rep(klass="triage", answers=[ID], **{field: value}, **extra)])


@pytest.mark.parametrize("disposition", [None, "declined", "moot"])
def test_a_sentinel_rides_only_a_fixed_receipt(dc: Dovecote, disposition: str | None) -> None:
    extra = {"disposition": disposition} if disposition else {}
    r = refused(dc, [rep(klass="triage", answers=[ID], sentinel={"probe": "p", "expect": "absent"}, **extra)])
    assert r.reason == "invalid_field" and "fixed" in r.detail


def test_a_fingerprint_names_a_symptom_from_the_vocabulary(dc: Dovecote) -> None:
    assert refused(dc, [rep(klass="triage", answers=[ID], fingerprint="fp:north/other")]).reason == "unknown_symptom"
    dc.report([rep(klass="triage", answers=[ID], fingerprint="fp:north/false_absence")])


@pytest.mark.parametrize(
    "field,value",
    [
        ("disposition", "done"),
        ("fingerprint", "north/crash"),
        ("fingerprint", "fp:north"),
        ("sentinel", {}),
        ("sentinel", {"probe": 1}),
        ("sentinel", "probe"),
    ],
)
def test_bad_receipt_field_values(dc: Dovecote, field: str, value: Any) -> None:
    assert refused(dc, [rep(klass="triage", answers=[ID], **{field: value})]).reason == "invalid_field"


@pytest.mark.parametrize(
    "answers", [[], "e59b1adb1c4b", ["E59B1ADB1C4B"], ["e59b1adb1c4"], ["e59b1adb1c4bb"], [ID, 5], ["zzzzzzzzzzzz"]]
)
def test_bad_answers(dc: Dovecote, answers: Any) -> None:
    assert refused(dc, [rep(answers=answers)]).reason == "invalid_field"


@pytest.mark.parametrize(
    "ts",
    [
        "2026-07-05 10:00:00Z",
        "2026-07-05T10:00:00",
        "2026-07-05T10:00:00+02:00",
        "2026-13-05T10:00:00Z",
        "2026-02-30T10:00:00Z",
        "2026-07-05T25:00:00Z",
        "yesterday",
        "",
    ],
)
def test_bad_ts(dc: Dovecote, ts: str) -> None:
    assert refused(dc, [rep(ts=ts)]).reason == "invalid_field"


def test_reserved_agent(dc: Dovecote) -> None:
    assert refused(dc, [rep(agent="dovecote:engine")]).reason == "reserved_agent"
    assert refused(dc, [{"tool": "t", "class": "bug", "what": "w"}], agent="dovecote:engine").reason == "reserved_agent"


#: Names a person would read as the engine's: case, full-width letters, zero-width and bidi characters inside.
ENGINE_LOOKALIKES = ["Dovecote:Engine", "DOVECOTE:ENGINE", "\uff44\uff4f\uff56\uff45\uff43\uff4f\uff54\uff45:engine",
                     "dovecote:\u200bengine", "dove\u200dcote:engine", "\u202edovecote:engine", "dovecote\ufe55engine"]


@pytest.mark.parametrize("name", ENGINE_LOOKALIKES)
def test_a_lookalike_of_the_engine_name_is_reserved_too(dc: Dovecote, name: str) -> None:
    before = sorted((p, p.read_bytes()) for p in dc.layout.root.rglob("*.jsonl"))
    assert refused(dc, [rep(agent=name)]).reason == "reserved_agent"
    assert refused(dc, [{"tool": "t", "class": "bug", "what": "w"}], agent=name).reason == "reserved_agent"
    assert sorted((p, p.read_bytes()) for p in dc.layout.root.rglob("*.jsonl")) == before  # nothing written
    # a name that only starts like it is anyone's
    assert dc.report([rep(agent=name + "-fan")]) is not None


def test_too_large_against_the_configured_limit(dc: Dovecote) -> None:
    small = rewrite_roster(dc, limits=Limits(report_max_bytes=300))
    small.report([rep("x" * 100)])
    r = refused(small, [rep("x" * 400)])
    assert r.reason == "too_large"
    assert "300" in r.detail


def test_the_limit_is_on_the_line_bytes(dc: Dovecote) -> None:
    line = canonical_line(dict(VECTOR))
    exact = rewrite_roster(dc, limits=Limits(report_max_bytes=len(line)))
    assert exact.report([dict(VECTOR)]) == [(ID, True)]
    tight = rewrite_roster(dc, limits=Limits(report_max_bytes=len(line) - 1))
    assert refused(tight, [{**VECTOR, "what": "w2"}]).reason == "too_large"


def test_one_bad_object_in_a_batch_writes_nothing(dc: Dovecote) -> None:
    dc.report([rep("already here")])
    batch = [rep("good 1"), rep("good 2"), rep("bad", colour="x"), rep("good 3")]
    r = refused(dc, batch)
    assert r.reason == "unknown_field"
    assert "report 3 of 4" in r.detail


def test_a_batch_refusal_on_a_fresh_home_creates_no_spool(dc: Dovecote) -> None:
    refused(dc, [rep("good"), rep(klass="nope")])
    assert not dc.layout.spool.exists()


# -- one schema: the typed verb ``verbs.Report`` ----------------------------------------------


def test_a_receipt_carrying_commit_is_a_field_report(dc: Dovecote) -> None:
    """``receipt`` writes ``commit`` (from ``--ref``), so ``report`` takes a receipt carrying it."""
    obj = rep("fixed", klass="triage", tool="triage", answers=[ID], disposition="fixed", commit="3f2a9c1")
    [(i, appended)] = dc.report([obj])
    assert appended and i == letter_id(canonical_line(obj))
    assert orjson.loads(dc.layout.spool.read_bytes())["commit"] == "3f2a9c1"


def test_commit_on_a_report_that_is_not_a_receipt_is_invalid_field(dc: Dovecote) -> None:
    r = refused(dc, [rep(commit="3f2a9c1")])
    assert r.reason == "invalid_field" and "receipt" in r.detail


def test_a_receipts_own_line_filed_again_through_report_is_the_same_letter(dc: Dovecote) -> None:
    from dovecote import verbs

    dc.report([dict(VECTOR)])
    minted = dc.receipt(verbs.Receipt(answers=[ID], disposition=verbs.Disposition.fixed, ref="3f2a9c1"))
    assert minted.box == "spool"
    [line] = [ln for ln in dc.layout.spool.read_bytes().splitlines() if letter_id(ln) == minted.id]
    assert orjson.loads(line)["commit"] == "3f2a9c1"
    assert dc.report([orjson.loads(line)]) == [(minted.id, False)]


def test_every_field_of_the_typed_verb_and_no_other_is_part_of_a_report() -> None:
    """``check_report`` (what ``receipt`` calls) and the faces (which decode ``verbs.Report``) accept one set of
    fields: a field the verb has is never ``unknown_field``, and one it lacks always is."""
    import msgspec

    from dovecote import verbs
    from dovecote.ops.reports.report import check_report

    def reason(obj: dict[str, Any]) -> str | None:
        try:
            check_report(obj, agent="a", ts="2026-07-05T10:00:00Z", max_bytes=100_000)
        except Refusal as e:
            return e.reason
        return None

    names = [f.encode_name for f in msgspec.structs.fields(verbs.Report)]
    assert "commit" in names
    for name in names:
        assert reason({**rep(klass="triage", answers=[ID]), name: "x"}) != "unknown_field", name
    assert reason(rep(colour="blue")) == "unknown_field"

"""Symptoms and fingerprints: the closed vocabulary, the legacy readers, and each backfill rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dovecote import verbs
from dovecote.derive.cases.symptoms import (
    MISDELIVERY_SYMPTOM,
    RULE_NAMES,
    RULES,
    fingerprint_of,
    parse_fingerprint,
    symptom_rule,
    tool_family,
)
from dovecote.errors import Refusal
from dovecote.model.letters import make_letter
from dovecote.model.vocab import SYMPTOMS
from helpers import new_home, rep, run_cli, snapshot

CASES_PAGE = Path(__file__).resolve().parents[2] / "docs" / "concepts" / "cases.md"


def letter(what: str, klass: str = "honesty", tool: str = "north", **more: object):  # type: ignore[no-untyped-def]
    return make_letter({"ts": "2026-07-05T10:00:00Z", "agent": "probe", "tool": tool, "class": klass, "what": what,
                        **more})


def test_tool_family_lowercases_drops_the_parenthesised_suffix_and_trims() -> None:
    assert tool_family("north (memory beat)") == "north"
    assert tool_family("North(beat v2) ") == "north"
    assert tool_family("  Seek  ") == "seek"
    assert tool_family("(only a suffix)") is None
    assert tool_family(None) is None


def test_two_suffix_variants_form_one_family_and_one_fingerprint() -> None:
    a = letter("came back empty over a non-empty store", tool="north (memory beat)")
    b = letter("came back empty over a non-empty store", tool="North (beat v2)")
    assert fingerprint_of(a) == fingerprint_of(b) == "fp:north/false_absence"


def test_no_symptom_no_fingerprint() -> None:
    assert fingerprint_of(letter("something odd happened", klass="bug")) is None


def test_an_authored_symptom_wins_over_every_rule() -> None:
    lt = letter("came back empty over a non-empty store", symptom="ux_confusion")
    assert symptom_rule(lt) == ("ux_confusion", "authored")


def test_a_receipt_is_never_a_witness() -> None:
    assert fingerprint_of(letter("empty over data that exists", klass="triage", symptom="crash")) is None


def test_parse_fingerprint_takes_only_the_canonical_form() -> None:
    assert parse_fingerprint("fp:north/false_absence") == ("north", "false_absence")
    assert parse_fingerprint("fp:memory beat/crash") == ("memory beat", "crash")
    assert parse_fingerprint("fp:North/false_absence") is None  # families are lowercased
    assert parse_fingerprint("fp:north/other") is None  # there is no other
    assert parse_fingerprint("north/false_absence") is None


# -- the legacy fields -----------------------------------------------------------


def test_rule_legacy_kind_reads_a_kind_that_names_a_symptom_without_rewriting() -> None:
    lt = letter("whatever", klass="bug", kind="stale_claim")
    before = lt.raw
    assert symptom_rule(lt) == ("stale_claim", "legacy_kind")
    assert lt.raw == before


@pytest.mark.parametrize("sub", sorted(MISDELIVERY_SYMPTOM))
def test_rule_misdelivery_kind_maps_a_legacy_kind_and_the_new_field(sub: str) -> None:
    legacy = letter("x", klass="memory_misdelivery", kind=sub)
    new = letter("x", klass="memory_misdelivery", misdelivery_kind=sub)
    want = (MISDELIVERY_SYMPTOM[sub], "legacy_kind" if sub in SYMPTOMS else "misdelivery_kind")
    assert symptom_rule(legacy) == want
    assert symptom_rule(new) == (MISDELIVERY_SYMPTOM[sub], "misdelivery_kind")


def test_misattribution_names_no_symptom() -> None:
    assert symptom_rule(letter("x", klass="memory_misdelivery", misdelivery_kind="misattribution")) is None


# -- one test per backfill rule (RULES) ----------------------------------------------

CASES: dict[str, tuple[str, str, str]] = {  # rule -> (class, what that matches, what that does not)
    "empty_answer_over_data": ("honesty", "the beat was EMPTY over a non-empty memory store",
                               "the beat was empty, as it should be"),
    "crash_trace": ("bug", "seek crashed with a Traceback", "seek was slow"),
    "stale_claim": ("friction", "a stale claim still held the item", "a stale page"),
    "overclaimed_verdict": ("honesty", "the tool claimed success but the file is unchanged", "the tool worked"),
    "misrouted": ("bug", "the letter was filed in the wrong box", "the letter was filed"),
    "silently_dropped": ("bug", "the message never arrived", "the message arrived late"),
    "outside_scope": ("bug", "the agent wrote outside the project root", "the agent wrote a file"),
    "confusing_output": ("friction", "the sweep output is confusing", "the sweep output is long"),
}


def test_every_rule_has_its_test_and_a_row_on_the_cases_page() -> None:
    assert set(CASES) == {r.name for r in RULES}
    text = CASES_PAGE.read_text()
    for name in RULE_NAMES:
        assert f"`{name}`" in text, f"docs/concepts/cases.md lists no backfill rule {name}"


@pytest.mark.parametrize("rule", [r for r in RULES], ids=lambda r: r.name)
def test_rule(rule: object) -> None:
    from dovecote.derive.cases.symptoms import Rule

    assert isinstance(rule, Rule)
    klass, hit, miss = CASES[rule.name]
    assert symptom_rule(letter(hit, klass=klass)) == (rule.symptom, rule.name)
    assert symptom_rule(letter(miss, klass=klass)) is None
    other = "win"  # a rule never reaches a class it does not name
    assert symptom_rule(letter(hit, klass=other)) is None


def test_rules_are_first_match_wins_in_table_order() -> None:
    both = letter("crashed with a traceback and the beat was empty over existing memory", klass="honesty")
    assert symptom_rule(both) == ("false_absence", "empty_answer_over_data")


_RULE_WORDS = sorted({w for r in RULES for w in (*r.any_of, *r.and_any_of)})


@given(
    st.lists(st.one_of(st.sampled_from(_RULE_WORDS), st.text("claimeD stAle empty-ok ", max_size=6)), max_size=8),
    st.sampled_from(sorted({k for r in RULES for k in r.classes})),
)
def test_the_rules_decide_as_written_on_overlapping_and_nested_words(parts: list[str], klass: str) -> None:
    """The one pass over a text (a tree of every rule word, each word of a class found once) gives
    what the table says, rule by rule in order: words cut off, run together, inside each other."""
    what = "".join(parts)
    want = next(((r.symptom, r.name) for r in RULES if r.matches(klass, what.lower())), None)
    assert symptom_rule(letter(what, klass=klass)) == want


def test_an_engine_letter_gets_no_inferred_symptom() -> None:
    assert symptom_rule(letter("seek crashed with a traceback", klass="bug", agent="dovecote:engine")) is None


# -- unknown_symptom on every way in --------------------------------------------------


def test_an_unknown_symptom_is_refused_by_the_verb_and_by_the_report_check() -> None:
    with pytest.raises(Refusal) as e:
        verbs.decode(verbs.Report, {"tool": "t", "class": "bug", "what": "w", "symptom": "other"})
    assert e.value.reason == "unknown_symptom"
    from dovecote.ops.reports.report import check_report

    with pytest.raises(Refusal) as e2:
        check_report(rep(symptom="other"), agent="a", ts="2026-07-05T10:00:00Z", max_bytes=10_000)
    assert e2.value.reason == "unknown_symptom"


def test_the_cli_refuses_an_unknown_symptom_with_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    before = snapshot(dc.layout.root)
    r = run_cli(tmp_path, "report", "--tool", "t", "--class", "bug", "--what", "w", "--symptom", "misc",
                home=dc.layout.root)
    assert r.returncode == 2 and b"unknown_symptom" in r.stderr and b"Traceback" not in r.stderr
    assert snapshot(dc.layout.root) == before


def test_a_receipt_fingerprint_with_an_unknown_symptom_is_unknown_symptom() -> None:
    from dovecote.derive.cases.symptoms import check_fingerprint

    with pytest.raises(Refusal) as e:
        check_fingerprint("fp:north/other")
    assert e.value.reason == "unknown_symptom"
    with pytest.raises(Refusal) as e2:
        check_fingerprint("north")
    assert e2.value.reason == "invalid_field"

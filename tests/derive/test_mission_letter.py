"""The mission letter, pure: the m1nd test vector, validation (first failure wins, each keyword),
the phase graph as one table, and the chain fold (heads, superseded, forks), with property tests."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.derive.missions import chain as chains
from dovecote.derive.missions import letter as ml
from dovecote.derive.missions.letter import TRANSITIONS, Phase
from dovecote.errors import Refusal
from dovecote.model.letters import decode_line, letter_id
from missionhelpers import GATE, VECTOR, VECTOR_AGENT, VECTOR_ID, candidate, for_phase, letter


def reason(data: object) -> str:
    with pytest.raises(Refusal) as e:
        ml.validate(data)
    return e.value.reason


def test_the_m1nd_vector_gets_m1nds_id() -> None:
    line = ml.line_of(ml.validate(VECTOR), VECTOR_AGENT)
    assert letter_id(line) == VECTOR_ID
    assert line.startswith(b'{"kind":"mission","agent":"agent-a","ts":"2026-07-09T00:00:00Z","mission":{"schema"')
    assert b"synthetic" not in line and b"prev_letter_id" not in line  # absent options and false synthetic omitted


def test_the_dovecote_schema_is_written_canonically_and_reads_back() -> None:
    m = ml.validate({**VECTOR, "schema": ml.SCHEMA_V1, "synthetic": True})
    line = ml.line_of(m, "agent-a")
    got = decode_line(line)
    assert got is not None and got.kind == "mission" and got.ts == VECTOR["updated_at"]
    assert got.data()["mission"]["synthetic"] is True and ml.validate(got.data()["mission"]) == m


@pytest.mark.parametrize(("change", "keyword"), [
    ({"schema": "m1nd-mission-letter-v9"}, "schema_mismatch"),
    ({"schema": None}, "schema_mismatch"),
    ({"colour": "red"}, "unknown_field"),
    ({"verdict": {"decision": "APPROVE", "gist": "g", "extra": 1}}, "unknown_field"),
    ({"mission_seq": "1"}, "invalid_field"),
    ({"seat": "pilot"}, "invalid_field"),
    ({"capability": "magic-runner"}, "invalid_field"),
    ({"mission_id": "msn_0123"}, "invalid_mission_id"),
    ({"mission_id": "msn_0123456789AB"}, "invalid_mission_id"),
    ({"mission_seq": 0}, "invalid_seq"),
    ({"prev_letter_id": "0123456789ab"}, "invalid_seq"),
    ({"mission_seq": 2}, "invalid_seq"),
    ({"brain_ref": "/home/me/repo-a"}, "absolute_path"),
    ({"brain_ref": "~/repo-a"}, "absolute_path"),
    ({"brain_ref": "C:\\repo"}, "absolute_path"),
    ({"packet_ref": "see /etc/passwd"}, "absolute_path"),
    ({"phase": "gate", "gate": {**GATE, "command": "cd /home/me && make"}}, "absolute_path"),
    ({"phase": "sleeping"}, "invalid_phase"),
    ({"phase": "executing", "verdict": {"decision": "APPROVE", "gist": "ok"}}, "invalid_phase"),
    ({"phase": "landed"}, "landed_law"),
    ({"phase": "landed", "receipt": {"imported": False, "store_version": 1}}, "landed_law"),
    ({"phase": "landed", "receipt": {"imported": True, "store_version": 0}}, "landed_law"),
    ({"phase": "merge_wait"}, "incomplete_evidence"),
    ({"phase": "merge_wait", "gate": {**GATE, "exit_status": 1}}, "incomplete_evidence"),
    ({"phase": "merge_wait", "gate": {**GATE, "command": " "}}, "incomplete_evidence"),
    ({"phase": "gate", "gate": {**GATE, "artifact_hash": ""}}, "incomplete_evidence"),
    ({"receipt_candidate": {**candidate(), "evidence": {**candidate()["evidence"], "evidence_refs": []}}},
     "incomplete_evidence"),
    ({"receipt_candidate": {**candidate(), "evidence": {**candidate()["evidence"], "artifact_hash": ""}}},
     "incomplete_evidence"),
])
def test_each_rule_refuses_with_its_keyword(change: dict[str, Any], keyword: str) -> None:
    assert reason({**VECTOR, **change}) == keyword


def test_words_that_are_not_paths_pass() -> None:
    # a tilde before a number, a slash between words and a URL are words: kept as written
    gist = "~5 tests, a/b https://x/y"
    m = ml.validate({**VECTOR, "phase": "judging", "verdict": {"decision": "CHANGE", "gist": gist}})
    assert m.phase == "judging" and m.verdict is not None
    assert (m.verdict.decision, m.verdict.gist) == ("CHANGE", gist)
    assert decode_line(ml.line_of(m, VECTOR_AGENT)).data()["mission"]["verdict"]["gist"] == gist  # type: ignore[union-attr]
    # the same place with a path in it is refused: the words above passed on their merits
    assert reason({**VECTOR, "phase": "judging", "verdict": {"decision": "CHANGE", "gist": "see ~/x"}}) == (
        "absolute_path")


#: The rules in the issue's order; a letter breaking several is refused by the first.
ORDER = ["schema_mismatch", "invalid_mission_id", "invalid_seq", "absolute_path", "invalid_phase", "landed_law",
         "incomplete_evidence"]
BREAK: dict[str, dict[str, Any]] = {
    "schema_mismatch": {"schema": "v0"},
    "invalid_mission_id": {"mission_id": "msn_x"},
    "invalid_seq": {"mission_seq": 0},
    "absolute_path": {"brain_ref": "/abs"},
    "invalid_phase": {"verdict": {"decision": "APPROVE", "gist": "g"}},  # with phase executing below
    "landed_law": {},  # phase landed below, no receipt
    "incomplete_evidence": {"gate": {**GATE, "artifact_hash": ""}},
}


@settings(max_examples=150, deadline=None)
@given(st.sets(st.sampled_from(ORDER), min_size=1))
def test_the_first_failure_in_the_issues_order_wins(broken: set[str]) -> None:
    data: dict[str, Any] = dict(VECTOR)
    for k in broken:
        data.update(BREAK[k])
    if "invalid_phase" in broken:
        data["phase"] = "executing"
    elif "landed_law" in broken:
        data["phase"] = "landed"
    assert reason(data) == next(k for k in ORDER if k in broken)


def test_the_phase_graph_is_the_issues() -> None:
    P = Phase
    assert {k: set(v) for k, v in TRANSITIONS.items()} == {
        None: {P.judging}, P.judging: {P.executing, P.failed}, P.executing: {P.gate, P.failed},
        P.gate: {P.review, P.merge_wait, P.executing, P.failed}, P.review: {P.executing, P.merge_wait, P.failed},
        P.merge_wait: {P.landed, P.executing, P.failed}, P.landed: {P.archived},
        P.failed: {P.executing, P.archived}, P.archived: set(),
    }


@pytest.mark.parametrize("head", [None, *Phase])
@pytest.mark.parametrize("nxt", list(Phase))
def test_every_move_missing_from_the_table_is_invalid_transition(head: Phase | None, nxt: Phase) -> None:
    if nxt in TRANSITIONS[head]:
        ml.check_transition(head, nxt)
        return
    with pytest.raises(Refusal) as e:
        ml.check_transition(head, nxt)
    assert e.value.reason == "invalid_transition"


def lines_of(chain: list[dict[str, Any]]) -> list[Any]:
    out = []
    for d in chain:
        got = decode_line(ml.line_of(ml.validate(d), "agent-a"))
        assert got is not None
        out.append(got)
    return out


def build(phases: list[str]) -> list[Any]:
    """A chain through ``phases``, each letter naming the one before it."""
    out: list[Any] = []
    for seq, phase in enumerate(phases, 1):
        prev = out[-1].id if out else None
        out.extend(lines_of([for_phase(phase, seq, prev)]))
    return out


def test_the_fold_follows_the_chain_to_its_head() -> None:
    ls = build(["judging", "executing", "gate", "merge_wait"])
    m = chains.fold(ls)[VECTOR["mission_id"]]
    assert [e.id for e in m.chain()] == [lt.id for lt in ls]
    row = m.head_row()
    assert row["head_letter_id"] == ls[-1].id and row["phase"] == "merge_wait" and row["mission_seq"] == 4
    assert row["superseded_count"] == 3
    assert chains.summary([row])["landing"] == 1


@settings(max_examples=100, deadline=None)
@given(st.permutations(list(range(5))), st.integers(0, 3))
def test_the_fold_is_the_same_whatever_order_the_letters_arrive(order: list[int], fork_at: int) -> None:
    """Ledgers union-merged by git can hold a chain in any order, and m1nd's unlocked posts a fork:
    the head is the end of the path from the root, and every other letter is superseded."""
    ls = build(["judging", "executing", "gate", "review", "merge_wait"])
    fork = lines_of([letter(fork_at + 2, ls[fork_at].id, "failed", runner_id="other")])
    shuffled = [ls[i] for i in order]
    m = chains.fold([*shuffled, *fork])[VECTOR["mission_id"]]
    assert len(m.entries) == 6 and m.head_row()["superseded_count"] == 5
    chain_ids = [e.id for e in m.chain()]
    assert chain_ids[0] == ls[0].id
    for a, b in itertools.pairwise(chain_ids):
        assert next(e for e in m.entries if e.id == b).prev == a
    assert set(m.forks()) | set(chain_ids) == {e.id for e in m.entries}


def test_letters_that_are_not_missions_are_no_part_of_any() -> None:
    other = [decode_line(b'{"kind":"mission","mission":{"phase":"gate"}}'), decode_line(b'{"tool":"t","what":"w"}')]
    assert chains.fold([x for x in other if x is not None]) == {}

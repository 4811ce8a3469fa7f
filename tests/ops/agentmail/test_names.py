"""mcp_agent_mail's names as dovecote's: slugs, agent entities, integer ids (the rule the importer follows too)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dovecote.errors import Refusal
from dovecote.model.addresses import check_name
from dovecote.ops.agentmail import names


def test_slugs_are_theirs() -> None:
    assert names.slugify("/tmp/amv/proj/a/") == "tmp-amv-proj-a"
    assert names.slugify("/data/projects/backend") == "data-projects-backend"
    assert names.slugify("///") == "project"
    assert names.slugify("/Users/Me/My Repo!") == "users-me-my-repo"


def test_an_agent_is_its_slug_dot_its_name_and_splits_back() -> None:
    assert names.entity_id("data-projects-backend", "GreenCastle") == "data-projects-backend.GreenCastle"
    assert names.split_entity("data-projects-backend.GreenCastle") == ("data-projects-backend", "GreenCastle")
    assert names.split_entity("data-projects-backend.cc-0.v2") == ("data-projects-backend", "cc-0.v2")
    assert names.entity_id("a", "X") != names.entity_id("b", "X")  # one name in two projects: two entities
    assert names.split_entity("ent_builder") is None  # dovecote's own entities are not agents of a project


def test_a_long_slug_is_shortened_with_its_hash_and_stays_unique() -> None:
    long_a, long_b = "p" * 200 + "-a", "p" * 200 + "-b"
    a, b = names.entity_id(long_a, "GreenCastle"), names.entity_id(long_b, "GreenCastle")
    assert a != b and len(a) <= names.MAX_ID and len(b) <= names.MAX_ID
    assert a.endswith(".GreenCastle") and check_name(a) == a
    assert names.split_entity(a) == (a.rpartition(".GreenCastle")[0], "GreenCastle")


def test_a_name_that_is_no_entity_name_is_refused() -> None:
    for bad in ("", "a/b", "..", "white space", "x" * 200):
        with pytest.raises(Refusal) as e:
            names.entity_id("proj", bad)
        assert e.value.reason == "invalid_name"


@given(st.text("0123456789abcdef", min_size=12, max_size=12))
def test_letter_ids_and_integers_are_one_another_both_ways(lid: str) -> None:
    n = names.int_id(lid)
    assert 0 <= n <= names.MAX_LETTER and names.letter_id(n) == lid


@given(st.integers(0, names.MAX_LETTER))
def test_every_integer_in_range_is_a_letter_id(n: int) -> None:
    assert names.int_id(names.letter_id(n)) == n


def test_ids_out_of_range_are_refused() -> None:
    for bad in (-1, names.MAX_LETTER + 1, True):
        with pytest.raises(Refusal) as e:
            names.letter_id(bad)
        assert e.value.reason == "invalid_field"
    for text in ("abc", "ABCDEF012345", "0123456789abg"):
        with pytest.raises(Refusal):
            names.int_id(text)


def test_generated_names_skip_the_taken_ones_case_insensitively() -> None:
    first = names.generated_name(set(), 0)
    assert first == names.ADJECTIVES[0] + names.NOUNS[0]
    assert names.generated_name({first.lower()}, 0) == names.ADJECTIVES[0] + names.NOUNS[1]
    every = {a + n for a in names.ADJECTIVES for n in names.NOUNS}
    with pytest.raises(Refusal):
        names.generated_name(every, 5)


def test_hashed_ints_are_stable_48_bit_integers() -> None:
    assert names.hashed_int("x") == names.hashed_int("x") != names.hashed_int("y")
    assert 0 <= names.hashed_int("data-projects-backend") < 2**48

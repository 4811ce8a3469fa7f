"""Names and addresses: a name can never leave its folder, wherever it enters."""

from __future__ import annotations

from pathlib import Path

import pytest

from dovecote.errors import Refusal
from dovecote.model.addresses import HOME, Address, check_name, entity, parse_address, project
from dovecote.verbs import Box, EntityAdd, ProjectAdd
from helpers import BAD_NAMES, new_home, snapshot


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_check_name_refuses_path_tricks(bad: str) -> None:
    with pytest.raises(Refusal) as e:
        check_name(bad)
    assert e.value.reason == "invalid_name"


@pytest.mark.parametrize("bad", [None, 5, b"repo"])
def test_check_name_refuses_non_strings(bad: object) -> None:
    with pytest.raises(Refusal) as e:
        check_name(bad)
    assert e.value.reason == "invalid_name"


@pytest.mark.parametrize("good", ["repo-a", "Repo_A.v2", "a", "9lives", "x" * 128])
def test_check_name_accepts_plain_names(good: str) -> None:
    assert check_name(good) == good


def test_the_longest_name_is_128() -> None:
    assert check_name("x" * 128)
    with pytest.raises(Refusal):
        check_name("x" * 129)


def test_parse_address() -> None:
    assert parse_address("home") is HOME
    assert parse_address("project:repo-a") == Address("project", "repo-a")
    assert parse_address("entity:ent_ops") == Address("entity", "ent_ops")
    assert str(parse_address("project:repo-a")) == "project:repo-a"
    assert str(HOME) == "home"
    assert project("x") == Address("project", "x")
    assert entity("y") == Address("entity", "y")


@pytest.mark.parametrize("bad", ["", "Home", "homes", "project", "box:x", "home:x", "repo-a", "PROJECT:x"])
def test_parse_address_refuses_what_is_not_an_address(bad: str) -> None:
    with pytest.raises(Refusal) as e:
        parse_address(bad)
    assert e.value.reason == "invalid_address"


@pytest.mark.parametrize("bad", BAD_NAMES)
@pytest.mark.parametrize("kind", ["project", "entity"])
def test_an_address_cannot_smuggle_a_path(kind: str, bad: str) -> None:
    with pytest.raises(Refusal) as e:
        parse_address(f"{kind}:{bad}")
    assert e.value.reason == "invalid_name"


# -- every place a name enters the library, nothing written --------------------------


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_project_add_refuses_and_writes_nothing(tmp_path: Path, bad: str) -> None:
    dc = new_home(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(Refusal) as e:
        dc.add_project(ProjectAdd(name=bad, root=str(tmp_path / "r")))
    assert e.value.reason == "invalid_name"
    assert snapshot(tmp_path) == before
    assert dc.roster.projects == ()


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_alias_is_checked_like_a_name(tmp_path: Path, bad: str) -> None:
    dc = new_home(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(Refusal) as e:
        dc.add_project(ProjectAdd(name="repo-a", root=str(tmp_path / "r"), aliases=("ok", bad)))
    assert e.value.reason == "invalid_name"
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_entity_add_refuses_and_writes_nothing(tmp_path: Path, bad: str) -> None:
    dc = new_home(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(Refusal) as e:
        dc.add_entity(EntityAdd(entity_id=bad))
    assert e.value.reason == "invalid_name"
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_box_read_refuses_a_bad_name_and_touches_nothing(tmp_path: Path, bad: str) -> None:
    dc = new_home(tmp_path)
    before = snapshot(tmp_path)
    for kind in ("project", "entity"):
        with pytest.raises(Refusal) as e:
            dc.box(Box(address=f"{kind}:{bad}"))
        assert e.value.reason == "invalid_name"
    assert snapshot(tmp_path) == before


def test_a_bad_name_in_a_hand_edited_roster_is_refused(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    text = dc.layout.config.read_bytes() + b'\n[[projects]]\nname = "../escape"\nroot = "/tmp/x"\n'
    from dovecote.roster import config as roster

    with pytest.raises(Refusal) as e:
        roster.parse(text)
    assert e.value.reason == "invalid_name"

"""`project remove` and `entity remove`: refused while letters route there; never a ledger deleted."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from dovecote.errors import Refusal
from dovecote.verbs import Box, EntityAdd, EntityRemove, ProjectRemove
from helpers import add_project, new_home, rep, run_cli
from mailhelpers import mail_home, send


def test_a_project_with_letters_in_its_box_is_not_removed(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    dc.report([rep("one"), rep("two")])
    dc.distribute()
    before = dc.layout.config.read_bytes()
    with pytest.raises(Refusal) as e:
        dc.remove_project(ProjectRemove(name="repo-a"))
    assert e.value.reason == "in_use"
    assert "2 letter(s)" in e.value.detail
    assert e.value.extra["in_box"] == 2
    assert dc.layout.config.read_bytes() == before


def test_letters_still_in_the_spool_for_a_project_keep_it(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    root = add_project(dc, tmp_path, "repo-a", aliases=("ra",))
    dc.report([rep("name"), rep("alias", repo="ra"), rep("path", repo=str(root / "src")), rep("home", repo="")])
    with pytest.raises(Refusal) as e:
        dc.remove_project(ProjectRemove(name="REPO-A"))  # names match case-insensitively
    assert e.value.reason == "in_use"
    assert (e.value.extra["in_box"], e.value.extra["pending"]) == (0, 3)
    assert "3 more wait in the spool" in e.value.detail


def test_force_removes_the_entry_and_keeps_the_ledger(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    dc.report([rep("one")])
    dc.distribute()
    ledger = dc.layout.project_box("repo-a")
    kept = ledger.read_bytes()
    run = run_cli(tmp_path, "project", "remove", "repo-a", "--force", home=dc.layout.root)
    assert run.returncode == 0, run.stderr.decode()
    assert f"its ledger stays at {ledger}".encode() in run.stdout
    assert ledger.read_bytes() == kept  # never deleted, never rewritten
    fresh = type(dc)(dc.layout.root)
    assert fresh.roster.project("repo-a") is None
    assert fresh.box(Box(address="project:repo-a")).to_dict()["known"] is False
    swept = fresh.sweep().to_dict()  # the letter came through the spool: still counted, pending and named
    assert (swept["total"], swept["distribution"]["pending"]) == (1, ["repo-a"])
    assert ledger.read_bytes() == kept  # and it is not re-routed anywhere (never home)
    # adding the project again reads its letters again
    add_project(fresh, tmp_path, "repo-a")
    assert fresh.box(Box(address="project:repo-a")).to_dict()["total"] == 1


def test_an_idle_project_is_removed_and_its_letters_then_wait_named(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    run = run_cli(tmp_path, "project", "remove", "repo-a", "--json", home=dc.layout.root)
    assert run.returncode == 0, run.stderr.decode()
    out = orjson.loads(run.stdout)
    assert (out["removed"], out["name"], out["in_box"], out["pending"]) == ("project", "repo-a", 0, 0)
    dc = type(dc)(dc.layout.root)
    dc.report([rep("after")])
    assert dc.distribute().pending == ["repo-a"]  # unknown now, pending and named; never re-routed home


def test_an_entity_with_mail_is_not_removed_unless_forced(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    send(dc, "hello")
    ledger = dc.layout.entity_box("ent_builder")
    kept = ledger.read_bytes()
    run = run_cli(tmp_path, "entity", "remove", "ent_builder", home=dc.layout.root)
    assert run.returncode == 2 and b"in_use" in run.stderr and b"1 letter(s)" in run.stderr
    assert b"ent_builder" in run_cli(tmp_path, "entity", "list", home=dc.layout.root).stdout
    run = run_cli(tmp_path, "entity", "remove", "ent_builder", "--force", home=dc.layout.root)
    assert run.returncode == 0, run.stderr.decode()
    assert b"ledger stays" in run.stdout
    assert ledger.read_bytes() == kept
    assert b"ent_builder" not in run_cli(tmp_path, "entity", "list", home=dc.layout.root).stdout
    inbox = run_cli(tmp_path, "inbox", "ent_builder", home=dc.layout.root)
    assert inbox.returncode == 2 and b"unknown_entity" in inbox.stderr


def test_an_entity_without_mail_is_removed(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    dc.add_entity(EntityAdd(entity_id="ent_idle"))
    use = dc.remove_entity(EntityRemove(entity_id="ent_idle"))
    assert use.letters == 0 and dc.roster.entities == ()


@pytest.mark.parametrize(
    ("args", "reason"),
    [(("project", "remove", "nope"), b"unknown_project"), (("entity", "remove", "ent_nope"), b"unknown_entity")],
)
def test_removing_what_is_not_there_is_refused(tmp_path: Path, args: tuple[str, ...], reason: bytes) -> None:
    dc = new_home(tmp_path)
    before = dc.layout.config.read_bytes()
    run = run_cli(tmp_path, *args, home=dc.layout.root)
    assert run.returncode == 2 and reason in run.stderr
    assert dc.layout.config.read_bytes() == before

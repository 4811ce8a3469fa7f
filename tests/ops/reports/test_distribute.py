"""``distribute``: every spool letter into exactly one box, by the ownership law."""

from __future__ import annotations

from pathlib import Path

import pytest

from dovecote.handle.api import Dovecote
from dovecote.model.addresses import HOME, Address
from dovecote.model.letters import canonical_line
from dovecote.store.files import GITATTRIBUTES, GITIGNORE
from dovecote.verbs import Box, ProjectAdd, Sweep
from helpers import add_project, box_ids, ledger_ids, lid, new_home, open_home, rep, snapshot

pytestmark = pytest.mark.both_stores


def setup(tmp: Path) -> Dovecote:
    dc = new_home(tmp)
    add_project(dc, tmp, "repo-a", aliases=("ra",))
    add_project(dc, tmp, "api-gateway", aliases=("api",))
    add_project(dc, tmp, "api-server", aliases=("api",))
    return dc


def boxes(dc: Dovecote) -> dict[str, bytes]:
    return snapshot(dc.layout.boxes)


def test_receipt_counts(tmp_path: Path) -> None:
    dc = setup(tmp_path)
    to_a = [rep("1", repo="repo-a"), rep("2", repo="RA"), rep("3", brain="/x/y/repo-a-feature", repo="all")]
    to_home = [rep("4", repo="all"), rep("5", repo="(research task, no repo)"), rep("6", repo=None)]
    pending = [rep("7", repo="zephyr"), rep("8", repo="Zephyr"), rep("9", repo="api")]
    dc.report(to_a + to_home + pending)
    r = dc.distribute().to_dict()
    assert r["spool_total"] == 9
    assert r["appended"] == 6
    assert r["to_project"] == 3
    assert r["to_home"] == 3
    # names are kept in their natural case; each distinct name is listed once
    assert r["pending"] == ["Zephyr", "api", "zephyr"]
    assert r["pending_detail"] == [
        {"name": "Zephyr", "reason": "unknown_project", "letters": 1},
        {"name": "api", "reason": "ambiguous_name", "letters": 1},
        {"name": "zephyr", "reason": "unknown_project", "letters": 1},
    ]
    assert box_ids(dc, Address("project", "repo-a")) == [lid(x) for x in to_a]
    assert box_ids(dc, HOME) == [lid(x) for x in to_home]


def test_every_letter_lands_in_exactly_one_box(tmp_path: Path) -> None:
    dc = setup(tmp_path)
    repos = ["repo-a", "all", "api-gateway", "ra", "", "api-server"]
    letters = [rep(str(i), repo=repo) for i, repo in enumerate(repos)]
    dc.report(letters)
    dc.distribute()
    held: list[str] = []
    for box in dc.report_boxes():
        held += box_ids(dc, box)
    assert sorted(held) == sorted(lid(x) for x in letters)


def test_a_second_run_appends_zero_and_changes_no_byte(tmp_path: Path) -> None:
    dc = setup(tmp_path)
    dc.report([rep("1"), rep("2", repo="all"), rep("3", repo="zephyr")])
    first = dc.distribute()
    assert first.appended == 2
    before = boxes(dc)
    again = dc.distribute()
    assert again.appended == 0
    assert (again.to_project, again.to_home, again.pending) == (first.to_project, first.to_home, first.pending)
    assert boxes(dc) == before
    # and through a cold handle too
    cold = open_home(dc.layout.root).distribute()
    assert cold.appended == 0 and cold.to_dict() == again.to_dict()
    assert boxes(dc) == before


def test_new_spool_letters_are_filed_by_the_next_run(tmp_path: Path) -> None:
    dc = setup(tmp_path)
    dc.report([rep("1")])
    dc.distribute()
    dc.report([rep("2")])
    r = dc.distribute()
    assert (r.spool_total, r.appended, r.to_project) == (2, 1, 2)
    assert box_ids(dc, Address("project", "repo-a")) == [lid(rep("1")), lid(rep("2"))]


@pytest.mark.files_only
def test_a_letter_already_in_the_box_is_not_appended_again(tmp_path: Path) -> None:
    # e.g. it arrived by git before this machine distributed it
    dc = setup(tmp_path)
    dc.report([rep("1")])
    dc.store.append(dc.report_boxes()[1], [dc.layout.spool.read_bytes().rstrip(b"\n")])
    assert open_home(dc.layout.root).distribute().appended == 0


def test_a_named_project_never_lands_in_home(tmp_path: Path) -> None:
    # MED-INV-10: unknown or ambiguous names stay pending; home gets only projectless letters
    dc = setup(tmp_path)
    named = [
        rep("1", repo="zephyr"),
        rep("2", brain="ghost", repo="all"),
        rep("3", repo="api"),
        rep("4", repo="/no/where"),
    ]
    dc.report(named)
    r = dc.distribute()
    assert r.to_home == 0 and r.appended == 0
    assert not dc.layout.home_box().exists()
    assert r.pending == ["api", "ghost", "where", "zephyr"]


def test_an_ambiguous_name_abstains(tmp_path: Path) -> None:
    dc = setup(tmp_path)
    dc.report([rep("which api?", repo="api")])
    r = dc.distribute()
    assert r.pending_detail == [{"name": "api", "reason": "ambiguous_name", "letters": 1}]
    assert not dc.layout.project_box("api-gateway").exists()
    assert not dc.layout.project_box("api-server").exists()


def test_a_project_added_later_receives_its_pending_letters(tmp_path: Path) -> None:
    dc = setup(tmp_path)
    dc.report([rep("z", repo="zephyr")])
    assert dc.distribute().pending == ["zephyr"]
    add_project(dc, tmp_path, "zephyr")
    r = dc.distribute()
    assert (r.appended, r.pending) == (1, [])
    assert box_ids(dc, Address("project", "zephyr")) == [lid(rep("z", repo="zephyr"))]


# -- in-repo boxes --------------------------------------------------------------------------


@pytest.mark.files_only
def test_an_unreachable_in_repo_box_keeps_its_letters_pending_and_is_named(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    root = add_project(dc, tmp_path, "ghost", exists=False, box_in_repo=True)
    letter = rep("g", repo="ghost")
    dc.report([letter])
    r = dc.distribute()
    assert r.appended == 0
    assert r.pending_detail == [{"name": "ghost", "reason": "unreachable", "letters": 1}]
    assert not root.exists(), "distribute must not create an absent repository"
    s = dc.sweep(Sweep(distribute=False)).to_dict()
    assert s["unreachable"] == ["project:ghost"]
    assert s["total"] == 1 and s["letters"][0]["box"] is None  # still counted, from the spool

    # the repository is cloned on this machine: the next run files the letter there
    root.mkdir(parents=True)
    r2 = dc.distribute()
    assert (r2.appended, r2.pending, r2.to_project) == (1, [], 1)
    assert ledger_ids(root / ".dovecote" / "letters.jsonl") == [lid(letter)]
    s2 = dc.sweep(Sweep(distribute=False)).to_dict()
    assert s2["unreachable"] == []
    assert s2["letters"][0]["box"] == "project:ghost"


@pytest.mark.files_only
def test_in_repo_box_birth_writes_gitignore_and_gitattributes(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    root = add_project(dc, tmp_path, "beacon", box_in_repo=True)
    dc.report([rep("b", repo="beacon")])
    dc.distribute()
    d = root / ".dovecote"
    assert (d / ".gitignore").read_bytes() == GITIGNORE
    assert (d / ".gitattributes").read_bytes() == GITATTRIBUTES
    assert b"letters.jsonl merge=dovecote" in GITATTRIBUTES
    assert not dc.layout.project_box("beacon").exists(), "an in-repo box is not also kept in the home"


@pytest.mark.files_only
def test_in_repo_birth_never_rewrites_an_existing_gitignore(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    root = add_project(dc, tmp_path, "beacon", box_in_repo=True)
    d = root / ".dovecote"
    d.mkdir()
    mine = b"# the owner's own rules\n*\n!letters.jsonl\n"
    (d / ".gitignore").write_bytes(mine)
    dc.report([rep("b", repo="beacon")])
    dc.distribute()
    assert (d / ".gitignore").read_bytes() == mine
    assert (d / ".gitattributes").read_bytes() == GITATTRIBUTES  # the absent one is still written
    dc.report([rep("c", repo="beacon")])
    dc.distribute()
    assert (d / ".gitignore").read_bytes() == mine


def test_in_repo_birth_never_rewrites_an_existing_gitattributes(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    root = add_project(dc, tmp_path, "beacon", box_in_repo=True)
    d = root / ".dovecote"
    d.mkdir()
    mine = b"* text=auto\n"
    (d / ".gitattributes").write_bytes(mine)
    dc.report([rep("b", repo="beacon")])
    dc.distribute()
    assert (d / ".gitattributes").read_bytes() == mine


# -- the spool is read-only to everything but report ----------------------------------------


@pytest.mark.files_only
def test_the_spool_is_never_modified_by_reads(tmp_path: Path) -> None:
    dc = setup(tmp_path)
    add_project(dc, tmp_path, "ghost", exists=False, box_in_repo=True)
    dc.report([rep("1"), rep("2", repo="all"), rep("3", repo="zephyr"), rep("4", repo="ghost"), rep("5", repo="api")])
    with open(dc.layout.spool, "ab") as f:
        f.write(b"not json\n{\"torn\":")  # a malformed line and a torn tail must survive as they are
    spool = dc.layout.spool.read_bytes()
    for handle in (dc, open_home(dc.layout.root)):
        handle.distribute()
        handle.sweep()
        handle.sweep(Sweep(distribute=False, include_all=True))
        handle.doctor()
        for addr in ("home", "project:repo-a", "project:ghost", "project:nope", "entity:x"):
            handle.box(Box(address=addr, include_all=True))
        handle.verify()
        assert dc.layout.spool.read_bytes() == spool


@pytest.mark.files_only
def test_a_space_padded_spool_line_is_filed_once(tmp_path: Path) -> None:
    # m1nd trimmed the line before filing but hashed the untrimmed one, so such a line
    # re-appended on every run and was counted twice (reference notes, section 2)
    dc = setup(tmp_path)
    padded = b"  " + canonical_line(rep("padded")) + b"  "
    crlf = canonical_line(rep("windows")) + b"\r"
    dc.layout.spool.write_bytes(padded + b"\n" + crlf + b"\n")
    assert dc.distribute().appended == 2
    for handle in (dc, open_home(dc.layout.root)):
        assert handle.distribute().appended == 0
    box = dc.layout.project_box("repo-a")
    assert len(ledger_ids(box)) == 2
    d = open_home(dc.layout.root).sweep(Sweep(include_all=True)).to_dict()
    assert d["total"] == 2
    assert {r["what"] for r in d["letters"]} == {"padded", "windows"}
    assert {r["box"] for r in d["letters"]} == {"project:repo-a"}


@pytest.mark.files_only
def test_a_box_that_cannot_be_written_keeps_its_letters_pending_and_the_sweep_goes_on(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    add_project(dc, tmp_path, "repo-b")
    dc.report([rep("to a", repo="repo-a"), rep("to b", repo="repo-b")])
    broken = dc.store.path(dc.report_boxes()[1])  # project:repo-a
    assert broken is not None
    broken.mkdir(parents=True)  # a directory where the ledger file should be: every write fails
    result = dc.sweep()
    receipt = result.distribution
    assert receipt is not None
    assert receipt.appended == 1 and receipt.to_project == 1
    assert receipt.pending == ["repo-a"]
    assert receipt.pending_detail == [{"name": "repo-a", "reason": "unreachable", "letters": 1}]
    assert "project:repo-a" in result.unreachable
    assert result.total == 2  # the spool still holds the letter: it is counted, once


# -- a letter is filed once, whatever the roster says later (issue 6, item 5) ---------------


def _all_held(dc: Dovecote) -> list[str]:
    held: list[str] = []
    for f in sorted(dc.layout.boxes.rglob("letters.jsonl")):
        held += ledger_ids(f)
    return held


@pytest.mark.files_only
def test_a_deeper_project_added_later_does_not_file_a_letter_twice(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    outer = add_project(dc, tmp_path, "outer")
    letter = rep("deep", repo=str(outer / "inner" / "src"))
    dc.report([letter])
    assert dc.distribute().appended == 1
    assert box_ids(dc, Address("project", "outer")) == [lid(letter)]
    total = dc.sweep(Sweep(distribute=False)).total
    # the roster gains a deeper project: today's law would now file the letter there
    dc.add_project(ProjectAdd(name="inner", root=str(outer / "inner"), aliases=(), box_in_repo=False))
    for handle in (dc, open_home(dc.layout.root)):  # the warm path and a cold one
        r = handle.distribute()
        assert r.appended == 0
        assert (r.to_project, r.to_home, r.pending) == (1, 0, [])
        assert r.to_dict()["elsewhere"] == {"letters": 1, "ids": [lid(letter)]}
        assert _all_held(handle) == [lid(letter)], "the letter is in exactly one box"
        assert not handle.layout.project_box("inner").exists()
        s = handle.sweep().to_dict()
        assert s["total"] == total == 1
        assert [row["box"] for row in s["letters"]] == ["project:outer"]
    # a new letter for the deeper project goes there, and only the old one is "elsewhere"
    fresh = rep("deeper", repo=str(outer / "inner"))
    dc.report([fresh])
    r = dc.distribute()
    assert r.appended == 1 and box_ids(dc, Address("project", "inner")) == [lid(fresh)]
    assert r.elsewhere == [lid(letter)]


def test_a_letter_in_any_report_box_is_not_filed_again(tmp_path: Path) -> None:
    # it reached home by git (or an older law) though today it routes to repo-a
    dc = setup(tmp_path)
    letter = rep("1")
    dc.report([letter])
    dc.store.append(dc.report_boxes()[0], [canonical_line(letter)])
    for handle in (dc, open_home(dc.layout.root)):
        r = handle.distribute()
        assert (r.appended, r.to_home, r.to_project, r.elsewhere) == (0, 1, 0, [lid(letter)])
        assert not handle.layout.project_box("repo-a").exists()


@pytest.mark.files_only
def test_a_box_that_cannot_be_read_keeps_its_letters_pending_in_distribute_and_doctor(tmp_path: Path) -> None:
    # issue 6, item 13: doctor said "pending distribution 0" while distribute named the box
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    add_project(dc, tmp_path, "ghost", exists=False, box_in_repo=True)
    dc.report([rep("a", repo="repo-a"), rep("g", repo="ghost"), rep("z", repo="zephyr"), rep("h", repo="all")])
    broken = dc.store.path(Address("project", "repo-a"))
    assert broken is not None
    broken.mkdir(parents=True)  # a directory where the ledger should be: it can be neither read nor written
    for handle in (dc, open_home(dc.layout.root)):
        doc = handle.doctor().mailbox
        r = handle.distribute()
        assert r.pending_detail == [
            {"name": "ghost", "reason": "unreachable", "letters": 1},
            {"name": "repo-a", "reason": "unreachable", "letters": 1},
            {"name": "zephyr", "reason": "unknown_project", "letters": 1},
        ]
        assert doc["pending_detail"] == r.pending_detail
        assert doc["pending_distribution"] == r.pending
        assert doc["pending_letters"] == 3
        assert handle.doctor().mailbox["pending_detail"] == r.pending_detail  # and after the run

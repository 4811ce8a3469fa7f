"""The roster: config.toml parses strictly, round-trips, and its markers drive fates."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from msgspec.structs import replace

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote, init, open_home
from dovecote.model.vocab import DEFAULT_FOREIGN_MARKERS
from dovecote.roster import config as roster
from dovecote.roster.config import Entity, Limits, Project, Roster
from dovecote.verbs import Box, EntityAdd, ProjectAdd, Sweep
from helpers import add_project, lid, new_home, rep, rewrite_roster, run_cli

FULL = Roster(
    owner_roots=("/home/u", "/srv/u"),
    owner_home="/home/u",
    projects=(
        Project("repo-a", "/home/u/code/repo-a", ("ra", "alpha"), False),
        Project("repo-b", "/home/u/code/repo-b", (), True),
    ),
    entities=(Entity("ent_ops", "operator"), Entity("ent_bot")),
    foreign_markers=("context7", "seek"),
    limits=Limits(report_max_bytes=2048, stale_tics=9),
    tic_source="/home/u/audit-logs/tics",
    notifier_mode="discover-only",
    intake_dirs=("/home/u/mailbox/intake",),
)


def test_round_trip_of_a_full_roster() -> None:
    parsed = roster.parse(roster.dump(FULL))
    assert replace(parsed, signature="") == FULL
    # the signature is the sha256 of the bytes it was read from
    assert parsed.signature == hashlib.sha256(roster.dump(FULL)).hexdigest()


def test_round_trip_of_a_default_roster() -> None:
    r = roster.new_roster("/home/u/work")
    assert replace(roster.parse(roster.dump(r)), signature="") == r
    assert r.foreign_markers == DEFAULT_FOREIGN_MARKERS


def test_dump_is_stable() -> None:
    assert roster.dump(roster.parse(roster.dump(FULL))) == roster.dump(FULL)


def test_an_empty_file_is_a_default_roster() -> None:
    r = roster.parse(b"")
    assert r.projects == () and r.foreign_markers == DEFAULT_FOREIGN_MARKERS
    assert r.limits == Limits()


@pytest.mark.parametrize(
    "toml",
    [
        "colour = 1\n",
        "[owner]\nroots = []\nhme = ''\n",
        "[markers]\nforeign = []\nextra = []\n",
        "[limits]\nreport_max_byte = 10\n",
        "[tics]\nsauce = 'x'\n",
        "[notifier]\nmode = 'none'\nurl = 'x'\n",
        "[[projects]]\nname = 'a'\nroot = '/a'\nalias = ['b']\n",
        "[[entities]]\nid = 'e'\nrole = 'r'\nrank = 1\n",
        "[intake]\ndir = ['/a']\n",
    ],
)
def test_unknown_keys_are_refused(toml: str) -> None:
    # a typo in a hand-edited roster must not silently change routing
    with pytest.raises(Refusal) as e:
        roster.parse(toml.encode())
    assert e.value.reason == "invalid_config"


@pytest.mark.parametrize(
    "toml",
    [
        "[[projects]]\nname = 'a'\nroot = 'relative/path'\n",
        "[[projects]]\nname = 'a'\nroot = ''\n",  # a blank root used to read as / and claim every path
        "[[projects]]\nname = 'a'\nroot = '  '\n",
        "[owner]\nroots = ['']\n",
        "[owner]\nroots = ['relative/root']\n",
        "[[projects]]\nname = 'a'\nroot = 5\n",
        "[[projects]]\nroot = '/a'\n",
        "[[projects]]\nname = 'a'\nroot = '/a'\n[[projects]]\nname = 'A'\nroot = '/b'\n",
        "[[entities]]\nid = 'e'\n[[entities]]\nid = 'e'\n",
        "[markers]\nforeign = ['x', '']\n",
        "[markers]\nforeign = 'context7'\n",
        "[limits]\nreport_max_bytes = 0\n",
        "[limits]\nreport_max_bytes = true\n",
        "[notifier]\nmode = 'session-inject-x'\n",
        "[notifier]\nmode = 'none'\ntimeout = 0\n",
        "[intake]\ndirs = ['relative/intake']\n",  # an intake folder is named by its absolute path
        "[intake]\ndirs = '/a'\n",
        "owner = 3\n",
        "not toml at all [\n",
    ],
)
def test_invalid_values_are_refused(toml: str) -> None:
    with pytest.raises(Refusal) as e:
        roster.parse(toml.encode())
    assert e.value.reason == "invalid_config"


def test_session_inject_is_refused_as_unverified_not_as_a_typo() -> None:
    """notes B8: session-inject is reserved; no runtime support was verified, so it never runs."""
    with pytest.raises(Refusal) as e:
        roster.parse(b"[notifier]\nmode = 'session-inject'\n")
    assert e.value.reason == "unverified_mode"


def test_the_notifier_settings_round_trip() -> None:
    r = roster.parse(b"[notifier]\nmode = 'agent-turn-nudge'\ncommand = 'nudge {agent} {message}'\ntimeout = 3\n"
                     b"discovery = 'sessions --active {minutes}'\n")
    assert (r.notifier_mode, r.notifier_command, r.notifier_timeout, r.discovery_command) == (
        "agent-turn-nudge", "nudge {agent} {message}", 3, "sessions --active {minutes}")
    again = roster.parse(roster.dump(r))
    assert (again.notifier_command, again.notifier_timeout, again.discovery_command) == (
        r.notifier_command, r.notifier_timeout, r.discovery_command)


def test_markers_are_lowercased_and_roots_normalized() -> None:
    r = roster.parse(
        b"[owner]\nhome = '/home/u'\nroots = ['~/work/']\n"
        b"[markers]\nforeign = ['PlayWright']\n"
        b"[[projects]]\nname = 'a'\nroot = '~/code/a/'\n"
    )
    assert r.foreign_markers == ("playwright",)
    assert r.owner_roots == ("/home/u/work",)
    assert r.projects[0].root == "/home/u/code/a"


def test_duplicate_project_is_refused_case_insensitively(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    before = dc.layout.config.read_bytes()
    for name in ("repo-a", "REPO-A"):
        with pytest.raises(Refusal) as e:
            dc.add_project(ProjectAdd(name=name, root=str(tmp_path / "elsewhere")))
        assert e.value.reason == "duplicate_project"
    assert dc.layout.config.read_bytes() == before


def test_duplicate_entity_is_refused(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    dc.add_entity(EntityAdd(entity_id="ent_ops", role="operator"))
    with pytest.raises(Refusal) as e:
        dc.add_entity(EntityAdd(entity_id="ent_ops"))
    assert e.value.reason == "duplicate_entity"


def test_add_project_persists_and_normalizes(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    p = dc.add_project(ProjectAdd(name="repo-a", root=str(tmp_path / "r") + "/", aliases=("ra",), box_in_repo=True))
    assert p.root == str(tmp_path / "r")
    reread = roster.load(dc.layout.config)
    assert reread.projects == (p,)
    assert reread.project("REPO-A") == p  # lookup by name is case-insensitive


def test_load_without_a_file_is_no_home(tmp_path: Path) -> None:
    with pytest.raises(Refusal) as e:
        roster.load(tmp_path / "config.toml")
    assert e.value.reason == "no_home"


def test_the_roster_marker_list_is_the_one_sweep_uses(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    browser = rep("browser timed out", tool="Playwright (browser)")
    seek = rep("seek empty", tool="seek")
    dc.report([browser, seek])

    def fates(handle: Dovecote) -> dict[str, str]:
        rows = handle.sweep(Sweep(include_all=True)).to_dict()["letters"]
        return {r["id"]: r["fate"] for r in rows}

    # default markers: playwright is foreign, seek is ours
    assert fates(dc) == {lid(browser): "external", lid(seek): "wet_ink"}
    # the owner edits the one list: now seek is foreign and playwright is ours
    dc2 = rewrite_roster(dc, foreign_markers=("seek",))
    assert fates(dc2) == {lid(browser): "wet_ink", lid(seek): "external"}
    assert dc2.sweep().to_dict()["counts"]["external"] == 1
    # one list for every surface: reading a single box uses it too
    assert dc2.box(Box(address="project:repo-a")).to_dict()["counts"] == {
        "wet_ink": 1, "in_flight": 0, "fired_clay": 0, "external": 1,
    }
    assert [r["id"] for r in dc2.box(Box(address="project:repo-a")).to_dict()["letters"]] == [lid(browser)]


@pytest.mark.parametrize("given", [".", "./", "sub/..", "~"])
def test_init_records_an_absolute_owner_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    # `dovecote init --owner-root .` must mean this folder, not the letter text "."
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    home, _ = init(tmp_path / ".dovecote", owner_root=given)
    dc = open_home(home)
    assert dc.roster.owner_roots == (str(tmp_path),)
    dc.report([rep("about the owner's own root", repo=str(tmp_path))])
    r = dc.distribute()
    assert (r.to_home, r.pending) == (1, [])


def test_project_names_that_would_be_unreachable_or_silently_ambiguous_are_refused(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "api-gateway", aliases=("api",))
    before = dc.layout.config.read_bytes()
    for name, aliases, reason in (
        ("all", (), "invalid_name"),
        ("x", ("ALL",), "invalid_name"),
        ("API", (), "duplicate_project"),  # already an alias
        ("y", ("Api-Gateway",), "duplicate_project"),  # alias equal to a project's name
        ("api-gateway", (), "duplicate_project"),
    ):
        with pytest.raises(Refusal) as e:
            dc.add_project(ProjectAdd(name=name, root=str(tmp_path / "r"), aliases=aliases))
        assert e.value.reason == reason, name
    assert dc.layout.config.read_bytes() == before
    add_project(dc, tmp_path, "api-server", aliases=("api",))  # a shared alias stays allowed: it abstains


def test_a_root_given_with_dot_segments_is_stored_as_what_it_means(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    p = dc.add_project(ProjectAdd(name="beacon", root=str(tmp_path / "a" / ".." / "beacon")))
    assert p.root == str(tmp_path / "beacon")
    assert dc.roster.project("beacon").root == str(tmp_path / "beacon")  # type: ignore[union-attr]


# -- one root, one box (item 6) and no blank roots (item 7) -------------------------------


@pytest.mark.parametrize(("first_in_repo", "second_in_repo"), [(True, True), (False, False), (True, False)])
def test_a_second_project_at_the_same_root_is_refused(
    tmp_path: Path, first_in_repo: bool, second_in_repo: bool
) -> None:
    # in-repo: both would share <root>/.dovecote/letters.jsonl and sweep would label letters with either
    # name; in the home: every path under that root would be ambiguous between them, pending for good
    dc = new_home(tmp_path)
    root = add_project(dc, tmp_path, "repo-a", box_in_repo=first_in_repo)
    before = dc.layout.config.read_bytes()
    for spelled in (str(root), str(root) + "/", str(root / "sub" / "..")):
        with pytest.raises(Refusal) as e:
            dc.add_project(ProjectAdd(name="repo-b", root=spelled, box_in_repo=second_in_repo))
        assert e.value.reason == "duplicate_root", spelled
        assert "repo-a" in e.value.detail
    assert dc.layout.config.read_bytes() == before
    add_project(dc, tmp_path, "repo-a-sub")  # a nested root is another box: allowed
    dc.add_project(ProjectAdd(name="deeper", root=str(root / "pkg"), box_in_repo=True))


def test_a_hand_edited_roster_with_one_root_twice_does_not_load(tmp_path: Path) -> None:
    text = (
        b"[[projects]]\nname = 'a'\nroot = '/srv/x'\nbox_in_repo = true\n"
        b"[[projects]]\nname = 'b'\nroot = '/srv/x/'\nbox_in_repo = true\n"
    )
    with pytest.raises(Refusal) as e:
        roster.parse(text)
    assert e.value.reason == "invalid_config" and "one root" in e.value.detail


@pytest.mark.parametrize("given", ["", "   ", "\t", "~no-such-user-here/x", "/srv/a\nb", "/srv/\x01a"])
def test_a_blank_or_baseless_root_is_refused(tmp_path: Path, given: str) -> None:
    dc = new_home(tmp_path)
    before = dc.layout.config.read_bytes()
    with pytest.raises(Refusal) as e:
        dc.add_project(ProjectAdd(name="repo-a", root=given))
    assert e.value.reason == "invalid_field"
    assert dc.layout.config.read_bytes() == before


def test_project_add_with_a_blank_root_on_the_command_line(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    before = dc.layout.config.read_bytes()
    r = run_cli(tmp_path, "project", "add", "repo-a", "--root", "", home=dc.layout.root)
    assert r.returncode == 2 and b"invalid_field" in r.stderr and b"Traceback" not in r.stderr
    assert dc.layout.config.read_bytes() == before
    # what the blank root used to do: claim every path no other project owns
    add_project(dc, tmp_path, "repo-b")
    dc.report([rep("elsewhere", repo="/opt/unrelated/tool")])
    assert dc.distribute().pending == ["tool"]


def test_an_explicit_slash_root_is_still_a_choice(tmp_path: Path) -> None:
    # "/" typed on purpose is kept (routing treats it as containing every path); only a blank is refused
    dc = new_home(tmp_path)
    assert dc.add_project(ProjectAdd(name="everything", root="/")).root == "/"

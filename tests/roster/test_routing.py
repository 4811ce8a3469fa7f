"""The ownership law (routing.py; m1nd notes section 4), as a pure function."""

from __future__ import annotations

import builtins
import os
import os.path
import posixpath
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.model.addresses import HOME, Address
from dovecote.roster.config import Project, Roster
from dovecote.roster.routing import RosterIndex, Route, route

OWNER = "/home/u"
ROSTER = Roster(
    owner_roots=(OWNER, "/srv/owner"),
    owner_home=OWNER,
    projects=(
        Project("repo-a", "/home/u/code/repo-a", ("ra",)),
        Project("Beacon", "/home/u/code/beacon"),
        Project("api-gateway", "/home/u/code/api-gateway", ("api",)),
        Project("api-server", "/home/u/code/api-server", ("api",)),
        Project("mono", "/home/u/code/mono"),
        Project("mono-web", "/home/u/code/mono/web"),
        Project("lib", "/home/u/code/lib"),
        Project("lib-x", "/home/u/code/lib-x"),
    ),
)
IX = RosterIndex(ROSTER)


def to(name: str) -> Address:
    return Address("project", name)


# -- brain beats repo --------------------------------------------------------------


def test_brain_beats_repo() -> None:
    assert route("beacon", "repo-a", IX).address == to("Beacon")
    assert route("repo-a", "(research task)", IX).address == to("repo-a")


@pytest.mark.parametrize("blank", [None, "", "   ", "\t"])
def test_a_blank_brain_falls_back_to_repo(blank: str | None) -> None:
    assert route(blank, "repo-a", IX).address == to("repo-a")


def test_a_projectless_brain_still_wins_over_repo() -> None:
    # the field is chosen first (brain, non-blank), then the law applies to it
    assert route("all", "repo-a", IX) == Route(HOME, "", None)


# -- projectless -> home ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "  ",
        "all",
        "ALL",
        " All ",
        "research task, no repo",
        "Research Task: compare papers",
        "(note only)",
        "(research task, no repo)",
        OWNER,
        OWNER + "/",
        "~",
        "~/",
        "/srv/owner",
    ],
)
def test_projectless_goes_home(text: str | None) -> None:
    assert route(None, text, IX) == Route(HOME, "", None)


# -- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["repo-a", "REPO-A", "Repo-A", " repo-a ", "repo-a (memory beat)", "ra", "RA"])
def test_name_and_alias_case_insensitively(text: str) -> None:
    assert route(None, text, IX) == Route(to("repo-a"), "repo-a", None)


def test_project_keeps_its_natural_case() -> None:
    assert route(None, "beacon", IX).address == to("Beacon")


@pytest.mark.parametrize("text", ["repo-a-feature", "REPO-A-fix-123", "ra-wip"])
def test_worktree_suffix_folds_to_the_project(text: str) -> None:
    assert route(None, text, IX).address == to("repo-a")


def test_an_exact_name_beats_a_worktree_fold() -> None:
    # "lib-x" is a project of its own, not a worktree of "lib"
    assert route(None, "lib-x", IX).address == to("lib-x")


def test_two_worktree_candidates_abstain() -> None:
    # "lib-x-feature" folds to both "lib" and "lib-x": never a first-wins guess
    r = route(None, "lib-x-feature", IX)
    assert r == Route(None, "lib-x-feature", "ambiguous_name")


def test_an_alias_shared_by_two_projects_abstains() -> None:
    r = route(None, "api", IX)
    assert r.address is None
    assert r.reason == "ambiguous_name"
    assert r.name == "api"
    assert route(None, "API", IX).reason == "ambiguous_name"


def test_case_only_variants_of_two_names_abstain() -> None:
    ix = RosterIndex(Roster(projects=(Project("north", "/a/north"), Project("x", "/a/x", ("NORTH",)))))
    assert route(None, "North", ix).reason == "ambiguous_name"


def test_unknown_name_stays_pending_and_named_never_home() -> None:
    # MED-INV-10
    r = route(None, "Zephyr (memory beat)", IX)
    assert r == Route(None, "Zephyr", "unknown_project")


# -- paths -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["/home/u/code/repo-a", "/home/u/code/repo-a/", "/home/u/code/repo-a/src/x.py", "~/code/repo-a", "~/code/repo-a/"],
)
def test_path_equal_to_or_under_a_root(text: str) -> None:
    assert route(None, text, IX).address == to("repo-a")


@pytest.mark.parametrize(
    "text,project",
    [
        ("/home/u/code/repo-a/../beacon", "Beacon"),
        ("/home/u/code/repo-a/../beacon/src", "Beacon"),
        ("/home/u/code/./repo-a", "repo-a"),
        ("/home/u/code//repo-a/x", "repo-a"),
        ("/home/u/code/mono/web/../api", "mono"),
    ],
)
def test_dot_segments_in_a_path_are_resolved_lexically(text: str, project: str) -> None:
    # ".." is resolved on the string alone (never the file system): repo-a/../beacon is beacon
    assert route(None, text, IX).address == to(project)


def test_dot_dot_up_to_the_owner_root_goes_home() -> None:
    assert route(None, "/home/u/code/..", IX) == Route(HOME, "", None)


def test_the_deepest_containing_root_wins() -> None:
    assert route(None, "/home/u/code/mono/web/src", IX).address == to("mono-web")
    assert route(None, "/home/u/code/mono/api", IX).address == to("mono")


def test_a_root_prefix_is_not_containment() -> None:
    # /home/u/code/repo-abc is not under /home/u/code/repo-a; its basename is looked up instead
    r = route(None, "/home/u/code/repo-abc", IX)
    assert r == Route(None, "repo-abc", "unknown_project")


def test_a_path_outside_every_root_is_looked_up_by_basename() -> None:
    assert route(None, "/mnt/clones/repo-a", IX).address == to("repo-a")
    assert route(None, "/mnt/clones/repo-a-feature", IX).address == to("repo-a")
    assert route(None, "/mnt/clones/zephyr", IX) == Route(None, "zephyr", "unknown_project")


def test_a_path_under_the_owner_root_but_no_project_is_not_home() -> None:
    # only the owner root itself is projectless; a named repo under it is a project name
    r = route(None, "/home/u/other-repo", IX)
    assert r.address is None and r.name == "other-repo"


def test_two_projects_sharing_a_root_abstain() -> None:
    ix = RosterIndex(Roster(projects=(Project("a", "/x/same"), Project("b", "/x/same"))))
    assert route(None, "/x/same", ix).reason == "ambiguous_name"
    assert route(None, "/x/same/deeper", ix).reason == "ambiguous_name"


def test_the_deepest_containing_root_wins_whatever_the_roster_order() -> None:
    # the index is built here, in the test: one built at import is never the code under test
    for projects in ((Project("mono", "/m/mono"), Project("web", "/m/mono/web")),
                     (Project("web", "/m/mono/web"), Project("mono", "/m/mono"))):
        ix = RosterIndex(Roster(projects=projects))
        assert route(None, "/m/mono/web/src/x.py", ix) == Route(to("web"), "web", None)
        assert route(None, "/m/mono/api", ix) == Route(to("mono"), "mono", None)
    everything = RosterIndex(Roster(projects=(Project("all-of-it", "/"),)))
    assert route(None, "/srv/any/where", everything) == Route(to("all-of-it"), "all-of-it", None)


def test_a_note_is_cut_at_its_first_parenthesis_and_a_bare_slash_is_pending() -> None:
    assert route(None, "repo-a (a note (nested) here)", IX).address == to("repo-a")
    assert route(None, "/", IX) == Route(None, "/", "unknown_project")


def test_an_ambiguous_route_carries_the_name_the_letter_gave() -> None:
    # the pending list names what the author wrote (case kept, note and path cut), so a person can fix it
    ix = RosterIndex(Roster(projects=(Project("a", "/x/same"), Project("b", "/x/same"))))
    assert route(None, "/x/same", ix) == Route(None, "same", "ambiguous_name")
    assert route(None, "/x/same/deeper/", ix) == Route(None, "deeper", "ambiguous_name")
    assert route(None, "API (gateway or server?)", IX) == Route(None, "API", "ambiguous_name")
    assert route("lib-x-Feature", None, IX) == Route(None, "lib-x-Feature", "ambiguous_name")
    north = RosterIndex(Roster(projects=(Project("north", "/a/north"), Project("x", "/a/x", ("NORTH",)))))
    assert route(None, "North", north) == Route(None, "North", "ambiguous_name")


# -- purity --------------------------------------------------------------------------------

_FIELDS = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "", "all", "research task x", "(note)", OWNER, OWNER + "/", "~", "repo-a", "RA", "api",
            "lib-x-feature", "repo-a-wip", "zephyr", "/home/u/code/repo-a/src", "/home/u/code/mono/web",
            "/mnt/x/beacon", "~/code/lib", "beacon (memory beat)", "/", "//", "/home/u/code/..",
            "/home/u/code/repo-a/../beacon", "~/code/../..",
        ]
    ),
    st.text(max_size=30),
)


def _explode(*_: object, **__: object) -> object:
    raise AssertionError("routing touched the file system")


@settings(deadline=None)
@given(brain=_FIELDS, repo=_FIELDS)
def test_route_never_touches_the_file_system(brain: str | None, repo: str | None) -> None:
    expected = route(brain, repo, IX)
    with pytest.MonkeyPatch.context() as mp:
        for mod, names in (
            (os, ["stat", "lstat", "listdir", "scandir", "access", "open"]),
            (os.path, ["exists", "isdir", "isfile", "realpath", "expanduser", "abspath"]),
            (Path, ["exists", "is_dir", "is_file", "stat", "resolve", "expanduser", "home", "cwd"]),
            (builtins, ["open"]),
        ):
            for name in names:
                mp.setattr(mod, name, _explode)
        mp.delenv("HOME", raising=False)
        assert route(brain, repo, IX) == expected
        assert route(brain, repo, RosterIndex(ROSTER)) == expected


def test_route_is_the_same_whether_roots_exist_or_not(tmp_path: Path) -> None:
    present = tmp_path / "present"
    present.mkdir()
    roster = Roster(projects=(Project("here", str(present)), Project("gone", str(tmp_path / "gone"))))
    ix = RosterIndex(roster)
    assert route(None, "gone", ix).address == to("gone")
    assert route(None, str(tmp_path / "gone" / "src"), ix).address == to("gone")
    assert route(None, "here", ix).address == to("here")


def _projectless(text: str | None) -> bool:
    t = (text or "").split("(", 1)[0].strip()
    if t.startswith("~"):
        t = OWNER + t[1:]
    t = t.rstrip("/") if t.strip("/") else ("/" if t else "")
    if t.startswith("/"):
        t = "/" + posixpath.normpath(t).lstrip("/")
    low = t.lower()
    return not t or low == "all" or low.startswith("research task") or t in ROSTER.owner_roots


@settings(deadline=None)
@given(brain=_FIELDS, repo=_FIELDS)
def test_only_projectless_letters_go_home(brain: str | None, repo: str | None) -> None:
    # MED-INV-10 as a property: home is reached only by the projectless rule
    r = route(brain, repo, IX)
    field = brain if brain and brain.strip() else repo
    if r.address == HOME:
        assert _projectless(field), (field, r)
    if r.address is None:
        assert r.reason in ("unknown_project", "ambiguous_name")
        assert r.name


def test_roots_with_dot_segments_match_the_paths_they_name() -> None:
    # a root added as `--root ../c` from /a/b is stored as /a/b/../c; it still owns /a/c
    ix = RosterIndex(Roster(owner_roots=("/a/b/..",), projects=(Project("c", "/a/b/../c"),)))
    for text in ("/a/c", "/a/c/src", "/a/b/../c/src", "/a/b/../c"):
        assert route(None, text, ix).address == to("c"), text
    assert route(None, "/a", ix) == Route(HOME, "", None)

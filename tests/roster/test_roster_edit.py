"""Roster edits: serialized across processes, and a hand-edited config.toml keeps its layout."""

from __future__ import annotations

import difflib
import multiprocessing
import subprocess
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from dovecote.errors import Refusal
from dovecote.handle.api import open_home
from dovecote.roster import config as roster
from dovecote.roster import members
from dovecote.verbs import EntityAdd, EntityRemove, ProjectAdd, ProjectRemove
from helpers import DOVECOTE_BIN, cli_env, new_home, run_cli

HAND_EDITED = """\
# my roster, edited by hand -- keep these words
[owner]
home = "/home/me"      # where ~ points
roots = ["/home/me"]

[markers]
# the tools that are not ours
foreign = ["playwright", "context7"]

# -- projects -------------------------------------------------
[[projects]]
name = "atlas"   # the big one
root = "/home/me/code/atlas"
aliases = ["at"]

# beacon lives in its repository
[[projects]]
name   = "beacon"
root   = "~/code/beacon"
box_in_repo = true

[notifier]
mode = "none"   # no nudges

# -- entities -------------------------------------------------
[[entities]]
id = "ent_ops"  # the operator
role = "operator"

[[entities]]
id = "ent_bot"
"""


def _hand_home(tmp: Path, text: str = HAND_EDITED) -> Path:
    home = tmp / "home"
    home.mkdir()
    (home / "config.toml").write_text(text)
    return home


def _ops(before: str, after: str) -> list[tuple[str, list[str], list[str]]]:
    a, b = before.splitlines(), after.splitlines()
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    return [(tag, a[i1:i2], b[j1:j2]) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"]


# -- one writer at a time ----------------------------------------------------------


def _add_after_barrier(home: str, n: int, barrier: multiprocessing.synchronize.Barrier) -> None:
    dc = open_home(home)  # the handle has read the roster before any of the others wrote
    barrier.wait()
    if n % 2:
        dc.add_project(ProjectAdd(name=f"proj-{n}", root=f"/srv/code/proj-{n}"))
    else:
        dc.add_entity(EntityAdd(entity_id=f"ent_{n}"))


def test_parallel_edits_from_stale_handles_all_land(tmp_path: Path) -> None:
    # each process opened its handle before the others edited: an edit must re-read under the lock
    home = str(new_home(tmp_path).layout.root)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(6)
    procs = [ctx.Process(target=_add_after_barrier, args=(home, n, barrier)) for n in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    r = roster.load(Path(home) / "config.toml")
    assert sorted(e.id for e in r.entities) == ["ent_0", "ent_2", "ent_4"]
    assert sorted(p.name for p in r.projects) == ["proj-1", "proj-3", "proj-5"]


def test_eight_parallel_entity_add_commands_keep_every_entry(tmp_path: Path) -> None:
    home = new_home(tmp_path).layout.root
    env = cli_env(tmp_path, home)
    ids = [f"ent_{n}" for n in range(8)]
    procs = [
        subprocess.Popen(
            [str(DOVECOTE_BIN), "entity", "add", i], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for i in ids
    ]
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err.decode()
    listed = orjson.loads(run_cli(tmp_path, "entity", "list", "--json", home=home).stdout)
    assert sorted(r["id"] for r in listed) == ids
    assert (home / "config.toml.lock").exists()  # the lock lives beside the roster, never in it


# -- a person's layout survives -------------------------------------------------------


def test_project_add_only_appends_its_table(tmp_path: Path) -> None:
    home = _hand_home(tmp_path)
    run = run_cli(tmp_path, "project", "add", "comet", "--root", "/srv/comet", "--alias", "co", home=home)
    assert run.returncode == 0, run.stderr.decode()
    after = (home / "config.toml").read_text()
    ops = _ops(HAND_EDITED, after)
    assert [tag for tag, _, _ in ops] == ["insert"]
    added = [ln for ln in ops[0][2] if ln.strip()]
    assert added == [
        "[[projects]]", 'name = "comet"', 'root = "/srv/comet"', 'aliases = ["co"]', "box_in_repo = false",
    ]
    assert [p.name for p in roster.parse(after.encode()).projects] == ["atlas", "beacon", "comet"]


def test_entity_add_only_appends_its_table(tmp_path: Path) -> None:
    home = _hand_home(tmp_path)
    assert run_cli(tmp_path, "entity", "add", "ent_new", "--role", "builder", home=home).returncode == 0
    after = (home / "config.toml").read_text()
    ops = _ops(HAND_EDITED, after)
    assert [tag for tag, _, _ in ops] == ["insert"]
    assert [ln for ln in ops[0][2] if ln.strip()] == ["[[entities]]", 'id = "ent_new"', 'role = "builder"']


@pytest.mark.parametrize(
    ("args", "gone"),
    [
        (("project", "remove", "atlas"), ["[[projects]]", 'name = "atlas"   # the big one',
                                          'root = "/home/me/code/atlas"', 'aliases = ["at"]']),
        (("project", "remove", "BEACON"), ["[[projects]]", 'name   = "beacon"', 'root   = "~/code/beacon"',
                                           "box_in_repo = true"]),
        (("entity", "remove", "ent_ops"), ["[[entities]]", 'id = "ent_ops"  # the operator', 'role = "operator"']),
        (("entity", "remove", "ent_bot"), ["[[entities]]", 'id = "ent_bot"']),
    ],
)
def test_remove_takes_out_only_its_table(tmp_path: Path, args: tuple[str, ...], gone: list[str]) -> None:
    home = _hand_home(tmp_path)
    run = run_cli(tmp_path, *args, home=home)
    assert run.returncode == 0, run.stderr.decode()
    after = (home / "config.toml").read_text()
    ops = _ops(HAND_EDITED, after)
    assert [tag for tag, _, _ in ops] == ["delete"]
    assert ops[0][1] == gone  # every comment, blank line and other table is still there, byte for byte
    roster.parse(after.encode())


def test_a_file_without_a_final_newline_still_takes_an_edit(tmp_path: Path) -> None:
    text = HAND_EDITED.rstrip("\n")
    home = _hand_home(tmp_path, text)
    assert run_cli(tmp_path, "entity", "add", "ent_new", home=home).returncode == 0
    after = (home / "config.toml").read_text()
    assert after.startswith(text)
    assert [e.id for e in roster.parse(after.encode()).entities] == ["ent_ops", "ent_bot", "ent_new"]


def test_an_inline_array_stays_inline(tmp_path: Path) -> None:
    home = _hand_home(tmp_path, 'entities = []  # none yet\n[owner]\nroots = ["/home/me"]\n')
    dc = open_home(home)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b", role="builder"))
    dc.remove_entity(EntityRemove(entity_id="ent_a"))
    after = (home / "config.toml").read_text()
    assert after.startswith("entities = [") and after.rstrip().endswith('roots = ["/home/me"]')
    assert "# none yet" in after
    assert [(e.id, e.role) for e in dc.roster.entities] == [("ent_b", "builder")]


def test_an_invalid_roster_is_not_edited(tmp_path: Path) -> None:
    text = HAND_EDITED.replace("[notifier]", "[notifer]")  # a typo: the file no longer loads
    home = _hand_home(tmp_path, text)
    run = run_cli(tmp_path, "entity", "add", "ent_new", home=home)
    assert run.returncode == 2 and b"invalid_config" in run.stderr
    assert (home / "config.toml").read_text() == text


# -- property: any sequence of edits keeps the comments and means what it says ----------------

_NAMES = st.sampled_from(["atlas", "beacon", "comet", "dune", "echo"])
_IDS = st.sampled_from(["ent_ops", "ent_bot", "ent_a", "ent_b"])
_EDITS = st.lists(
    st.one_of(
        st.tuples(st.just("add_project"), _NAMES),
        st.tuples(st.just("remove_project"), _NAMES),
        st.tuples(st.just("add_entity"), _IDS),
        st.tuples(st.just("remove_entity"), _IDS),
    ),
    max_size=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=_EDITS)
def test_edits_keep_every_comment_and_match_the_rules(edits: list[tuple[str, str]]) -> None:
    comments = [ln.split("#", 1)[1] for ln in HAND_EDITED.splitlines() if ln.lstrip().startswith("#")]
    with tempfile.TemporaryDirectory() as tmp:
        home = _hand_home(Path(tmp))
        dc = open_home(home)
        model = dc.roster
        for verb, name in edits:
            try:
                if verb == "add_project":
                    expect = members.with_project(model, roster.Project(name, f"/srv/{name}"))
                    dc.add_project(ProjectAdd(name=name, root=f"/srv/{name}"))
                elif verb == "add_entity":
                    expect = members.with_entity(model, roster.Entity(name))
                    dc.add_entity(EntityAdd(entity_id=name))
                elif verb == "remove_project":
                    expect = members.without_project(model, name)[0]
                    dc.remove_project(ProjectRemove(name=name))
                else:
                    expect = members.without_entity(model, name)[0]
                    dc.remove_entity(EntityRemove(entity_id=name))
            except Refusal as e:
                assert e.reason in {"duplicate_project", "duplicate_entity", "unknown_project", "unknown_entity"}
                continue
            model = expect
            text = (home / "config.toml").read_text()
            assert replace(roster.parse(text.encode()), signature="") == replace(model, signature="")
            for c in comments:  # whole comment lines are never removed
                assert c in text


def test_parallel_inits_create_one_roster(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = cli_env(tmp_path, home)
    procs = [
        subprocess.Popen(
            [str(DOVECOTE_BIN), "init", "--owner-root", f"/srv/owner-{n}", "--json"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for n in range(6)
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err.decode()
        outs.append(orjson.loads(out)["created"])
    assert outs.count(True) == 1  # the others found a roster and kept it
    winner = outs.index(True)
    assert roster.load(home / "config.toml").owner_roots == (f"/srv/owner-{winner}",)


def test_an_edit_that_would_not_mean_what_the_rules_decided_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the last guard: the edited text must parse to exactly the intended roster, else nothing is written
    from dovecote.roster import edit as roster_edit

    home = _hand_home(tmp_path)
    real = roster_edit.append_table

    def skewed(doc: object, key: str, fields: dict[str, object]) -> None:
        real(doc, key, {**fields, "root": "/somewhere/else"})

    monkeypatch.setattr(roster_edit, "append_table", skewed)
    with pytest.raises(Refusal) as e:
        open_home(home).add_project(ProjectAdd(name="comet", root="/srv/comet"))
    assert e.value.reason == "invalid_config"
    monkeypatch.setattr(roster_edit, "append_table", lambda doc, key, fields: real(doc, key, {**fields, "x": 1}))
    with pytest.raises(Refusal) as e:
        open_home(home).add_entity(EntityAdd(
            entity_id="ent_new"
        ))  # an unknown key: the edited text does not even parse
    assert e.value.reason == "invalid_config"
    assert (home / "config.toml").read_text() == HAND_EDITED

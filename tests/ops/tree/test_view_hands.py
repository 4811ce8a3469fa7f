"""``view`` and what people do to it: files inside entries, moves by ``mv``, killed runs, odd paths."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_view import every_state

from dovecote.cli.texts import view_text
from dovecote.derive.lifecycle import State
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.ops.tree import view as view_op
from dovecote.ops.tree.viewtree import FOLDER_DEFAULT, FOLDER_STATES, STATE_FOLDERS, disagreement, tree_state
from dovecote.verbs import Inbox, Move, OutboxSend, View
from helpers import cli_env, run_cli, snapshot
from mailhelpers import ENTITY, entries, files_under, mail_home, send, view_root


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return mail_home(tmp_path)


def states(dc: Dovecote, current: int = 101) -> dict[str, str]:
    return {i["id"]: i["state"] for i in builtins(dc.inbox(Inbox(
        entity_id=ENTITY, current_tic=current, include_terminal=True
    )))["items"]}


def links(dc: Dovecote, iid: str) -> list[dict[str, Any]]:
    rows = [orjson.loads(x) for x in dc.layout.entity_box(ENTITY).read_bytes().splitlines()]
    return [x for x in rows if x.get("ref") == iid and x.get("kind") != "sent"]


# -- item 2: a person's files inside an entry ------------------------------------------------


def test_a_persons_files_inside_an_entry_move_along_and_survive_rebuilds(dc: Dovecote) -> None:
    ids = every_state(dc)
    root = view_root(dc)
    dc.view(View(entity_id=ENTITY, current_tic=103))
    wait = ids["WAIT"]
    entry = root / "inbound" / f"WAIT_{wait}"
    (entry / "notes.md").write_text("my notes\n")
    (entry / "sub").mkdir()
    (entry / "sub" / "a.txt").write_text("a\n")
    mine = {"notes.md": b"my notes\n", "sub/a.txt": b"a\n"}

    def person_files(e: Path) -> dict[str, bytes]:
        return {k: v for k, v in files_under(e).items() if k not in ("envelope.json", "README.md")}

    dc.view(View(entity_id=ENTITY, current_tic=103, rebuild=True))
    assert person_files(entry) == mine
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=wait, current_tic=103))
    out = dc.view(View(entity_id=ENTITY, current_tic=103)).entities[0]
    assert (out.moved, out.removed) == (1, 0) and not entry.exists()
    active = root / "processing" / f"ACTIVE_{wait}"
    assert person_files(active) == mine
    assert orjson.loads((active / "envelope.json").read_bytes())["dovecote"]["state"] == "ACTIVE"
    assert dc.verify().ok  # verify rebuilds every view: the person's files are not the cache, and stay
    assert person_files(active) == mine
    dc.move(Move(kind="defer", entity_id=ENTITY, ref=wait, until_tic=200, current_tic=103))
    dc.view(View(entity_id=ENTITY, current_tic=103))
    assert person_files(root / "deferred" / f"DEFER_{wait}") == mine
    assert "inside an entry too" in (root / "INBOX.md").read_text()  # the promise INBOX.md makes is kept


def test_a_second_copy_holding_a_persons_file_is_kept_and_reported(dc: Dovecote) -> None:
    iid = send(dc, "copied")
    root = view_root(dc)
    dc.view(View(entity_id=ENTITY, current_tic=101))
    copy = root / "processing" / f"ACTIVE_{iid}"
    shutil.copytree(root / "inbound" / f"WAIT_{iid}", copy)
    (copy / "notes.md").write_text("kept\n")
    out = dc.view(View(entity_id=ENTITY, current_tic=101)).entities[0]
    assert out.adopted == [] and links(dc, iid) == []  # a copy beside the original is not a move
    assert [(k["path"], k["reason"]) for k in out.kept] == [(f"processing/ACTIVE_{iid}", "foreign_files")]
    assert (copy / "notes.md").read_text() == "kept\n"
    (copy / "notes.md").unlink()
    out = dc.view(View(entity_id=ENTITY, current_tic=101)).entities[0]
    assert out.removed == 1 and not copy.exists()  # only the view's own files in it: a plain stale copy


def test_a_sent_drafts_entry_holding_a_persons_file_is_kept(dc: Dovecote) -> None:
    ids = every_state(dc)
    root = view_root(dc)
    dc.view(View(entity_id=ENTITY, current_tic=103))
    (root / "outbound" / f"EMIT_{ids['EMIT']}" / "todo.txt").write_text("follow up\n")
    dc.outbox_send(OutboxSend(sender=ENTITY))
    out = dc.view(View(entity_id=ENTITY, current_tic=103)).entities[0]
    assert [k["reason"] for k in out.kept] == ["foreign_files"]
    assert (root / "outbound" / f"EMIT_{ids['EMIT']}" / "todo.txt").read_text() == "follow up\n"


# -- item 8: moving an entry between folders without renaming it ------------------------------


def test_a_move_between_folders_without_renaming_is_adopted_never_undone(tmp_path: Path, dc: Dovecote) -> None:
    a, b, c = send(dc, "a"), send(dc, "b"), send(dc, "c")
    dc.move(Move(kind="seen", entity_id=ENTITY, ref=b, current_tic=101))
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=b, current_tic=101))
    dc.view(View(entity_id=ENTITY, current_tic=101))
    root = view_root(dc)
    (root / "archive").mkdir()
    shutil.move(root / "inbound" / f"WAIT_{a}", root / "processing")  # mv inbound/WAIT_a processing/
    shutil.move(root / "processing" / f"ACTIVE_{b}", root / "archive")
    shutil.move(root / "inbound" / f"WAIT_{c}", root / "archive")
    r = run_cli(tmp_path, "view", ENTITY, "--current-tic", "101", "--json", home=dc.layout.root)
    assert r.returncode == 0, r.stderr.decode()
    (out,) = orjson.loads(r.stdout)["entities"]
    assert sorted((x["id"], x["verb"]) for x in out["adopted"]) == sorted([(a, "claim"), (b, "complete")])
    assert [(x["path"], x["reason"], x["put_back"]) for x in out["refused"]] == [
        (f"archive/WAIT_{c}", "illegal_transition", f"inbound/WAIT_{c}"),
    ]
    assert states(dc) == {a: "ACTIVE", b: "DONE", c: "WAIT"}
    assert entries(root, "processing") == [f"ACTIVE_{a}"]
    assert entries(root, "archive") == [f"DONE_{b}"]
    assert entries(root, "inbound") == [f"WAIT_{c}"]
    again = dc.view(View(entity_id=ENTITY, current_tic=101)).entities[0]
    assert again.adopted == again.refused == [] and again.moved == 0


def test_a_move_the_rails_refuse_is_reported_with_the_verbs_keyword(dc: Dovecote) -> None:
    unseen = send(dc, "never seen")
    asks = send(dc, "answer me", category="directive", response_expected=True)
    nodue = send(dc, "later, no due")
    for iid in (unseen, asks):
        dc.move(Move(kind="claim", entity_id=ENTITY, ref=iid, current_tic=101))
    dc.move(Move(kind="seen", entity_id=ENTITY, ref=asks, current_tic=101))
    dc.view(View(entity_id=ENTITY, current_tic=101))
    root = view_root(dc)
    (root / "archive").mkdir()
    (root / "deferred").mkdir()
    for iid in (unseen, asks):
        shutil.move(root / "processing" / f"ACTIVE_{iid}", root / "archive")
    shutil.move(root / "inbound" / f"WAIT_{nodue}", root / "deferred")
    out = dc.view(View(entity_id=ENTITY, current_tic=101)).entities[0]
    assert sorted((x["id"], x["reason"]) for x in out.refused) == sorted([
        (unseen, "not_seen"), (asks, "response_required"), (nodue, "no_due"),
    ])
    assert out.adopted == [] and states(dc) == {unseen: "ACTIVE", asks: "ACTIVE", nodue: "WAIT"}
    text = view_text(view_op.FolderSync(101, "flag", [out]).to_dict())
    assert f"refused archive/ACTIVE_{unseen}: not_seen:" in text


# -- a killed view ------------------------------------------------------------------------------

_STALL = """
import sys, time
from pathlib import Path
from dovecote.handle.api import open_home
from dovecote.util import fileops

def stall(src, dst):
    Path(sys.argv[2]).write_text("ready")
    time.sleep(120)

fileops.rename_new = stall
from dovecote.verbs import View
open_home(Path(sys.argv[1])).view(View(current_tic=103))
"""


def test_a_killed_view_leaves_temp_folders_the_next_run_removes(tmp_path: Path, dc: Dovecote) -> None:
    every_state(dc)
    root = view_root(dc)
    ready = tmp_path / "ready"
    env = {**cli_env(tmp_path, dc.layout.root), "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", _STALL, str(dc.layout.root), str(ready)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the view never reached its rename"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    left = [p for p in root.rglob(".*") if p.is_dir()]
    assert left and all(p.name.endswith(".tmp") for p in left)  # what the kill left: hidden, half-built
    out = dc.view(View(entity_id=ENTITY, current_tic=103)).entities[0]
    assert out.cleaned == len(left)
    assert not [p for p in root.rglob(".*")]  # nothing hidden is left behind
    assert entries(root, "inbound") and dc.verify().ok


def test_a_leftover_temp_folder_holding_a_persons_file_is_kept(dc: Dovecote) -> None:
    send(dc, "one")
    root = view_root(dc)
    dc.view(View(entity_id=ENTITY, current_tic=101))
    odd = root / "inbound" / ".WAIT_0123456789ab.4242.1.old"
    odd.mkdir()
    (odd / "envelope.json").write_text("{}")
    (odd / "notes.md").write_text("mine\n")
    out = dc.view(View(entity_id=ENTITY, current_tic=101)).entities[0]
    assert [k["reason"] for k in out.kept] == ["foreign_files"] and (odd / "notes.md").is_file()


# -- item 17: odd view paths -------------------------------------------------------------------

ODD_FOLDERS = ["views", "entity", "inbound", "archive", "indexes"]


def _odd_target(dc: Dovecote, which: str) -> Path:
    root = view_root(dc)
    return {"views": dc.layout.views, "entity": root, "indexes": root / "indexes"}.get(which, root / which)


@pytest.mark.parametrize("kind", ["file", "symlink"])
@pytest.mark.parametrize("which", ODD_FOLDERS)
def test_an_odd_view_folder_is_refused_and_nothing_is_written_through_it(
    tmp_path: Path, dc: Dovecote, which: str, kind: str
) -> None:
    every_state(dc)
    if which not in ("views", "entity"):
        dc.view(View(entity_id=ENTITY, current_tic=103))
    target = _odd_target(dc, which)
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    if kind == "file":
        target.write_text("a person's file\n")
    else:
        target.symlink_to(outside, target_is_directory=True)
    before = snapshot(dc.layout.root)
    r = run_cli(tmp_path, "view", "--current-tic", "103", home=dc.layout.root)
    assert r.returncode == 2, r.stderr.decode()
    assert r.stderr.decode().startswith("Error: unsafe_path:") and "Traceback" not in r.stderr.decode()
    assert list(outside.iterdir()) == [] and snapshot(dc.layout.root) == before
    if kind == "file":
        assert target.read_text() == "a person's file\n"


def test_an_entry_that_is_a_link_is_never_written_through(tmp_path: Path, dc: Dovecote) -> None:
    a, b = send(dc, "a"), send(dc, "b")
    dc.view(View(entity_id=ENTITY, current_tic=101))
    root = view_root(dc)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "README.md").write_text("elsewhere\n")
    shutil.rmtree(root / "inbound" / f"WAIT_{a}")
    (root / "inbound" / f"WAIT_{a}").symlink_to(outside, target_is_directory=True)
    envelope = root / "inbound" / f"WAIT_{b}" / "envelope.json"
    envelope.unlink()
    envelope.symlink_to(outside / "README.md")
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=a, current_tic=101))
    out = dc.view(View(entity_id=ENTITY, current_tic=101, rebuild=True)).entities[0]
    assert sorted((k["path"], k["reason"]) for k in out.kept) == sorted([
        (f"inbound/WAIT_{a}", "unsafe_entry"), (f"inbound/WAIT_{b}", "unsafe_entry"),
    ])
    assert files_under(outside) == {"README.md": b"elsewhere\n"}
    assert (root / "processing" / f"ACTIVE_{a}" / "envelope.json").is_file()  # the item is still shown


def test_an_api_refusal_for_an_odd_path_writes_nothing(dc: Dovecote) -> None:
    send(dc, "one")
    dc.layout.views.mkdir(parents=True)
    (dc.layout.views / "agent-mailboxes").write_text("not a folder\n")
    with pytest.raises(Refusal) as e:
        dc.view()
    assert e.value.reason == "unsafe_path"
    assert sorted(p.name for p in dc.layout.views.iterdir()) == ["agent-mailboxes"]


# -- the tree reading rule, as a property -------------------------------------------------------

_states = st.sampled_from([s.value for s in State] + ["wait", "EMIT", "bogus", ""])
_names = st.builds(lambda p, rest: f"{p}_{rest}" if p else rest, st.sampled_from(["", *State.__members__, "REF"]),
                   st.text(min_size=0, max_size=12))
_envs = st.one_of(st.none(), st.fixed_dictionaries({}, optional={
    "lifecycle": st.one_of(st.none(), st.text(max_size=3), st.fixed_dictionaries({}, optional={"state": _states})),
    "dovecote": st.fixed_dictionaries({"letter_id": st.just("0123456789ab"), "state": _states}),
}))


@settings(deadline=None)
@given(st.sampled_from(STATE_FOLDERS), _names, _envs)
def test_an_entry_always_reads_as_a_state_its_folder_holds(folder: str, name: str, env: dict[str, Any] | None) -> None:
    state = tree_state(folder, name, env)
    assert state in FOLDER_STATES[folder]  # the folder is the state, whatever the name or envelope says
    said = disagreement(folder, name, env)
    assert said is None or folder in said


@settings(deadline=None)
@given(st.sampled_from(list(State)), st.sampled_from(STATE_FOLDERS))
def test_a_view_entry_moved_without_renaming_reads_as_its_new_folder(old: State, folder: str) -> None:
    iid = "0123456789ab"
    env = {"lifecycle": {"state": str(old)}, "dovecote": {"letter_id": iid, "state": str(old)}}
    state = tree_state(folder, f"{old}_{iid}", env)
    assert state is (old if old in FOLDER_STATES[folder] else FOLDER_DEFAULT[folder])

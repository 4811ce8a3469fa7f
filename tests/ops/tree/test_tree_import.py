"""``import inbox-tree``: adopt /inbox trees (three envelope forms, every state) along legal moves only."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from dovecote.derive.lifecycle import State, steps_between
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.envelope import DROP_SENDER
from dovecote.model.results import builtins
from dovecote.verbs import ImportInboxTree, Inbox, Move, View
from helpers import DOVECOTE_BIN, cli_env, run_cli, snapshot
from mailhelpers import (
    ENTITY,
    SENDER,
    cgg_tree,
    entries,
    files_under,
    mail_home,
    send,
    skill_envelope,
    view_root,
    write_json,
)


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return mail_home(tmp_path)


def ledger(dc: Dovecote, entity: str = ENTITY) -> list[dict[str, Any]]:
    path = dc.layout.entity_box(entity)
    return [orjson.loads(x) for x in path.read_bytes().splitlines()] if path.exists() else []


def ledger_bytes(dc: Dovecote, entity: str = ENTITY) -> bytes:
    path = dc.layout.entity_box(entity)
    return path.read_bytes() if path.exists() else b""


def states(dc: Dovecote, current: int = 110) -> dict[str, str]:
    """Item id -> state, as every face reads it."""
    return {i["id"]: i["state"] for i in builtins(dc.inbox(Inbox(
        entity_id=ENTITY, current_tic=current, include_terminal=True
    )))["items"]}


def links_of(dc: Dovecote, iid: str) -> list[dict[str, Any]]:
    return [x for x in ledger(dc) if x.get("ref") == iid and x.get("kind") != "sent"]


def by_path(result: Any, entity: str = ENTITY) -> dict[str, str]:
    """Report path (relative to the import root) -> letter id."""
    return {i["path"]: i["id"] for i in result.to_dict()["entities"][entity]["items"]}


def tree(tmp: Path) -> tuple[Path, dict[str, Path]]:
    root = tmp / "audit-logs" / "agent-mailboxes"
    return root, cgg_tree(root / ENTITY)


# -- the table ----------------------------------------------------------------------------


def test_routes_follow_the_table_and_never_pass_through_a_defer() -> None:
    assert steps_between(State.WAIT, State.WAIT) == []
    assert steps_between(State.WAIT, State.ACTIVE) == ["claim"]
    assert steps_between(State.WAIT, State.DONE) == ["claim", "complete"]
    assert steps_between(State.WAIT, State.NACK) == ["nack"]
    assert steps_between(State.WAIT, State.DEFER) == ["defer"]
    assert steps_between(State.DEFER, State.DONE) == ["undefer", "claim", "complete"]
    assert steps_between(State.ACTIVE, State.WAIT) is None  # would need ACTIVE -> DEFER -> WAIT: a backwards move
    assert steps_between(State.ACTIVE, State.NACK) is None
    assert steps_between(State.DONE, State.NACK) is None
    assert steps_between(State.NACK, State.WAIT) is None


# -- a whole CGG tree -----------------------------------------------------------------------


def test_a_tree_of_every_form_in_every_state_is_adopted(tmp_path: Path, dc: Dovecote) -> None:
    root, p = tree(tmp_path)
    result = dc.import_inbox_tree(ImportInboxTree(path=str(root), current_tic=110))
    out = result.to_dict()["entities"][ENTITY]
    ids = {k: by_path(result)[f"{ENTITY}/{v.relative_to(root / ENTITY).as_posix()}"] for k, v in p.items()
           if not k.startswith("_")}
    assert len(set(ids.values())) == 15
    forms = {i["id"]: i["form"] for i in out["items"]}
    assert [forms[ids[k]] for k in ("flat_wait", "dir_wait", "bare_wait")] == ["flat", "dir", "bare"]
    want = {
        "flat_wait": "WAIT", "dir_wait": "WAIT", "bare_wait": "WAIT",
        "flat_active": "ACTIVE", "dir_active": "ACTIVE", "bare_active": "ACTIVE",
        "flat_defer": "DEFER", "dir_defer": "DEFER", "bare_defer": "WAIT",  # no due: adopted as WAIT
        "flat_done": "DONE", "dir_done": "DONE", "bare_done": "DONE",
        "flat_nack": "NACK", "dir_nack": "NACK", "bare_nack": "NACK",
    }
    got = states(dc)
    assert {k: got[ids[k]] for k in want} == want
    # 3 claims; 1 defer (the dir DEFER arrived deferred by its defer_until_tic); 3 x (seen, claim, complete);
    # 3 x (seen, nack)
    assert (out["letters_added"], out["links_added"], out["already_present"]) == (15, 3 + 1 + 9 + 6, 0)
    assert out["refused"] == [] and out["notes"] == [] and out["skipped"] == []
    assert out["adopted_as_wait"] == [
        {"path": f"{ENTITY}/deferred/someday.md", "id": ids["bare_defer"], "detail": "DEFER without a due tic"},
    ]
    view = builtins(dc.inbox(Inbox(entity_id=ENTITY, current_tic=110, include_terminal=True)))
    rows = {r["id"]: r for r in view["items"]}
    assert rows[ids["flat_defer"]]["due_tic"] == 130 and rows[ids["dir_defer"]]["due_tic"] == 140
    assert rows[ids["dir_wait"]]["source_tic"] == 104  # read from provenance
    assert [x["kind"] for x in links_of(dc, ids["flat_done"])] == ["seen", "claim", "complete"]
    assert [x["kind"] for x in links_of(dc, ids["flat_nack"])] == ["seen", "nack"]
    assert all(x["adopted"] == "inbox-tree" and x["agent"] == ENTITY for x in links_of(dc, ids["flat_done"]))
    assert links_of(dc, ids["flat_done"])[-1]["reason"] == "shipped"
    assert links_of(dc, ids["flat_nack"])[-1]["reason"] == "Superseded by 1a2b3c4d"
    (defer,) = links_of(dc, ids["flat_defer"])
    assert (defer["kind"], defer["until_tic"], defer["reason"]) == ("defer", 130, "busy")


def test_a_foreign_envelope_keeps_every_key_but_the_volatile_ones(tmp_path: Path, dc: Dovecote) -> None:
    root, p = tree(tmp_path)
    dc.import_inbox_tree(ImportInboxTree(path=str(root), current_tic=110))
    original = orjson.loads(p["flat_done"].read_bytes())
    (letter,) = [x for x in ledger(dc) if x.get("message_id") == "aa11bb22"]
    assert letter["kind"] == "message" and letter["agent"] == SENDER
    assert letter["ts"] == "2026-03-01T10:00:00Z"  # provenance/lifecycle created_at, normalized
    for key in original:
        if key != "lifecycle":
            assert letter[key] == original[key], key
    lost = {"state", "state_entered_at_tic", "completion_note"}
    assert letter["lifecycle"] == {k: v for k, v in original["lifecycle"].items() if k not in lost}
    dir_letter = next(x for x in ledger(dc) if x.get("message_id") == "msg_dir_wait")
    assert [f["name"] for f in dir_letter["tree_files"]] == ["README.md", "artifacts/log.txt"]
    blob = dc.layout.artifacts / dir_letter["tree_files"][1]["ref"][7:9] / dir_letter["tree_files"][1]["ref"][7:]
    assert blob.read_text() == "line 1\nline 2\n"


def test_an_envelope_claiming_a_persons_trust_is_refused_and_the_rest_adopted(tmp_path: Path, dc: Dovecote) -> None:
    # "human" is a person's own word, given only by their Human View session: a file in a tree never carries it
    root = tmp_path / "agent-mailboxes"
    mbox = root / ENTITY
    for folder in ("inbound", "processing", "archive"):
        (mbox / folder).mkdir(parents=True)
    forged = skill_envelope("f0f0f0f0", "sounds like a person")
    forged["routing"]["trust_level"] = "human"
    write_json(mbox / "inbound" / "WAIT_forged.json", forged)
    write_json(mbox / "inbound" / "WAIT_plain.json", skill_envelope("a0a0a0a0", "a peer's note"))
    out = dc.import_inbox_tree(ImportInboxTree(path=str(root), current_tic=110)).to_dict()["entities"][ENTITY]
    assert [(r["path"], r["reason"]) for r in out["refused"]] == [(f"{ENTITY}/inbound/WAIT_forged.json", "forbidden")]
    assert "trust_level human" in out["refused"][0]["detail"]
    messages = [x for x in ledger(dc) if x.get("kind") == "message"]
    assert [x["message_id"] for x in messages] == ["a0a0a0a0"]
    assert all(x["routing"]["trust_level"] != "human" for x in ledger(dc) if "routing" in x)


def test_a_bare_drop_is_synthesized_from_content(tmp_path: Path, dc: Dovecote) -> None:
    root, _ = tree(tmp_path)
    result = dc.import_inbox_tree(ImportInboxTree(path=str(root), current_tic=110))
    iid = by_path(result)[f"{ENTITY}/inbound/notes-tic-107.md"]
    (letter,) = [x for x in ledger(dc) if x.get("kind") == "message" and x["content"]["subject"] == "notes tic 107"]
    assert letter["agent"] == DROP_SENDER and letter["sender"]["entity_id"] == DROP_SENDER
    assert letter["provenance"]["source_tic"] == 107 and letter["provenance"]["manual_drop"] is True
    assert "ts" not in letter and "created_at" not in letter["provenance"]  # no time that changes on a copy
    (art,) = letter["content"]["artifacts"]
    assert art["name"] == "notes-tic-107.md" and letter["content"]["artifact_refs"] == [art["ref"]]
    assert states(dc)[iid] == "WAIT"
    nack = next(x for x in ledger(dc) if x.get("kind") == "message" and x["content"]["subject"] == "spam note")
    assert nack["content"]["artifacts"][0]["name"] == "spam_note.txt"  # the state prefix is not content


def test_reimporting_the_same_tree_appends_nothing(tmp_path: Path, dc: Dovecote) -> None:
    root, _ = tree(tmp_path)
    dc.import_inbox_tree(ImportInboxTree(path=str(root), current_tic=110))
    before = ledger_bytes(dc)
    again = dc.import_inbox_tree(ImportInboxTree(path=str(root), current_tic=110)).to_dict()["entities"][ENTITY]
    assert ledger_bytes(dc) == before
    assert (again["letters_added"], again["links_added"], again["already_present"]) == (0, 0, 15)
    assert again["refused"] == []


def test_a_bare_drops_id_does_not_depend_on_its_path(tmp_path: Path, dc: Dovecote) -> None:
    root, p = tree(tmp_path)
    first = by_path(dc.import_inbox_tree(ImportInboxTree(
        path=str(root), current_tic=110
    )))[f"{ENTITY}/inbound/notes-tic-107.md"]
    # copied into processing, under the skill's ACTIVE_ prefix, with a new mtime
    copy = root / ENTITY / "processing" / "ACTIVE_notes-tic-107.md"
    shutil.copyfile(p["bare_wait"], copy)
    os.utime(copy, (1_000_000_000, 1_000_000_000))
    before = len(ledger(dc))
    result = dc.import_inbox_tree(ImportInboxTree(path=str(root), current_tic=110))
    assert by_path(result)[f"{ENTITY}/processing/ACTIVE_notes-tic-107.md"] == first
    out = result.to_dict()["entities"][ENTITY]
    assert out["letters_added"] == 0 and out["links_added"] == 1  # the same item, claimed
    assert states(dc)[first] == "ACTIVE" and len(ledger(dc)) == before + 1
    assert [n["reason"] for n in out["notes"]] == ["duplicate_entry"]
    # the whole tree moved elsewhere, into another home: the same ids
    other = mail_home(tmp_path / "elsewhere")
    moved = tmp_path / "moved" / "mailboxes"
    shutil.copytree(root, moved)
    assert by_path(other.import_inbox_tree(ImportInboxTree(path=str(moved), current_tic=110))) == by_path(result)


def test_a_defer_past_its_due_reads_as_wait(tmp_path: Path, dc: Dovecote) -> None:
    mbox = tmp_path / "box"
    write_json(mbox / "deferred" / "DEFER_low_notification_t100_0a0b0c0d.json",
               skill_envelope("0a0b0c0d", "due already", state="DEFER", reminder_tic=108))
    result = dc.import_inbox_tree(ImportInboxTree(path=str(mbox), entity_id=ENTITY, current_tic=110))
    (iid,) = by_path(result).values()
    assert states(dc)[iid] == "WAIT" and links_of(dc, iid) == []
    assert result.to_dict()["entities"][ENTITY]["adopted_as_wait"] == []


# -- hand moves in a dovecote view -------------------------------------------------------------


def test_hand_moves_in_a_view_are_adopted_when_legal_and_reported_when_not(dc: Dovecote) -> None:
    a, b, c = send(dc, "a"), send(dc, "b"), send(dc, "c")
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=c, current_tic=101))
    dc.view(View(entity_id=ENTITY, current_tic=101))
    root = view_root(dc)
    (root / "inbound" / f"WAIT_{a}").rename(root / "processing" / f"ACTIVE_{a}")
    (root / "archive").mkdir()
    (root / "inbound" / f"WAIT_{b}").rename(root / "archive" / f"DONE_{b}")
    (root / "processing" / f"ACTIVE_{c}").rename(root / "inbound" / f"WAIT_{c}")
    letters_before = [x for x in ledger(dc) if x.get("kind") == "message"]
    c_links = links_of(dc, c)
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(root), entity_id=ENTITY, current_tic=101
    )).to_dict()["entities"][ENTITY]
    assert [x for x in ledger(dc) if x.get("kind") == "message"] == letters_before  # never a second letter
    assert out["letters_added"] == 0 and out["links_added"] == 1
    assert [x["kind"] for x in links_of(dc, a)] == ["claim"]
    assert links_of(dc, b) == []  # WAIT -> DONE: no verb does that, so no seen + claim + complete is invented
    assert sorted((r["path"], r["reason"]) for r in out["refused"]) == [
        (f"archive/DONE_{b}", "illegal_transition"), (f"inbound/WAIT_{c}", "illegal_transition"),
    ]
    assert links_of(dc, c) == c_links  # nothing appended for an illegal move
    assert states(dc, 101) == {a: "ACTIVE", b: "WAIT", c: "ACTIVE"}
    again = dc.view(View(entity_id=ENTITY, current_tic=101)).entities[0]
    assert sorted(r["id"] for r in again.refused) == sorted([b, c])  # the view says so too, and puts them back
    assert env_stamp(root / "processing" / f"ACTIVE_{a}") == "ACTIVE"
    assert f"WAIT_{b}" in entries(root, "inbound") and f"ACTIVE_{c}" in entries(root, "processing")
    before = ledger_bytes(dc)
    dc.import_inbox_tree(ImportInboxTree(path=str(root), entity_id=ENTITY, current_tic=101))
    assert ledger_bytes(dc) == before


def directive(dc: Dovecote, subject: str) -> str:
    """A directive that expects a response, as the issue's example."""
    return send(dc, subject, category="directive", response_expected=True)


def test_a_known_items_move_obeys_the_rails_of_its_verb(dc: Dovecote) -> None:
    unseen, unanswered, ready = directive(dc, "never seen"), directive(dc, "no response yet"), send(dc, "ready")
    for iid in (unseen, unanswered, ready):
        dc.move(Move(kind="claim", entity_id=ENTITY, ref=iid, current_tic=101))
    for iid in (unanswered, ready):
        dc.move(Move(kind="seen", entity_id=ENTITY, ref=iid, current_tic=101))
    dc.view(View(entity_id=ENTITY, current_tic=101))
    root = view_root(dc)
    (root / "archive").mkdir()
    for iid in (unseen, unanswered, ready):
        (root / "processing" / f"ACTIVE_{iid}").rename(root / "archive" / f"DONE_{iid}")
    before = {iid: links_of(dc, iid) for iid in (unseen, unanswered)}
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(root), entity_id=ENTITY, current_tic=101
    )).to_dict()["entities"][ENTITY]
    assert sorted((r["path"], r["reason"]) for r in out["refused"]) == sorted([
        (f"archive/DONE_{unseen}", "not_seen"), (f"archive/DONE_{unanswered}", "response_required"),
    ])
    assert {iid: links_of(dc, iid) for iid in (unseen, unanswered)} == before
    assert [x["kind"] for x in links_of(dc, ready)][-1] == "complete" and out["links_added"] == 1
    assert states(dc, 101) == {unseen: "ACTIVE", unanswered: "ACTIVE", ready: "DONE"}


def test_the_issue_example_a_never_seen_directive_moved_to_archive(dc: Dovecote) -> None:
    iid = directive(dc, "do the thing")
    dc.view(View(entity_id=ENTITY, current_tic=101))
    root = view_root(dc)
    (root / "archive").mkdir()
    (root / "inbound" / f"WAIT_{iid}").rename(root / "archive" / f"DONE_{iid}")
    before = ledger_bytes(dc)
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(root), entity_id=ENTITY, current_tic=101
    )).to_dict()["entities"][ENTITY]
    assert [r["reason"] for r in out["refused"]] == ["illegal_transition"]
    assert "claim then complete" in out["refused"][0]["detail"]
    assert ledger_bytes(dc) == before and states(dc, 101) == {iid: "WAIT"}


def test_a_move_of_an_item_imported_before_obeys_the_table(tmp_path: Path, dc: Dovecote) -> None:
    mbox = tmp_path / "box"
    flat = write_json(mbox / "inbound" / "WAIT_normal_directive_t105_1a2b3c4d.json",
                      skill_envelope("1a2b3c4d", "from the other tool"))
    (iid,) = by_path(dc.import_inbox_tree(ImportInboxTree(path=str(mbox), entity_id=ENTITY, current_tic=110))).values()
    (mbox / "archive").mkdir()
    flat.rename(mbox / "archive" / "DONE_normal_directive_t105_1a2b3c4d.json")
    before = ledger_bytes(dc)
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(mbox), entity_id=ENTITY, current_tic=110
    )).to_dict()["entities"][ENTITY]
    assert [r["reason"] for r in out["refused"]] == ["illegal_transition"] and ledger_bytes(dc) == before
    assert [n["reason"] for n in out["notes"]] == ["state_disagrees"]  # its lifecycle.state still says WAIT
    assert states(dc) == {iid: "WAIT"}


def test_mv_into_a_missing_archive_folder_invents_no_item(dc: Dovecote) -> None:
    iid = send(dc, "moved by mv")
    dc.view(View(entity_id=ENTITY, current_tic=101))
    root = view_root(dc)
    (root / "inbound" / f"WAIT_{iid}").rename(root / "archive")  # archive/ did not exist: the entry *is* archive/
    before = ledger_bytes(dc)
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(root), entity_id=ENTITY, current_tic=101
    )).to_dict()["entities"][ENTITY]
    assert [(i["path"], i["id"]) for i in out["items"]] == [("archive", iid)]  # no item made of its README
    assert [n["reason"] for n in out["notes"]] == ["folder_is_entry"]
    assert [r["reason"] for r in out["refused"]] == ["illegal_transition"] and ledger_bytes(dc) == before
    with pytest.raises(Refusal) as e:
        dc.view(View(entity_id=ENTITY, current_tic=101))
    assert e.value.reason == "unsafe_path" and "itself an item folder" in e.value.detail
    assert (root / "archive" / "README.md").is_file()  # the person's folder is left as it is


def test_three_concurrent_imports_of_one_tree(tmp_path: Path, dc: Dovecote) -> None:
    root, _ = tree(tmp_path)
    extra = 80  # archived items enough for the three runs to overlap
    for n in range(extra):
        write_json(root / ENTITY / "archive" / f"DONE_normal_notification_t90_{n:08x}.json",
                   skill_envelope(f"{n:08x}", f"old item {n}", state="DONE", source_tic=90, category="notification"))
    argv = [str(DOVECOTE_BIN), "import", "inbox-tree", str(root), "--current-tic", "110", "--json"]
    env = cli_env(tmp_path, dc.layout.root)
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [e.decode() for _, e in outs]
    results = [orjson.loads(o)["entities"][ENTITY] for o, _ in outs]
    assert [r["refused"] for r in results] == [[], [], []]  # no spurious refusal
    assert sorted(r["letters_added"] for r in results) == [0, 0, 15 + extra]
    assert sum(r["links_added"] for r in results) == 19 + 3 * extra
    messages = [x for x in ledger(dc) if x.get("kind") == "message"]
    assert len(messages) == 15 + extra
    seen: dict[str, int] = {}
    for x in ledger(dc):
        if x.get("kind") == "seen":
            seen[x["ref"]] = seen.get(x["ref"], 0) + 1
    assert len(seen) == 6 + extra and set(seen.values()) == {1}  # exactly one seen per archived item


def env_stamp(entry: Path) -> str:
    return str(orjson.loads((entry / "envelope.json").read_bytes())["dovecote"]["state"])


def test_a_fresh_view_imports_as_nothing_new(dc: Dovecote) -> None:
    a = send(dc, "a")
    send(dc, "b")
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=a, current_tic=101))
    dc.view(View(entity_id=ENTITY, current_tic=101))
    before = ledger_bytes(dc)
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(view_root(dc)), entity_id=ENTITY, current_tic=101
    )).to_dict()["entities"][ENTITY]
    assert (out["letters_added"], out["links_added"], out["already_present"]) == (0, 0, 2)
    assert ledger_bytes(dc) == before


def test_a_stale_view_entry_is_not_a_hand_move(dc: Dovecote) -> None:
    a = send(dc, "a")
    dc.view(View(entity_id=ENTITY, current_tic=101))
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=a, current_tic=101))  # the view still shows inbound/WAIT_a
    before = ledger_bytes(dc)
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(view_root(dc)), entity_id=ENTITY, current_tic=101
    )).to_dict()["entities"][ENTITY]
    assert out["refused"] == [] and ledger_bytes(dc) == before


def test_a_view_envelope_of_an_unknown_letter_is_refused(tmp_path: Path, dc: Dovecote) -> None:
    env = skill_envelope("x", "copied from another home")
    env["dovecote"] = {"letter_id": "0123456789ab", "state": "WAIT"}
    write_json(tmp_path / "box" / "processing" / "ACTIVE_0123456789ab" / "envelope.json", env)
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(tmp_path / "box"), entity_id=ENTITY
    )).to_dict()["entities"][ENTITY]
    assert [r["reason"] for r in out["refused"]] == ["unknown_letter"]
    assert ledger(dc) == []


# -- identity and bad input ---------------------------------------------------------------------


def test_a_known_message_id_maps_to_the_existing_item(tmp_path: Path, dc: Dovecote) -> None:
    write_json(tmp_path / "one" / "inbound" / "m.json", skill_envelope("msg_same", "first words"))
    (iid,) = by_path(dc.import_inbox_tree(ImportInboxTree(path=str(tmp_path / "one"), entity_id=ENTITY))).values()
    write_json(tmp_path / "two" / "processing" / "m.json", skill_envelope("msg_same", "edited words", state=None))
    result = dc.import_inbox_tree(ImportInboxTree(path=str(tmp_path / "two"), entity_id=ENTITY))
    assert list(by_path(result).values()) == [iid]
    assert len([x for x in ledger(dc) if x.get("kind") == "message"]) == 1
    assert states(dc)[iid] == "ACTIVE"


def test_a_crashed_flat_move_makes_one_item(tmp_path: Path, dc: Dovecote) -> None:
    """Notes A13.2: the new file was written, the old one not yet deleted."""
    write_json(tmp_path / "box" / "inbound" / "WAIT_normal_directive_t105_1a2b3c4d.json",
               skill_envelope("1a2b3c4d", "twice", state="WAIT"))
    write_json(tmp_path / "box" / "processing" / "ACTIVE_normal_directive_t105_1a2b3c4d.json",
               skill_envelope("1a2b3c4d", "twice", state="ACTIVE"))
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(tmp_path / "box"), entity_id=ENTITY, current_tic=110
    )).to_dict()["entities"][ENTITY]
    assert out["letters_added"] == 1 and out["links_added"] == 1
    assert list(states(dc).values()) == ["ACTIVE"]


def test_unreadable_json_is_a_bare_drop_and_says_so(tmp_path: Path, dc: Dovecote) -> None:
    (tmp_path / "box" / "inbound").mkdir(parents=True)
    (tmp_path / "box" / "inbound" / "broken.json").write_text("{not json")
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(tmp_path / "box"), entity_id=ENTITY
    )).to_dict()["entities"][ENTITY]
    assert out["notes"] == [{"path": "inbound/broken.json", "reason": "unreadable_json",
                             "detail": "not a JSON object; adopted as a bare drop"}]
    assert out["items"][0]["form"] == "bare" and out["letters_added"] == 1
    (letter,) = ledger(dc)
    assert letter["content"]["subject"] == "broken"


def test_ref_folders_made_by_organize_are_reference_not_items(tmp_path: Path, dc: Dovecote) -> None:
    inbound = tmp_path / "box" / "inbound"
    (inbound / "REF_docs").mkdir(parents=True)
    (inbound / "REF_docs" / "notes.md").write_text("grouped by organize --apply")
    (inbound / "loose.md").write_text("still loose")
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(tmp_path / "box"), entity_id=ENTITY
    )).to_dict()["entities"][ENTITY]
    assert [s["reason"] for s in out["skipped"]] == ["reference"]
    assert out["letters_added"] == 1
    (letter,) = ledger(dc)
    assert letter["content"]["subject"] == "loose"


def test_symbolic_links_are_never_followed(tmp_path: Path, dc: Dovecote) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not import me\n")
    (tmp_path / "box" / "inbound").mkdir(parents=True)
    (tmp_path / "box" / "inbound" / "link.txt").symlink_to(secret)
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(tmp_path / "box"), entity_id=ENTITY
    )).to_dict()["entities"][ENTITY]
    assert [(r["path"], r["reason"]) for r in out["refused"]] == [("inbound/link.txt", "invalid_field")]
    assert ledger(dc) == [] and not dc.layout.artifacts.exists()


def test_a_root_imports_known_entities_and_skips_the_rest(tmp_path: Path, dc: Dovecote) -> None:
    root, _ = tree(tmp_path)
    cgg_tree(root / "ent_stranger", "ent_stranger")
    (root / "ent_bad name" / "inbound").mkdir(parents=True)
    (root / "not_an_entity" / "inbound").mkdir(parents=True)
    roster = dc.layout.config.read_bytes()
    result = dc.import_inbox_tree(ImportInboxTree(path=str(root), current_tic=110)).to_dict()
    assert list(result["entities"]) == [ENTITY]
    assert [(s["name"], s["reason"]) for s in result["skipped_entities"]] == [
        ("ent_bad name", "invalid_name"), ("ent_stranger", "unknown_entity"),
    ]
    assert dc.layout.config.read_bytes() == roster  # never auto-created
    assert not dc.layout.entity_box("ent_stranger").exists()


def test_bad_requests_are_refused_before_anything_is_written(tmp_path: Path, dc: Dovecote) -> None:
    root, p = tree(tmp_path)
    home = snapshot(dc.layout.root)
    cases = [
        (lambda: dc.import_inbox_tree(ImportInboxTree(path=str(p["bare_wait"]), entity_id=ENTITY)), "invalid_field"),
        (lambda: dc.import_inbox_tree(ImportInboxTree(
            path=str(tmp_path / "missing"), entity_id=ENTITY
        )), "invalid_field"),
        (lambda: dc.import_inbox_tree(ImportInboxTree(path=str(root / ENTITY))), "missing_field"),
        (lambda: dc.import_inbox_tree(ImportInboxTree(
            path=str(root / ENTITY), entity_id="ent_nobody"
        )), "unknown_entity"),
        (lambda: dc.import_inbox_tree(ImportInboxTree(path=str(root / ENTITY), entity_id="../x")), "invalid_name"),
        (lambda: dc.import_inbox_tree(ImportInboxTree(
            path=str(tmp_path), entity_id=ENTITY
        )), "invalid_field"),  # holds no mailbox
    ]
    for call, reason in cases:
        with pytest.raises(Refusal) as e:
            call()
        assert e.value.reason == reason
    assert snapshot(dc.layout.root) == home


def test_an_entity_can_be_picked_out_of_a_root(tmp_path: Path, dc: Dovecote) -> None:
    root, _ = tree(tmp_path)
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(root), entity_id=ENTITY, current_tic=110
    )).to_dict()["entities"][ENTITY]
    assert out["letters_added"] == 15


def test_an_outbound_folder_is_reported_not_imported(tmp_path: Path, dc: Dovecote) -> None:
    write_json(tmp_path / "box" / "outbound" / "EMIT_msg_hello" / "envelope.json", skill_envelope("h", "hello"))
    out = dc.import_inbox_tree(ImportInboxTree(
        path=str(tmp_path / "box"), entity_id=ENTITY
    )).to_dict()["entities"][ENTITY]
    assert [(s["path"], s["reason"]) for s in out["skipped"]] == [("outbound/EMIT_msg_hello", "outbound")]
    assert ledger(dc) == []


def test_view_then_verify_after_an_import_is_byte_identical(tmp_path: Path, dc: Dovecote) -> None:
    root, _ = tree(tmp_path)
    dc.import_inbox_tree(ImportInboxTree(path=str(root), current_tic=110))
    dc.view(View(entity_id=ENTITY, current_tic=110))
    before = files_under(view_root(dc))
    assert len(entries(view_root(dc), "archive")) == 6
    r = dc.verify()
    assert r.ok, r.differ
    dc.view(View(entity_id=ENTITY, current_tic=110))
    assert files_under(view_root(dc)) == before


# -- CLI ------------------------------------------------------------------------------------


def test_cli_import_json_then_idempotent(tmp_path: Path, dc: Dovecote) -> None:
    root, _ = tree(tmp_path)
    home = dc.layout.root
    r = run_cli(tmp_path, "import", "inbox-tree", str(root), "--current-tic", "110", "--json", home=home)
    assert r.returncode == 0, r.stderr.decode()
    out = orjson.loads(r.stdout)["entities"][ENTITY]
    assert (out["letters_added"], out["links_added"]) == (15, 19)
    before = ledger_bytes(dc)
    r = run_cli(tmp_path, "import", "inbox-tree", str(root / ENTITY), "--entity", ENTITY, "--current-tic", "110",
                home=home)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().startswith(f"{ENTITY}: 0 letters added, 0 links added, 15 already present")
    assert ledger_bytes(dc) == before


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["missing-dir", "--entity", ENTITY], "invalid_field"),
        (["BOX", "--entity", "ent_nobody"], "unknown_entity"),
        (["BOX"], "missing_field"),
    ],
)
def test_cli_import_refusals_exit_2_and_write_nothing(
    tmp_path: Path, dc: Dovecote, args: list[str], reason: str
) -> None:
    root, _ = tree(tmp_path)
    argv = [str(root / ENTITY) if a == "BOX" else str(tmp_path / a) if a == "missing-dir" else a for a in args]
    home = snapshot(dc.layout.root)
    r = run_cli(tmp_path, "import", "inbox-tree", *argv, env=cli_env(tmp_path, dc.layout.root))
    assert r.returncode == 2, r.stderr.decode()
    assert r.stderr.decode().startswith(f"Error: {reason}:")
    assert r.stdout == b"" and snapshot(dc.layout.root) == home

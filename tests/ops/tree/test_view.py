"""``view``: the /inbox folder layout written from the ledger, as a cache that never touches hand drops."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from dovecote.cli.texts import view_text
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote, open_home
from dovecote.model.addresses import entity
from dovecote.model.letters import canonical_line
from dovecote.model.results import builtins
from dovecote.ops.tree import view as view_op
from dovecote.roster.config import Limits
from dovecote.verbs import Inbox, Message, Move, OutboxSend, View
from helpers import rewrite_roster, run_cli
from mailhelpers import ENTITY, SENDER, entries, files_under, mail_home, send, view_root


def env_of(root: Path, rel: str) -> dict[str, Any]:
    value = orjson.loads((root / rel / "envelope.json").read_bytes())
    assert isinstance(value, dict)
    return value


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def every_state(dc: Dovecote) -> dict[str, str]:
    """One item in each state (DEFER due at tic 105), plus one pending draft; ids by state."""
    ids = {s: send(dc, f"subject {s}") for s in ("WAIT", "ACTIVE", "DEFER", "DONE", "NACK")}
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=ids["ACTIVE"], current_tic=101))
    dc.move(Move(kind="defer", entity_id=ENTITY, ref=ids["DEFER"], until_tic=105, reason="later", current_tic=101))
    dc.move(Move(kind="seen", entity_id=ENTITY, ref=ids["DONE"], current_tic=101))
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=ids["DONE"], current_tic=101))
    dc.move(Move(
        kind="complete", entity_id=ENTITY, ref=ids["DONE"], result_ref="pr-7", reason="shipped", current_tic=102
    ))
    dc.move(Move(kind="seen", entity_id=ENTITY, ref=ids["NACK"], current_tic=101))
    dc.move(Move(kind="nack", entity_id=ENTITY, ref=ids["NACK"], reason="not mine", current_tic=102))
    ids["EMIT"] = dc.draft(Message(
        recipient=SENDER, sender=ENTITY, subject="a reply draft", body="draft body", current_tic=101
    )).id
    return ids


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return mail_home(tmp_path)


# -- layout -------------------------------------------------------------------------------


def test_the_layout_has_every_state_in_its_folder(dc: Dovecote) -> None:
    ids = every_state(dc)
    result = dc.view(View(entity_id=ENTITY, current_tic=103))
    root = view_root(dc)
    assert entries(root, "inbound") == [f"WAIT_{ids['WAIT']}"]
    assert entries(root, "processing") == [f"ACTIVE_{ids['ACTIVE']}"]
    assert entries(root, "deferred") == [f"DEFER_{ids['DEFER']}"]
    assert entries(root, "archive") == sorted([f"DONE_{ids['DONE']}", f"NACK_{ids['NACK']}"])
    assert entries(root, "outbound") == [f"EMIT_{ids['EMIT']}"]
    assert entries(root, "indexes") == ["events.jsonl", "inbox-registry.json", "receipts.jsonl"]
    assert b"dovecote view" in (root / "INBOX.md").read_bytes()
    (ent,) = result.entities
    assert ent.counts == {"inbound": 1, "processing": 1, "deferred": 1, "archive": 2, "outbound": 1}
    assert (ent.written, ent.removed, ent.unchanged) == (6 + 4, 0, 0)  # six entries, four top files
    for state, folder in (("WAIT", "inbound"), ("ACTIVE", "processing"), ("DONE", "archive")):
        iid = ids[state]
        env = env_of(root, f"{folder}/{state}_{iid}")
        assert env["message_id"].startswith("msg_")  # the letter's own message id, kept by the view
        assert env["lifecycle"]["state"] == state
        assert env["dovecote"] == {"letter_id": iid, "state": state}
        assert env["content"]["subject"] == f"subject {state}"
        assert set(env) >= {"sender", "recipient", "routing", "content", "lifecycle", "provenance"}
        readme = (root / folder / f"{state}_{iid}" / "README.md").read_text()
        assert readme.startswith(f"# subject {state}\n") and f"body of subject {state}" in readme
    draft = env_of(root, f"outbound/EMIT_{ids['EMIT']}")
    assert draft["dovecote"] == {"letter_id": ids["EMIT"], "state": "EMIT"}
    assert draft["recipient"]["entity_id"] == SENDER
    assert "draft body" in (root / "outbound" / f"EMIT_{ids['EMIT']}" / "README.md").read_text()


def test_a_letters_own_message_id_is_kept(dc: Dovecote) -> None:
    line = canonical_line({"kind": "message", "agent": SENDER, "message_id": "msg_foreign_1",
                           "content": {"subject": "foreign"}, "sender": {"entity_id": SENDER}})
    ((iid, _),) = dc.store.append(entity(ENTITY), [line])
    dc.view(View(entity_id=ENTITY))
    env = env_of(view_root(dc), f"inbound/WAIT_{iid}")
    assert env["message_id"] == "msg_foreign_1"
    assert env["dovecote"]["letter_id"] == iid


def test_a_defer_resurfaces_as_wait_when_its_tic_comes(dc: Dovecote) -> None:
    ids = every_state(dc)
    root = view_root(dc)
    dc.view(View(entity_id=ENTITY, current_tic=104))
    assert entries(root, "deferred") == [f"DEFER_{ids['DEFER']}"]
    reg = orjson.loads((root / "indexes" / "inbox-registry.json").read_bytes())["messages"]
    assert reg[ids["DEFER"]]["state"] == "DEFER" and reg[ids["DEFER"]]["reminder_tic"] == 105
    result = dc.view(View(entity_id=ENTITY, current_tic=105))
    assert entries(root, "deferred") == []
    assert entries(root, "inbound") == sorted([f"WAIT_{ids['WAIT']}", f"WAIT_{ids['DEFER']}"])
    assert env_of(root, f"inbound/WAIT_{ids['DEFER']}")["lifecycle"]["state"] == "WAIT"
    assert (result.entities[0].moved, result.entities[0].removed) == (1, 0)  # renamed along, not rebuilt
    reg = orjson.loads((root / "indexes" / "inbox-registry.json").read_bytes())["messages"]
    assert reg[ids["DEFER"]]["state"] == "WAIT" and reg[ids["DEFER"]]["state_entered_at_tic"] == 105
    rows = [r for r in jsonl(root / "indexes" / "events.jsonl") if r["message_id"] == ids["DEFER"]]
    assert [(r["from_state"], r["to_state"]) for r in rows] == [(None, "WAIT"), ("WAIT", "DEFER"), ("DEFER", "WAIT")]
    assert rows[-1]["actor"] == "system:tic" and rows[-1]["tic"] == 105


def test_the_indexes_follow_the_ledger(dc: Dovecote) -> None:
    ids = every_state(dc)
    dc.view(View(entity_id=ENTITY, current_tic=103))
    root = view_root(dc)
    registry = orjson.loads((root / "indexes" / "inbox-registry.json").read_bytes())
    assert registry["idempotency_index"] == {}
    assert set(registry["messages"]) == {ids[s] for s in ("WAIT", "ACTIVE", "DEFER", "DONE", "NACK")}
    done = registry["messages"][ids["DONE"]]
    assert done == {
        "state": "DONE", "filename": f"DONE_{ids['DONE']}", "subject": "subject DONE", "sender": SENDER,
        "priority": "normal", "envelope_type": None, "source_tic": 100, "state_entered_at_tic": 102,
    }
    events = jsonl(root / "indexes" / "events.jsonl")
    by_item: dict[str, list[tuple[Any, ...]]] = {}
    for r in events:
        assert set(r) >= {"message_id", "from_state", "to_state", "actor", "tic", "reason", "timestamp"}
        by_item.setdefault(r["message_id"], []).append((r["from_state"], r["to_state"], r["tic"], r["reason"]))
    assert by_item[ids["WAIT"]] == [(None, "WAIT", 100, "delivered")]
    assert by_item[ids["DONE"]] == [
        (None, "WAIT", 100, "delivered"), ("WAIT", "WAIT", 101, None), ("WAIT", "ACTIVE", 101, None),
        ("ACTIVE", "DONE", 102, "shipped"),
    ]
    assert by_item[ids["NACK"]][-1] == ("WAIT", "NACK", 102, "not mine")
    (complete_row,) = [r for r in events if r.get("result_ref")]
    assert complete_row["message_id"] == ids["DONE"] and complete_row["result_ref"] == "pr-7"
    receipts = jsonl(root / "indexes" / "receipts.jsonl")
    assert sorted((r["message_id"], r["receipt_type"], r["completed_at_tic"], r["notes"]) for r in receipts) == sorted([
        (ids["DONE"], "ACK", 102, "shipped"), (ids["NACK"], "NACK", 102, "not mine"),
    ])
    ack = next(r for r in receipts if r["receipt_type"] == "ACK")
    ledger = [orjson.loads(x) for x in dc.layout.entity_box(ENTITY).read_bytes().splitlines()]
    (complete,) = [x for x in ledger if x.get("kind") == "complete"]
    assert ack["result_ref"] == "pr-7" and ack["created_at"] == complete["ts"]


def test_a_large_body_is_a_pointer_to_its_artifact(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    dc = rewrite_roster(dc, limits=Limits(body_inline_max=10))
    iid = dc.send(Message(recipient=ENTITY, sender=SENDER, subject="big", body="x" * 100)).id
    dc.view(View(entity_id=ENTITY))
    readme = (view_root(dc) / "inbound" / f"WAIT_{iid}" / "README.md").read_text()
    ref = env_of(view_root(dc), f"inbound/WAIT_{iid}")["content"]["body_ref"]
    assert ref.startswith("sha256:") and ref in readme and "x" * 100 not in readme


# -- determinism ----------------------------------------------------------------------------


def test_the_same_ledger_gives_byte_identical_files(dc: Dovecote) -> None:
    every_state(dc)
    root = view_root(dc)
    dc.view(View(current_tic=103))
    first = files_under(root)
    again = dc.view(View(current_tic=103)).entities[0]
    assert (again.written, again.removed, again.unchanged) == (0, 0, 10)
    assert files_under(root) == first
    open_home(dc.layout.root).view(View(current_tic=103, rebuild=True))  # a cold handle, every entry rewritten
    assert files_under(root) == first
    shutil.rmtree(dc.layout.views)
    open_home(dc.layout.root).view(View(current_tic=103))
    assert files_under(root) == first
    assert not any(p.name.startswith(".") for p in root.rglob("*"))  # no temp folder left behind


def test_an_entry_that_changed_state_is_replaced(dc: Dovecote) -> None:
    ids = every_state(dc)
    root = view_root(dc)
    dc.view(View(entity_id=ENTITY, current_tic=103))
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=ids["WAIT"], current_tic=103))
    out = dc.view(View(entity_id=ENTITY, current_tic=103)).entities[0]
    assert f"WAIT_{ids['WAIT']}" not in entries(root, "inbound")
    assert f"ACTIVE_{ids['WAIT']}" in entries(root, "processing")
    assert (out.moved, out.removed) == (1, 0) and out.adopted == out.refused == out.unknown == []
    assert env_of(root, f"processing/ACTIVE_{ids['WAIT']}")["dovecote"]["state"] == "ACTIVE"


def test_a_delivered_drafts_entry_is_removed(dc: Dovecote) -> None:
    ids = every_state(dc)
    dc.view(View(entity_id=ENTITY, current_tic=103))
    dc.outbox_send(OutboxSend(sender=ENTITY))
    out = dc.view(View(entity_id=ENTITY, current_tic=103)).entities[0]
    assert entries(view_root(dc), "outbound") == [] and out.removed == 1
    assert out.counts["outbound"] == 0 and ids["EMIT"]


# -- what the view does not own -----------------------------------------------------------


def drop_by_hand(root: Path) -> dict[str, bytes]:
    """Files a person keeps beside the view; none matches an owned name."""
    (root / "inbound").mkdir(parents=True, exist_ok=True)
    (root / "inbound" / "notes.md").write_text("my notes\n")
    (root / "inbound" / "WAIT_handmade").mkdir()
    (root / "inbound" / "WAIT_handmade" / "envelope.json").write_text("{}")
    (root / "inbound" / "WAIT_1a2b3c4d.json").write_text('{"message_id": "1a2b3c4d"}')
    (root / "archive").mkdir(exist_ok=True)
    (root / "archive" / "DONE_0123456789ab.txt").write_text("not a view entry: it has a suffix\n")
    (root / "outbound").mkdir(exist_ok=True)
    (root / "outbound" / "EMIT_msg_by_hand").mkdir()
    (root / "outbound" / "EMIT_msg_by_hand" / "README.md").write_text("hand draft\n")
    (root / "indexes").mkdir(exist_ok=True)
    (root / "indexes" / "events.jsonl.lock").write_text("")
    (root / "indexes" / "mine.json").write_text("[]")
    (root / "scratch.txt").write_text("top-level scratch\n")
    return {k: v for k, v in files_under(root).items()}


def test_hand_dropped_files_are_never_touched(dc: Dovecote) -> None:
    ids = every_state(dc)
    root = view_root(dc)
    dropped = drop_by_hand(root)
    dc.view(View(entity_id=ENTITY, current_tic=103))
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=ids["WAIT"], current_tic=103))
    dc.view(View(entity_id=ENTITY, current_tic=106, rebuild=True))
    assert dc.verify().ok
    after = files_under(root)
    for rel, data in dropped.items():
        assert after.get(rel) == data, rel
    assert builtins(dc.inbox(Inbox(
        entity_id=ENTITY, current_tic=106
    )))["counts"]["loose"] == 3  # notes.md, WAIT_handmade, WAIT_1a2b3c4d.json


def test_a_hand_move_is_adopted_as_its_verb_or_refused_and_put_back(dc: Dovecote) -> None:
    ids = every_state(dc)
    root = view_root(dc)
    dc.view(View(entity_id=ENTITY, current_tic=103))
    wait, active = ids["WAIT"], ids["ACTIVE"]
    (root / "inbound" / f"WAIT_{wait}").rename(root / "processing" / f"ACTIVE_{wait}")
    (root / "processing" / f"ACTIVE_{active}").rename(root / "inbound" / f"WAIT_{active}")
    (root / "inbound" / f"WAIT_{active}" / "notes.md").write_text("mine\n")
    out = dc.view(View(entity_id=ENTITY, current_tic=103)).entities[0]
    (adopted,) = out.adopted
    assert (adopted["path"], adopted["verb"], adopted["from"], adopted["to"]) == (
        f"processing/ACTIVE_{wait}", "claim", "WAIT", "ACTIVE")
    link = next(x for x in ledger_of(dc) if x.get("ref") == wait)
    assert (link["kind"], link["adopted"], link["agent"]) == ("claim", "inbox-tree", ENTITY)
    (refused,) = out.refused
    assert refused["path"] == f"inbound/WAIT_{active}" and refused["reason"] == "illegal_transition"
    assert refused["put_back"] == f"processing/ACTIVE_{active}"
    # the refused entry is where the ledger says, with the person's file; nothing says ACTIVE -> WAIT happened
    assert (root / "processing" / f"ACTIVE_{active}" / "notes.md").read_text() == "mine\n"
    assert f"WAIT_{active}" not in entries(root, "inbound")
    assert env_of(root, f"processing/ACTIVE_{wait}")["dovecote"]["state"] == "ACTIVE"
    assert entries(root, "inbound") == []
    assert not any(x.get("ref") == active and x.get("adopted") for x in ledger_of(dc))
    text = view_text(view_op.FolderSync(103, "flag", [out]).to_dict())
    assert f"adopted processing/ACTIVE_{wait}: claim (WAIT -> ACTIVE)" in text
    assert f"refused inbound/WAIT_{active}: illegal_transition:" in text
    assert f"put back at processing/ACTIVE_{active}" in text
    again = dc.view(View(entity_id=ENTITY, current_tic=103)).entities[0]
    assert again.adopted == again.refused == [] and again.moved == 0


def ledger_of(dc: Dovecote) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in dc.layout.entity_box(ENTITY).read_bytes().splitlines()]


def test_an_edited_state_is_no_move_but_a_move_to_archive_is_a_nack(dc: Dovecote) -> None:
    ids = every_state(dc)
    root = view_root(dc)
    dc.view(View(entity_id=ENTITY, current_tic=103))
    path = root / "inbound" / f"WAIT_{ids['WAIT']}" / "envelope.json"

    def edit(state: str) -> None:
        env = orjson.loads(path.read_bytes())
        env["lifecycle"]["state"] = state
        path.write_bytes(orjson.dumps(env))

    edit("NACK")  # an edit alone is no move: the folder is the state, and the view says so
    out = dc.view(View(entity_id=ENTITY, current_tic=103)).entities[0]
    assert [(n["reason"], n["id"]) for n in out.notes] == [("state_disagrees", ids["WAIT"])]
    assert "move the entry to archive/" in out.notes[0]["detail"] and out.adopted == out.refused == []
    assert orjson.loads(path.read_bytes())["lifecycle"]["state"] == "WAIT"
    edit("NACK")
    (root / "archive" / f"NACK_{ids['WAIT']}").parent.mkdir(exist_ok=True)
    path.parent.rename(root / "archive" / f"NACK_{ids['WAIT']}")
    out = dc.view(View(entity_id=ENTITY, current_tic=103)).entities[0]
    assert [(r["tree_state"], r["reason"]) for r in out.refused] == [("NACK", "not_seen")]  # the rails hold
    assert f"WAIT_{ids['WAIT']}" in entries(root, "inbound")  # put back, and said so
    dc.move(Move(kind="seen", entity_id=ENTITY, ref=ids["WAIT"], current_tic=103))
    (root / "inbound" / f"WAIT_{ids['WAIT']}").rename(root / "archive" / f"NACK_{ids['WAIT']}")
    out = dc.view(View(entity_id=ENTITY, current_tic=103)).entities[0]
    assert [a["verb"] for a in out.adopted] == ["nack"] and out.refused == []
    assert f"NACK_{ids['WAIT']}" in entries(root, "archive")


def test_owned_names_with_unknown_ids_are_reported_and_kept(dc: Dovecote) -> None:
    every_state(dc)
    root = view_root(dc)
    stranger = root / "processing" / "ACTIVE_0123456789ab"
    stranger.mkdir(parents=True)
    (stranger / "README.md").write_text("from another home\n")
    out = dc.view(View(entity_id=ENTITY, current_tic=103)).entities[0]
    assert out.unknown == [{"path": "processing/ACTIVE_0123456789ab", "id": "0123456789ab"}]
    assert (stranger / "README.md").read_text() == "from another home\n"


def test_an_unknown_entity_is_refused_before_anything_is_written(dc: Dovecote) -> None:
    send(dc, "one")
    with pytest.raises(Refusal) as e:
        dc.view(View(entity_id="ent_nobody"))
    assert e.value.reason == "unknown_entity"
    assert not dc.layout.views.exists()


def test_all_entities_when_none_is_named(dc: Dovecote) -> None:
    send(dc, "to the builder")
    send(dc, "to ops", recipient=SENDER, sender=ENTITY)
    result = dc.view()
    assert [e.entity for e in result.entities] == [ENTITY, SENDER]
    assert len(entries(view_root(dc, SENDER), "inbound")) == 1


# -- verify ---------------------------------------------------------------------------------


def test_verify_rebuilds_views_and_proves_them_byte_identical(dc: Dovecote) -> None:
    every_state(dc)
    root = view_root(dc)
    dropped = drop_by_hand(root)
    dc.view()
    before = files_under(root)
    r = dc.verify()
    assert r.ok, r.differ
    assert {f"view entity:{ENTITY}", f"view entity:{SENDER}"} <= set(r.checked)
    assert str(dc.layout.views) not in r.deleted
    assert files_under(root) == before
    assert all(files_under(root)[k] == v for k, v in dropped.items())


def test_verify_catches_a_view_that_does_not_come_from_the_ledger(
    dc: Dovecote, monkeypatch: pytest.MonkeyPatch
) -> None:
    every_state(dc)
    real = view_op.plan
    calls = {"n": 0}

    def drifting(*args: Any, **kw: Any) -> view_op.Plan:
        p = real(*args, **kw)
        calls["n"] += 1
        p.top["INBOX.md"] += f"run {calls['n']}\n".encode()  # an authority other than the ledger
        return p

    monkeypatch.setattr(view_op, "plan", drifting)
    r = dc.verify()
    assert r.ok is False
    assert {d["read"] for d in r.differ} == {f"view entity:{ENTITY}", f"view entity:{SENDER}"}


# -- CLI ------------------------------------------------------------------------------------


def test_cli_view_json_and_summary(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    ids = every_state(dc)
    home = dc.layout.root
    r = run_cli(tmp_path, "view", ENTITY, "--current-tic", "103", "--json", home=home)
    assert r.returncode == 0, r.stderr.decode()
    out = orjson.loads(r.stdout)
    assert out["clock"] == {"tic": 103, "source": "flag"}
    (ent,) = out["entities"]
    assert ent["entity"] == ENTITY and ent["written"] == 10 and ent["counts"]["archive"] == 2
    assert (view_root(dc) / "deferred" / f"DEFER_{ids['DEFER']}" / "envelope.json").is_file()
    r = run_cli(tmp_path, "view", "--current-tic", "103", home=home)
    assert r.returncode == 0, r.stderr.decode()
    assert f"{ENTITY}: 0 written, 0 moved, 0 removed, 10 unchanged" in r.stdout.decode()
    assert f"{SENDER}: 4 written" in r.stdout.decode()


def test_cli_view_refusal(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    r = run_cli(tmp_path, "view", "ent_nobody", home=dc.layout.root)
    assert r.returncode == 2
    assert r.stderr.decode().startswith("Error: unknown_entity:")
    assert r.stdout == b"" and not dc.layout.views.exists()

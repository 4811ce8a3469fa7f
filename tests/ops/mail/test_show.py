"""``dovecote show ENTITY ID``: envelope, body, thread and history of one item (issue 6)."""

from __future__ import annotations

from pathlib import Path

import orjson

from dovecote.roster.config import Limits
from dovecote.verbs import EntityAdd, Message, Move
from helpers import new_home, rewrite_roster, run_cli


def mail_home(tmp: Path) -> tuple[Path, str, str]:
    dc = new_home(tmp)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    item = dc.send(Message(
        sender="ent_a", recipient="ent_b", subject="deploy?\nnow", body="line 1\nline 2\x1b[31m", category="query",
        thread_id="t1", current_tic=1,
    )).id
    other = dc.send(Message(sender="ent_a", recipient="ent_b", subject="also", thread_id="t1", current_tic=2)).id
    dc.send(Message(sender="ent_a", recipient="ent_b", subject="unrelated", current_tic=2))
    dc.move(Move(kind="seen", entity_id="ent_b", ref=item, current_tic=2))
    dc.move(Move(kind="claim", entity_id="ent_b", ref=item, current_tic=2))
    dc.send(Message(
        sender="ent_b", recipient="ent_a", subject="yes", category="response", reply_to=item, current_tic=3
    ))
    return dc.layout.root, item, other


def test_show_json_has_envelope_body_thread_history(tmp_path: Path) -> None:
    home, item, other = mail_home(tmp_path)
    r = run_cli(tmp_path, "show", "ent_b", item[:6], "--json", "--current-tic", "4", home=home)
    assert r.returncode == 0, r.stderr.decode()
    d = orjson.loads(r.stdout)
    assert d["schema"] == "dovecote-show-v1" and d["item"]["id"] == item and d["item"]["state"] == "ACTIVE"
    assert d["envelope"]["sender"] == "ent_a" and d["envelope"]["thread_id"] == "t1"
    assert d["body"] == "line 1\nline 2\x1b[31m" and d["body_ref"] is None
    assert {(t["id"], t["relation"], t["direction"]) for t in d["thread"]} >= {(other, "same_thread", "inbound")}
    assert any(t["relation"] == "reply" and t["direction"] == "outbound" for t in d["thread"])
    assert len(d["thread"]) == 2  # the unrelated message is not in it
    assert [(h["kind"], h["agent"], h["applied"]) for h in d["history"]] == [
        ("seen", "ent_b", True), ("claim", "ent_b", True),
    ]
    assert all(h["ts"] for h in d["history"])


def test_show_text_is_one_line_per_field(tmp_path: Path) -> None:
    home, item, _ = mail_home(tmp_path)
    r = run_cli(tmp_path, "show", "ent_b", item, home=home)
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    assert "\x1b" not in out  # a control character in a body cannot repaint the terminal
    assert "subject:           deploy?\\nnow" in out
    assert "history: 2" in out and "thread: 2" in out


def test_show_reads_a_large_body_from_the_artifact_store(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    dc = rewrite_roster(dc, limits=Limits(body_inline_max=10))
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    body = "big body " * 20
    item = dc.send(Message(sender="ent_a", recipient="ent_b", subject="s", body=body)).id
    d = orjson.loads(run_cli(tmp_path, "show", "ent_b", item, "--json", home=dc.layout.root).stdout)
    assert d["body"] == body and d["body_ref"]


def test_show_refuses_unknown_and_ambiguous_ids(tmp_path: Path) -> None:
    home, item, _ = mail_home(tmp_path)
    r = run_cli(tmp_path, "show", "ent_b", "ffffffffffff", home=home)
    assert r.returncode == 2 and r.stderr.startswith(b"Error: unknown_letter:")
    r = run_cli(tmp_path, "show", "ent_x", item, home=home)
    assert r.returncode == 2 and r.stderr.startswith(b"Error: unknown_entity:")

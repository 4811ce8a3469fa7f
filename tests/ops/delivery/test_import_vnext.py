"""``import vnext``: the source is never modified, a re-import adds nothing, malformed files never half-import."""

from __future__ import annotations

import hashlib
import os
from datetime import timedelta
from pathlib import Path

import pytest

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.addresses import entity
from dovecote.model.results import builtins
from dovecote.verbs import EntityAdd, ImportVnext
from dovecote.verbs import Trackers as TrackersVerb
from helpers import new_home, run_cli, snapshot
from vnext_fixture import AGENTS, STATE_COUNTS, T0, VnextDir, busy, busy_with_legacy, home_with_agents, vnext_counts_of


def tree_hash(root: Path) -> str:
    """Every path, mode, and content under ``root``: what "the source was not modified" means."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        st = os.lstat(p)
        h.update(f"{p.relative_to(root)}\0{st.st_mode}\0{st.st_mtime_ns}\0".encode())
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
    return h.hexdigest()


def boxes(dc: Dovecote) -> dict[str, int]:
    return {a: len(dc.store.read(entity(a)).letters) for a in AGENTS}


def test_dry_run_and_write_never_modify_the_source(tmp_path: Path) -> None:
    root = tmp_path / "mailbox"
    v = busy(root)
    v.legacy("jabari", "tariq", ack_status="acked", escalated=True)
    before = tree_hash(root)
    dc = home_with_agents(tmp_path)
    dc.import_vnext(ImportVnext(path=str(root)))
    assert tree_hash(root) == before
    dc.import_vnext(ImportVnext(path=str(root), write=True))
    assert tree_hash(root) == before


def test_the_dry_run_is_a_read_and_write_is_on_the_deny_list() -> None:
    assert not verbs.writes("import_vnext", ImportVnext(path="/x"))
    assert verbs.writes("import_vnext", ImportVnext(path="/x", write=True))


def test_a_dry_run_writes_nothing_and_says_what_write_appends(tmp_path: Path) -> None:
    root = tmp_path / "mailbox"
    busy(root)
    dc = home_with_agents(tmp_path)
    home = snapshot(dc.layout.root)
    dry = dc.import_vnext(ImportVnext(path=str(root))).to_dict()
    assert snapshot(dc.layout.root) == home and dry["letters"]["appended"] == 0
    wrote = dc.import_vnext(ImportVnext(path=str(root), write=True)).to_dict()
    assert wrote["letters"] == {"planned": dry["letters"]["planned"], "appended": dry["letters"]["planned"],
                                "already_present": 0}
    assert sum(boxes(dc).values()) == dry["letters"]["planned"] > 0


@pytest.mark.both_stores
def test_a_re_import_adds_nothing_and_a_later_one_adds_only_what_happened_since(tmp_path: Path) -> None:
    root = tmp_path / "mailbox"
    v = busy(root)
    dc = home_with_agents(tmp_path)
    first = dc.import_vnext(ImportVnext(path=str(root), write=True)).to_dict()["letters"]
    counts = boxes(dc)
    again = dc.import_vnext(ImportVnext(path=str(root), write=True)).to_dict()
    held = again["envelopes"]["already_in_boxes"]  # deliveries the boxes hold are not planned again
    assert held == again["envelopes"]["deliveries"] > 0
    assert again["letters"] == {"planned": first["planned"] - held, "appended": 0,
                                "already_present": first["planned"] - held}
    assert boxes(dc) == counts
    # vNext runs on: the envelope still pending (not imported: vNext had not delivered it) is delivered,
    # and its tracker repings once; the import adds that delivery and that reping, nothing else
    v.mailman(T0 + timedelta(hours=1))
    v.mailman(T0 + timedelta(hours=1, minutes=6))
    later = dc.import_vnext(ImportVnext(path=str(root), write=True)).to_dict()["letters"]
    assert later["appended"] == 2 and later["planned"] == first["planned"] - held + 2


def test_malformed_files_are_counted_with_a_keyword_and_write_is_refused_whole(tmp_path: Path) -> None:
    root = tmp_path / "mailbox"
    v = busy(root)
    v.drop("torn.json", b'{"envelope_id": "env_torn", "type": "ta')
    v.drop("list.json", b"[1, 2]")
    (root / "haiku" / "tracking" / "bad.json").write_bytes(b"\xff\xfe not utf-8")
    with (root / "ledger" / "deliveries.jsonl").open("ab") as f:
        f.write(b'{"event_type": "DELIVERY_CONF')
    (root / "haiku" / "tracking" / "link.json").symlink_to(root / "haiku" / "tracking" / "bad.json")
    dc = home_with_agents(tmp_path)
    got = dc.import_vnext(ImportVnext(path=str(root))).to_dict()
    assert {(m["path"], m["reason"]) for m in got["malformed"]} == {
        ("intake/pending/torn.json", "invalid_json"), ("intake/pending/list.json", "not_an_object"),
        ("haiku/tracking/bad.json", "not_utf8"), ("ledger/deliveries.jsonl", "invalid_json"),
        ("haiku/tracking/link.json", "symlink"),
    }
    assert got["malformed_count"] == 5
    home = snapshot(dc.layout.root)
    with pytest.raises(Refusal) as e:
        dc.import_vnext(ImportVnext(path=str(root), write=True))
    assert e.value.reason == "vnext_malformed" and "torn.json (invalid_json)" in e.value.detail
    assert snapshot(dc.layout.root) == home  # nothing of the readable files was imported either


def test_the_cli_reports_malformed_files_and_refusals_without_a_traceback(tmp_path: Path) -> None:
    root = tmp_path / "mailbox"
    v = VnextDir(root)
    v.send("aya", "tariq")
    v.drop("torn.json", b"{")
    v.mailman(T0)  # delivers the envelope; the torn file stays in pending (vNext retries it forever, B13.6)
    dc = new_home(tmp_path / "h")
    home = dc.layout.root
    dry = run_cli(tmp_path, "import", "vnext", str(root), home=home, process=True)
    assert dry.returncode == 0 and b"intake/pending/torn.json: invalid_json" in dry.stdout
    res = run_cli(tmp_path, "import", "vnext", str(root), "--write", home=home, process=True)
    assert res.returncode == 2 and res.stderr.startswith(b"Error: vnext_malformed: ")
    assert b"Traceback" not in res.stderr + res.stdout
    (root / "intake" / "pending" / "torn.json").unlink()
    res = run_cli(tmp_path, "import", "vnext", str(root), "--write", home=home, process=True)
    assert res.returncode == 2
    assert res.stderr.startswith(b"Error: unknown_recipient: not registered entities: aya, tariq")
    missing = run_cli(tmp_path, "import", "vnext", str(tmp_path / "nowhere"), home=home)
    assert missing.returncode == 2 and b"invalid_field" in missing.stderr


def test_unregistered_agents_refuse_the_write_and_the_dry_run_names_them(tmp_path: Path) -> None:
    root = tmp_path / "mailbox"
    busy(root)
    dc = new_home(tmp_path / "home")
    dc.add_entity(EntityAdd(entity_id="aya"))
    dry = dc.import_vnext(ImportVnext(path=str(root))).to_dict()
    assert dry["entities_missing"] == ["arbiter", "haiku", "heru", "jabari", "kimi", "tariq"]
    home = snapshot(dc.layout.root)
    with pytest.raises(Refusal) as e:
        dc.import_vnext(ImportVnext(path=str(root), write=True))
    assert e.value.reason == "unknown_recipient" and snapshot(dc.layout.root) == home


def test_quarantined_envelopes_are_counted_never_delivered(tmp_path: Path) -> None:
    root = tmp_path / "mailbox"
    v = VnextDir(root)
    v.send("aya", "tariq", trust_plane="plane-a", intent_class="execute")
    v.mailman(T0)
    dc = home_with_agents(tmp_path)
    got = dc.import_vnext(ImportVnext(path=str(root), write=True)).to_dict()
    assert got["intake"]["quarantine"] == 1 and got["envelopes"]["quarantined"] == 1
    assert got["letters"]["planned"] == 0 and sum(boxes(dc).values()) == 0


def test_a_late_ack_adds_the_ack_and_keeps_the_timeout_it_came_after(tmp_path: Path) -> None:
    """B13.8: vNext flips timed_out to acked and reuses ack_ts; the imported timeout letter stays the same."""
    root = tmp_path / "mailbox"
    v = VnextDir(root)
    env = v.send("aya", "tariq", max_repings=0)
    v.mailman(T0)
    v.mailman(T0 + timedelta(minutes=6))  # past due, no repings: timed out, escalated to aya
    dc = home_with_agents(tmp_path)
    first = dc.import_vnext(ImportVnext(path=str(root), write=True)).to_dict()
    assert first["letters_by_kind"] == {"ack_timeout": 1, "escalation": 1, "message": 1, "task": 1}
    (msg,) = dc.store.read(entity("aya")).letters  # the escalation is a real message to its target
    (task, _, marker) = dc.store.read(entity("tariq")).letters
    assert msg.data()["escalates"] == task.id and marker.data()["message"] == msg.id and msg.kind == "message"
    v.ack("tariq", env["envelope_id"], T0 + timedelta(minutes=30))
    v.watch(T0 + timedelta(minutes=31))
    later = dc.import_vnext(ImportVnext(path=str(root), write=True)).to_dict()
    assert later["letters_by_kind"] == {"ack": 1, "ack_timeout": 1, "escalation": 1, "message": 1}
    assert later["letters"]["appended"] == 1 and later["tracker_counts"]["acked"] == 1
    assert len(dc.store.read(entity("aya")).letters) == 1  # the escalation, once


def test_after_the_import_dovecotes_trackers_count_as_the_dry_run(tmp_path: Path) -> None:
    root = tmp_path / "mailbox"
    busy_with_legacy(root)
    dc = home_with_agents(tmp_path)
    dry = dc.import_vnext(ImportVnext(path=str(root))).to_dict()
    dc.import_vnext(ImportVnext(path=str(root), write=True))
    assert vnext_counts_of(dc) == {k: dry["tracker_counts"][k] for k in STATE_COUNTS}
    assert dry["envelopes"]["without_envelope_file"] == 3  # the legacy trackers' envelopes are long gone
    late = [t for t in builtins(dc.trackers(TrackersVerb(limit=1000)))["trackers"] if t["ack_late"]]
    assert len(late) == 2 and all(t["timed_out_ts"] and t["ack_state"] == "acked" for t in late)


def test_a_re_import_after_vnext_migrated_its_trackers_in_place_delivers_nothing_twice(tmp_path: Path) -> None:
    """The mailman rewrites a legacy tracker as v3 (B6): the file's drift is gone, the delivery is the same one."""
    root = tmp_path / "mailbox"
    v = VnextDir(root)
    v.legacy("jabari", "tariq", ack_status="pending", pinged=False)
    dc = home_with_agents(tmp_path)
    first = dc.import_vnext(ImportVnext(path=str(root), write=True)).to_dict()
    assert first["tracker_counts"]["legacy_compat_only"] == 1 == vnext_counts_of(dc)["legacy_compat_only"]
    (delivery,) = dc.store.read(entity("tariq")).letters
    assert delivery.data()["legacy_fields_preserved"] == {"ack_status": "pending", "receipt_path": None}
    assert delivery.data()["migration_inference"]["ack_state"] == "migration:derived_ack_state"
    v.tick(T0)  # migrated in place; not due yet, so nothing else happens
    again = dc.import_vnext(ImportVnext(path=str(root), write=True)).to_dict()
    assert again["tracker_counts"]["schema_drifted"] == 0 and again["letters"]["appended"] == 0
    assert len(dc.store.read(entity("tariq")).letters) == 1
    assert vnext_counts_of(dc)["total"] == 1  # one tracker, never a duplicate (B13.7)


def test_links_and_unreadable_entries_are_named_never_followed(tmp_path: Path) -> None:
    root = tmp_path / "mailbox"
    busy(root)
    elsewhere = tmp_path / "elsewhere"
    VnextDir(elsewhere).legacy("aya", "tariq")
    (root / "agents" / "ghost").symlink_to(elsewhere / "agents" / "tariq")
    (root / "haiku" / "tracking" / "folder.json").mkdir()
    got = home_with_agents(tmp_path).import_vnext(ImportVnext(path=str(root))).to_dict()
    assert {(m["path"], m["reason"]) for m in got["malformed"]} == {
        ("agents/ghost", "symlink"), ("haiku/tracking/folder.json", "unreadable")}


def test_a_span_past_a_century_is_clamped_on_import_and_every_read_still_answers(tmp_path: Path) -> None:
    """An imported ack_timeout_s of 2**62 overflowed ``timedelta`` in every later read of the box (trackers,
    status, the mailman): the import clamps it to a century and the letter says what it clamped."""
    root = tmp_path / "mailbox"
    v = VnextDir(root)
    env = v.send("aya", "tariq", ack_timeout_s=2**62)
    name = f"{env['envelope_id']}.json"  # vNext's own mailman crashes on it: the file is moved by hand
    os.replace(root / "intake" / "pending" / name, root / "intake" / "processed" / name)
    dc = home_with_agents(tmp_path)
    dc.import_vnext(ImportVnext(path=str(root), write=True))
    (t,) = [t for t in builtins(dc.trackers(now=T0))["trackers"] if t["envelope_id"] == env["envelope_id"]]
    assert t["ack_state"] == "pending" and t["ack_due_ts"] is not None and t["ack_due_ts"] > "2120"
    (letter,) = [x for x in dc.store.read(entity("tariq")).letters if x.data().get("envelope_id") == env["envelope_id"]
                 and x.kind == "task"]
    assert letter.data()["ack_policy"]["clamped"] == ["ack_timeout_s"]
    assert builtins(dc.status(now=T0))["tracker_counts"]["pending_ack"] == 1
    dc.mailman(now=T0)

"""``import agent-mail``: a dry run says what --write does; the result is what their own server shows each agent."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from agentmail_archive import AGENTS, Builder, fork_sample, sample, t, their_counts
from dovecote import verbs
from dovecote.handle import agentmail_mail
from dovecote.handle.api import Dovecote
from dovecote.model.addresses import entity
from dovecote.ops.agentmail import names, profiles
from dovecote.verbs import ImportAgentMail, Inbox, Leases
from helpers import new_home, run_cli, snapshot


def imported(tmp: Path) -> tuple[Dovecote, Path]:
    db = sample(tmp / "am")
    dc = new_home(tmp)
    dc.import_agent_mail(ImportAgentMail(path=str(tmp / "am"), write=True))
    return dc, db


@pytest.mark.both_stores
def test_the_dry_run_counts_every_row_and_writes_nothing(tmp_path: Path) -> None:
    sample(tmp_path / "am")
    dc = new_home(tmp_path)
    before = snapshot(dc.layout.root)
    dry = dc.import_agent_mail(ImportAgentMail(path=str(tmp_path / "am"))).to_dict()
    assert snapshot(dc.layout.root) == before
    assert dry["rows"] == {"projects": 2, "agents": 6, "messages": 7, "message_recipients": 11,
                           "file_reservations": 4}
    assert dry["imported"] == dry["rows"] and dry["skipped"] == []
    assert dry["projects_added"] == ["srv-alpha", "srv-beta"]
    assert sorted(dry["entities_added"]) == sorted(names.entity_id(s, n) for s, n in AGENTS.values())
    # 6 agents: a profile at inception and one at last activity; 11 deliveries; 7 read (seen); 3 acked (claim)
    assert dry["letters_by_kind"] == {"agent_profile": 12, "claim": 3, "lease": 4, "lease_release": 1,
                                      "message": 11, "seen": 7}
    assert dry["letters"] == {"planned": 38, "appended": 0, "already_present": 0}
    wrote = dc.import_agent_mail(ImportAgentMail(path=str(tmp_path / "am"), write=True)).to_dict()
    assert wrote["letters"] == {"planned": 38, "appended": 38, "already_present": 0}


@pytest.mark.both_stores
def test_a_second_run_appends_nothing(tmp_path: Path) -> None:
    dc, _ = imported(tmp_path)
    before = snapshot(dc.layout.root)
    again = dc.import_agent_mail(ImportAgentMail(path=str(tmp_path / "am"), write=True)).to_dict()
    assert again["letters"] == {"planned": 38, "appended": 0, "already_present": 38}
    assert again["projects_added"] == [] and again["entities_added"] == []
    assert {k: v for k, v in snapshot(dc.layout.root).items() if "letters" in k} == \
        {k: v for k, v in before.items() if "letters" in k}


def _ours(dc: Dovecote, eid: str) -> dict[str, int]:
    items = dc.inbox(Inbox(entity_id=eid, include_terminal=True)).items or []
    return {"messages": len(items), "unread": sum(not i["seen"] for i in items),
            "ack_pending": sum(i["response_expected"] and i["state"] == "WAIT" for i in items)}


@pytest.mark.both_stores
def test_every_agents_inbox_counts_are_theirs_through_the_profile_and_the_cli(tmp_path: Path) -> None:
    dc, db = imported(tmp_path)
    assert sum(their_counts(db, a)["messages"] for a in AGENTS) == 11
    for aid, (slug, name) in AGENTS.items():
        theirs = their_counts(db, aid)
        rows = agentmail_mail.fetch_inbox(dc, None, {"project_key": f"/{slug.replace('-', '/')}",
                                                     "agent_name": name, "limit": 1000})
        assert len(rows) == theirs["messages"], name
        assert sum(r["ack_required"] for r in rows) >= theirs["ack_pending"]
        assert _ours(dc, names.entity_id(slug, name)) == theirs, name


def test_dovecote_inbox_counts_are_theirs(tmp_path: Path) -> None:
    dc, db = imported(tmp_path)
    for aid, (slug, name) in AGENTS.items():
        theirs = their_counts(db, aid)
        eid = names.entity_id(slug, name)
        out = run_cli(tmp_path, "inbox", eid, "--json", home=dc.layout.root)
        assert out.returncode == 0, out.stderr
        counts = json.loads(out.stdout)["counts"]
        assert counts["inbound"] + counts["processing"] == theirs["messages"]
        assert counts["processing"] == sum(1 for _, _, _, ack in _rows(db, aid) if ack is not None)


def _rows(db: Path, aid: int) -> list[tuple[int, str, str | None, str | None]]:
    con = sqlite3.connect(db)
    try:
        return list(con.execute("SELECT message_id, kind, read_ts, ack_ts FROM message_recipients WHERE agent_id=?",
                                (aid,)))
    finally:
        con.close()


def test_the_envelope_keeps_their_fields(tmp_path: Path) -> None:
    dc, _ = imported(tmp_path)
    eid = names.entity_id("srv-alpha", "cc-0")
    letters = [x.data() for x in dc.store.read(entity(eid)).letters if x.kind == "message"]
    plan = next(d for d in letters if d["content"]["subject"] == "Plan for the week")
    assert plan["agentmail"]["kind"] == "cc"
    assert (plan["agentmail"]["to"], plan["agentmail"]["cc"], plan["agentmail"]["bcc"]) == \
        (["BlueLake"], ["cc-0"], ["RedFox"])
    assert plan["routing"]["thread_id"] == "1" and plan["routing"]["response_expected"] is True
    assert plan["ts"] == "2026-12-03T00:00:01Z"
    review = next(d for d in letters if d["content"]["subject"] == "Schema review")
    assert review["routing"]["priority"] == "high" and review["routing"]["thread_id"] == "schema-1"
    assert review["agentmail"]["topic"] == "db"
    assert review["agentmail"]["attachments"] == [{"type": "inline", "media_type": "image/webp", "bytes": 10,
                                                   "width": 1, "height": 1, "sha1": "ab"}]  # no inline bytes
    # the reply to the thread-less first message is in its thread, as their server threads it
    reply = [x.data() for x in dc.store.read(entity(names.entity_id("srv-alpha", "GreenCastle"))).letters
             if x.kind == "message" and x.data()["content"]["subject"].startswith("Re:")]
    assert reply[0]["routing"]["thread_id"] == "1"


@pytest.mark.both_stores
def test_read_is_seen_and_ack_is_claim_at_their_times(tmp_path: Path) -> None:
    dc, _ = imported(tmp_path)
    eid = names.entity_id("srv-alpha", "GreenCastle")
    ref = next(i["id"] for i in dc.inbox(Inbox(entity_id=eid, include_terminal=True)).items or []
               if i["subject"].startswith("Re:"))
    history = [(h.kind, h.ts) for h in dc.show(verbs.Show(entity_id=eid, ref=ref)).history if h.applied]
    assert history == [("seen", "2026-12-04T00:00:10Z"), ("claim", "2026-12-04T00:00:20Z")]
    acked = agentmail_mail.acknowledge_message(dc, None, {"project_key": "/srv/alpha", "agent_name": "GreenCastle",
                                                          "message_id": names.int_id(ref)})
    assert acked["acknowledged_at"] == "2026-12-04T00:00:20+00:00"  # the profile reads the imported ack as its own


def test_agents_keep_their_profiles_and_the_retired_one_is_marked(tmp_path: Path) -> None:
    dc, _ = imported(tmp_path)
    assert {e.id for e in dc.roster.entities} >= {names.entity_id(s, n) for s, n in AGENTS.values()}
    fox = names.entity_id("srv-alpha", "RedFox")
    pr = profiles.profile(dc.context, fox)
    assert pr is not None and pr.program == "claude-code" and pr.inception_ts == "2026-12-01T00:01:00Z"
    assert pr.last_active_ts == "2026-12-02T00:01:00Z"
    marks = [x.data().get("retired_at") for x in dc.store.read(entity(fox)).letters if x.kind == profiles.KIND]
    assert marks == ["2026-12-02T00:00:05Z"] * 2
    other = names.entity_id("srv-alpha", "BlueLake")
    assert all("retired_at" not in x.data() for x in dc.store.read(entity(other)).letters)


def test_reservations_are_leases_with_their_times(tmp_path: Path) -> None:
    dc, _ = imported(tmp_path)
    rows = dc.leases(Leases(project="srv-alpha", include_ended=True)).to_dict()["leases"]
    got = {tuple(r["globs"]): (r["state"], r["taken_at"], r["released_at"], r["exclusive"]) for r in rows}
    assert got == {("src/api/*.py",): ("active", "2026-12-03T00:00:00Z", None, True),
                   ("docs/**",): ("released", "2026-12-03T00:00:10Z", "2026-12-03T00:10:00Z", True),
                   ("README.md",): ("expired", "2026-12-03T00:00:20Z", None, False)}
    beta = dc.leases(Leases(project="srv-beta", include_ended=True)).to_dict()["leases"]
    assert [(r["entity"], r["expires"]) for r in beta] == [("srv-beta.NavyPeak", "2099-01-01T00:00:00Z")]


def test_rows_it_cannot_import_are_named_with_a_reason(tmp_path: Path) -> None:
    b = Builder(tmp_path / "bad" / "storage.sqlite3")
    b.project(1, "/srv/alpha")
    b.project(2, "/srv/beta")
    b.project(3, "relative/path")
    b.agent(1, 1, "GreenCastle")
    b.agent(2, 2, "NavyPeak")
    b.agent(3, 77, "Orphan")
    b.agent(4, 1, "bad name")
    b.message(1, 99, "from nobody", [(1, "to", None, None)], mid=1)
    b.message(1, 1, "to nobody", [(98, "to", None, None), (1, "xx", None, None)], mid=2)
    b.message(1, 2, "from beta", [(1, "to", None, None)], mid=3)
    b.message(1, 1, "bad time", [(1, "to", None, None)], created="yesterday", mid=4)
    b.message(1, 1, "  ", [(1, "to", None, None)], mid=5)
    b.message(1, 1, "fine", [(1, "to", "soon", None)], mid=6)
    b.con.execute("INSERT INTO message_recipients VALUES (404, 1, 'to', NULL, NULL)")
    b.reservation(1, 1, 1, "../escape", t(3), t(4))
    b.reservation(2, 1, 1, "ok/**", t(3), "never")
    b.close()
    dc = new_home(tmp_path)
    r = dc.import_agent_mail(ImportAgentMail(path=str(tmp_path / "bad"), write=True)).to_dict()
    got = {(s["table"], s["key"]): s["reason"] for s in r["skipped"]}
    assert got == {
        ("projects", "3"): "invalid_field", ("agents", "3"): "unknown_project", ("agents", "4"): "invalid_name",
        ("messages", "1"): "unknown_entity", ("message_recipients", "1/1"): "unknown_entity",
        ("message_recipients", "2/98"): "unknown_entity", ("message_recipients", "2/1"): "invalid_field",
        ("messages", "3"): "unsupported", ("message_recipients", "3/1"): "unsupported",
        ("messages", "4"): "invalid_field", ("message_recipients", "4/1"): "invalid_field",
        ("messages", "5"): "invalid_field", ("message_recipients", "5/1"): "invalid_field",
        ("message_recipients", "6/1"): "invalid_field", ("message_recipients", "404/1"): "unknown_letter",
        ("file_reservations", "1"): "invalid_field", ("file_reservations", "2"): "invalid_field",
    }
    # every row is imported or named: nothing is silently dropped
    for table, n in r["rows"].items():
        assert r["imported"][table] + sum(1 for k in got if k[0] == table) >= n, table
    assert r["imported"] == {"projects": 2, "agents": 2, "messages": 2, "message_recipients": 0,
                             "file_reservations": 0}
    assert r["letters"]["appended"] == r["letters"]["planned"] == 4  # two agents' two profiles each


def test_the_database_is_read_only_and_read_while_a_writer_holds_it(tmp_path: Path) -> None:
    db = sample(tmp_path / "am")
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")  # their server's mode
    con.close()
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO projects VALUES (9, 'x', '/x', '2026-12-01 00:00:00.000000', NULL)")
    try:
        dc = new_home(tmp_path)
        r = dc.import_agent_mail(ImportAgentMail(path=str(db), write=True)).to_dict()
        assert r["rows"]["projects"] == 2  # the snapshot it read: the writer's row is not committed
        assert r["letters"]["appended"] == 38
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before


def test_the_cli_prints_the_summary_and_refuses_a_path_without_a_database(tmp_path: Path) -> None:
    sample(tmp_path / "am")
    dc = new_home(tmp_path)
    out = run_cli(tmp_path, "import", "agent-mail", str(tmp_path / "am"), home=dc.layout.root)
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert "  messages: 7 rows, 7 imported\n" in text
    assert "Letters would import (dry run; --write imports): 38 in 8 boxes" in text
    assert "Rows not imported: 0\n" in text
    out = run_cli(tmp_path, "import", "agent-mail", str(tmp_path / "am"), "--write", "--json", home=dc.layout.root)
    assert json.loads(out.stdout)["letters"]["appended"] == 38
    bad = run_cli(tmp_path, "import", "agent-mail", str(tmp_path / "nowhere"), home=dc.layout.root)
    assert bad.returncode == 2 and b"invalid_field" in bad.stderr and b"Traceback" not in bad.stderr


def test_the_published_forks_schema_imports_and_its_inactive_agents_are_retired(tmp_path: Path) -> None:
    fork_sample(tmp_path / "fork")
    dc = new_home(tmp_path)
    r = dc.import_agent_mail(ImportAgentMail(path=str(tmp_path / "fork"), write=True)).to_dict()
    assert r["skipped"] == [] and r["imported"] == {"projects": 1, "agents": 3, "messages": 1,
                                                    "message_recipients": 1, "file_reservations": 0}
    assert r["retired"] == ["srv-alpha.BlueLake", "srv-alpha.RedFox"]
    marks = {e: [x.data().get("retired_at") for x in dc.store.read(entity(e)).letters if x.kind == profiles.KIND]
             for e in ("srv-alpha.RedFox", "srv-alpha.BlueLake", "srv-alpha.GreenCastle")}
    # at its deleted_ts; with none, at its last activity (inactive is retired all the same)
    assert marks == {"srv-alpha.RedFox": ["2026-12-02T00:00:07Z"] * 2, "srv-alpha.BlueLake":
                     ["2026-12-02T00:01:00Z"] * 2, "srv-alpha.GreenCastle": [None, None]}
    letter = next(x.data() for x in dc.store.read(entity("srv-alpha.GreenCastle")).letters if x.kind == "message")
    assert letter["agentmail"]["topic"] is None and letter["routing"]["priority"] == "high"
    assert _ours(dc, "srv-alpha.GreenCastle") == {"messages": 1, "unread": 0, "ack_pending": 1}

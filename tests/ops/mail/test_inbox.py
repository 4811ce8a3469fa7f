"""The inbox audit: counts, flags, ordering, the three renderings, clocks, and the cold-call cache."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec.structs
import orjson
import pytest

from dovecote.cli.texts import inbox_injection as render_injection
from dovecote.cli.texts import inbox_text as render_text
from dovecote.errors import Refusal
from dovecote.handle.api import Actor, Dovecote, init
from dovecote.model.addresses import entity
from dovecote.model.results import builtins
from dovecote.roster import config as roster_mod
from dovecote.verbs import EntityAdd, Inbox, Message, Move
from helpers import open_home

pytestmark = pytest.mark.both_stores

DOVECOTE = Path(sys.executable).parent / "dovecote"


def home(tmp_path: Path) -> Dovecote:
    h, _ = init(tmp_path / ".dovecote", owner_root=str(tmp_path))
    dc = open_home(h)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    return dc


def send(dc: Dovecote, subject: str, **kw: Any) -> str:
    return dc.send(Message(sender="ent_a", recipient="ent_b", subject=subject, **kw)).id


def by_id(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in view["items"]}


def test_counts_cover_every_state(tmp_path: Path) -> None:
    dc = home(tmp_path)
    w = send(dc, "wait")
    a = send(dc, "active")
    d = send(dc, "deferred")
    done = send(dc, "done")
    n = send(dc, "nacked")
    dc.move(Move(kind="claim", entity_id="ent_b", ref=a))
    dc.move(Move(kind="defer", entity_id="ent_b", ref=d, until_tic=50, current_tic=10))
    for item in (done, n):
        dc.move(Move(kind="seen", entity_id="ent_b", ref=item))
    dc.move(Move(kind="claim", entity_id="ent_b", ref=done))
    dc.move(Move(kind="complete", entity_id="ent_b", ref=done))
    dc.move(Move(kind="nack", entity_id="ent_b", ref=n, reason="not mine"))
    dc.draft(Message(sender="ent_b", recipient="ent_a", subject="later"))
    view = builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=20)))
    assert view["counts"] == {"inbound": 1, "processing": 1, "deferred": 1, "outbound": 1, "archive": 2, "loose": 0}
    assert set(by_id(view)) == {w, a, d}  # terminal items are counted, not listed
    every = builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=20, include_terminal=True)))
    assert set(by_id(every)) == {w, a, d, done, n}


def test_flags_at_a_tic(tmp_path: Path) -> None:
    dc = home(tmp_path)
    stale = send(dc, "old", current_tic=100)
    fresh = send(dc, "new", current_tic=104)
    overdue = send(dc, "remind me", current_tic=104, reminder_tic=104)
    soon = send(dc, "expiring", current_tic=104, expires_at_tic=107)
    gone = send(dc, "expired", current_tic=104, expires_at_tic=105)
    rows = by_id(builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=106))))
    assert rows[stale]["flags"] == ["STALE"]  # 6 tics in WAIT > 5
    assert rows[stale]["age_tics"] == 6 and rows[stale]["in_state_tics"] == 6
    assert rows[fresh]["flags"] == []
    assert rows[overdue]["flags"] == ["OVERDUE REMINDER"]
    assert rows[soon]["flags"] == ["EXPIRING SOON"]
    assert rows[gone]["flags"] == ["EXPIRED"]
    at_105 = builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=105)))
    assert by_id(at_105)[stale]["flags"] == []  # exactly 5 is not stale


def test_the_stale_threshold_is_configurable(tmp_path: Path) -> None:
    dc = home(tmp_path)
    item = send(dc, "x", current_tic=100)
    limits = msgspec.structs.replace(dc.roster.limits, stale_tics=2)
    dc.layout.config.write_bytes(roster_mod.dump(msgspec.structs.replace(dc.roster, limits=limits)))
    dc = open_home(dc.layout.root)
    assert by_id(builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=103))))[item]["flags"] == ["STALE"]


def test_without_a_tic_staleness_falls_back_to_hours(tmp_path: Path) -> None:
    dc = home(tmp_path)
    item = send(dc, "x")
    now = datetime.now(UTC)
    row = by_id(builtins(dc.inbox(Inbox(entity_id="ent_b"), now=now + timedelta(hours=25))))[item]
    assert row["age_tics"] is None and row["age_hours"] == 25
    assert row["flags"] == ["STALE"]
    assert by_id(builtins(dc.inbox(Inbox(entity_id="ent_b"), now=now + timedelta(hours=23))))[item]["flags"] == []


def test_the_tic_comes_from_the_roster_source(tmp_path: Path) -> None:
    dc = home(tmp_path)
    tics = tmp_path / "audit-logs" / "tics"
    tics.mkdir(parents=True)
    (tics / "2026-07-01.jsonl").write_text('{"type":"tic","domain_counter_after":90}\n')
    (tics / "2026-07-02.jsonl").write_text(
        '{"type":"tic","domain_counter_after":111}\n{"type":"note"}\n{"type":"tic","domain_counter_after":112}\n'
        '{"type":"other","domain_counter_after":999}\n'
    )
    dc.layout.config.write_bytes(
        roster_mod.dump(msgspec.structs.replace(dc.roster, tic_source="audit-logs/tics"))
    )
    dc = open_home(dc.layout.root)
    view = builtins(dc.inbox(Inbox(entity_id="ent_b")))
    assert view["clock"] == {"tic": 112, "source": "roster"}
    assert builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=7)))["clock"] == {"tic": 7, "source": "flag"}


def test_items_are_ordered_by_priority_then_age(tmp_path: Path) -> None:
    dc = home(tmp_path)
    low_old = send(dc, "a", priority="low", current_tic=1)
    norm_new = send(dc, "b", priority="normal", current_tic=9)
    norm_old = send(dc, "c", priority="normal", current_tic=3)
    urgent = send(dc, "d", priority="urgent", current_tic=8)
    high = send(dc, "e", priority="high", current_tic=5)
    order = [r["id"] for r in builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=10)))["items"]]
    assert order == [urgent, high, norm_old, norm_new, low_old]


def test_text_injection_and_status_renderings(tmp_path: Path) -> None:
    dc = home(tmp_path)
    assert render_injection(builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=1)))) == "[INBOX: ent_b] Empty.\n"
    hi = send(dc, "server down", priority="high", current_tic=100)
    act = send(dc, "write notes", current_tic=101)
    dc.move(Move(kind="claim", entity_id="ent_b", ref=act, current_tic=102))
    send(dc, "fyi", current_tic=104, reminder_tic=104)
    view = builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=107)))
    assert render_injection(view) == (
        "[INBOX: ent_b] 2 new, 1 active, 0 deferred.\n"
        "  - [HIGH] server down (from: ent_a, tic 100)\n"
        "  - [ACTIVE] write notes (tic 102)\n"
        "  - [ATTENTION] server down — stale 7 tics in WAIT\n"
    )
    text = render_text(view)
    assert text.splitlines()[:8] == [
        "INBOX: ent_b — tic 107",
        "  Inbound:    2 (1 stale, 1 overdue)",
        "  Processing: 1",
        "  Deferred:   0",
        "  Outbound:   0 drafts",
        "  Archive:    0",
        "  Loose:      0 unorganized files",
        "",
    ]
    assert f'  [STALE] WAIT_{hi} — "server down" from ent_a (tic 100, 7 tics old)' in text
    assert "[OVERDUE] WAIT_" in text and "(reminder was tic 104)" in text
    status = render_text(view, status_only=True)
    assert status.count("\n") == 7 and "[STALE]" not in status
    detailed = render_text(view, detailed=True)
    assert f"ACTIVE_{act} [NORMAL]" in detailed


def test_loose_files_in_the_view_are_counted(tmp_path: Path) -> None:
    dc = home(tmp_path)
    inbound = dc.layout.views / "agent-mailboxes" / "ent_b" / "inbound"
    inbound.mkdir(parents=True)
    (inbound / "notes.md").write_text("hand drop")
    (inbound / "WAIT_0123456789ab").mkdir()  # a view-written name is not loose
    (inbound / ".hidden").write_text("x")
    assert builtins(dc.inbox(Inbox(entity_id="ent_b")))["counts"]["loose"] == 1


def test_direction_selects_the_lists(tmp_path: Path) -> None:
    dc = home(tmp_path)
    send(dc, "in")
    dc.draft(Message(sender="ent_b", recipient="ent_a", subject="out"))
    inbound = builtins(dc.inbox(Inbox(entity_id="ent_b")))
    assert "outbound" not in inbound and "items" in inbound
    assert "items" not in builtins(dc.inbox(Inbox(entity_id="ent_b", direction="outbound")))
    both = builtins(dc.inbox(Inbox(entity_id="ent_b", direction="both")))
    assert len(both["items"]) == 1 and len(both["outbound"]) == 1
    with pytest.raises(Refusal, match="invalid_field"):
        dc.inbox(Inbox(entity_id="ent_b", direction="sideways"))


def test_default_entity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dc = home(tmp_path)
    monkeypatch.setenv("DOVECOTE_ENTITY", "ent_a")  # the library never reads it: a face binds the actor
    with pytest.raises(Refusal, match="missing_field"):
        dc.inbox()
    assert builtins(dc.inbox(actor=Actor(entity="ent_a")))["entity"] == "ent_a"
    assert builtins(open_home(dc.layout.root, actor=Actor(entity="ent_a")).inbox())["entity"] == "ent_a"
    with pytest.raises(Refusal, match="unknown_entity"):
        dc.inbox(Inbox(entity_id="ent_zz"))


def test_a_warm_handle_answers_like_a_cold_one(tmp_path: Path) -> None:
    dc = home(tmp_path)
    for i in range(20):
        send(dc, f"m{i}", current_tic=i)
    now = datetime.now(UTC)
    first = builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=30), now=now))
    items = [r["id"] for r in first["items"]]
    dc.move(Move(kind="claim", entity_id="ent_b", ref=items[3]))
    dc.move(Move(kind="defer", entity_id="ent_b", ref=items[5], until_tic=40, current_tic=30))
    send(dc, "late", current_tic=29)
    warm = builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=30), now=now))
    cold = builtins(open_home(dc.layout.root).inbox(Inbox(entity_id="ent_b", current_tic=30), now=now))
    assert orjson.dumps(warm) == orjson.dumps(cold)
    assert warm != first


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "DOVECOTE_HOME": str(tmp_path / ".dovecote")}
    env.pop("DOVECOTE_ENTITY", None)
    return subprocess.run([str(DOVECOTE), *args], env=env, capture_output=True, cwd=tmp_path)


@pytest.mark.files_only
@pytest.mark.parametrize("fmt", ["json", "text", "injection"])
def test_the_cold_call_cache_is_exact_and_invalidated_by_any_new_letter(tmp_path: Path, fmt: str) -> None:
    dc = home(tmp_path)
    send(dc, "one", current_tic=1)
    args = ("inbox", "ent_b", "--format", fmt, "--current-tic", "9")
    first = run(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    cache = list((dc.layout.cache / "cli").iterdir())
    assert len(cache) == 1
    second = run(tmp_path, *args)
    assert second.stdout == first.stdout
    # a new letter changes the ledger's size: the cached rendering must not be served
    send(dc, "two", current_tic=2)
    third = run(tmp_path, *args)
    assert third.stdout != first.stdout and b"two" in third.stdout
    # the fast path must print exactly what the full path prints
    import shutil

    shutil.rmtree(dc.layout.cache)
    assert run(tmp_path, *args).stdout == third.stdout
    if fmt == "json":
        assert orjson.loads(third.stdout) == orjson.loads(orjson.dumps(builtins(dc.inbox(Inbox(
            entity_id="ent_b", current_tic=9
        )))))


def test_the_cache_never_serves_a_stale_roster_or_tic(tmp_path: Path) -> None:
    dc = home(tmp_path)
    send(dc, "one", current_tic=1)
    tics = tmp_path / "tics"
    tics.mkdir()
    (tics / "a.jsonl").write_text('{"type":"tic","tic":5}\n')
    dc.layout.config.write_bytes(roster_mod.dump(msgspec.structs.replace(dc.roster, tic_source=str(tics))))
    a = run(tmp_path, "inbox", "ent_b", "--format", "json")
    assert orjson.loads(a.stdout)["clock"]["tic"] == 5
    with (tics / "a.jsonl").open("a") as f:
        f.write('{"type":"tic","tic":6}\n')
    b = run(tmp_path, "inbox", "ent_b", "--format", "json")
    assert orjson.loads(b.stdout)["clock"]["tic"] == 6
    (tics / "b.jsonl").write_text('{"type":"tic","tic":7}\n')
    c = run(tmp_path, "inbox", "ent_b", "--format", "json")
    assert orjson.loads(c.stdout)["clock"]["tic"] == 7


@pytest.mark.files_only
def test_cli_inbox_status_and_refusals(tmp_path: Path) -> None:
    dc = home(tmp_path)
    send(dc, "one")
    res = run(tmp_path, "inbox", "ent_b", "status")
    assert res.returncode == 0 and res.stdout.decode().startswith("INBOX: ent_b")
    bad = run(tmp_path, "inbox", "ent_zz")
    assert bad.returncode == 2 and bad.stderr.startswith(b"Error: unknown_entity:")
    bad = run(tmp_path, "inbox", "../x")
    assert bad.returncode == 2 and bad.stderr.startswith(b"Error: invalid_name:")
    p = dc.store.path(entity("ent_b"))
    assert p is not None
    before = p.read_bytes()
    res = run(tmp_path, "claim", "ent_b", "ffffffffffff")
    assert res.returncode == 2 and res.stderr.startswith(b"Error: unknown_letter:")
    assert p.read_bytes() == before


@pytest.mark.files_only
def test_cli_lifecycle_round_trip(tmp_path: Path) -> None:
    dc = home(tmp_path)
    item = send(dc, "q", category="query")
    assert run(tmp_path, "seen", "ent_b", item[:6]).returncode == 0
    res = run(tmp_path, "claim", "ent_b", item, "--json")
    assert orjson.loads(res.stdout) | {"id": None} == {
        "id": None, "item": item, "kind": "claim", "from": "WAIT", "to": "ACTIVE"
    }
    res = run(tmp_path, "complete", "ent_b", item)
    assert res.returncode == 2 and b"response_required" in res.stderr
    reply = run(tmp_path, "send", "--from", "ent_b", "--to", "ent_a", "--subject", "a", "--reply-to", item,
                "--category", "response")
    assert reply.returncode == 0, reply.stderr
    assert run(tmp_path, "complete", "ent_b", item).returncode == 0
    done = orjson.loads(run(tmp_path, "inbox", "ent_b", "--format", "json", "--all").stdout)
    assert [r["state"] for r in done["items"]] == ["DONE"]


def test_stale_in_hours_means_more_than_the_threshold_to_the_second_even_on_a_warm_handle(tmp_path: Path) -> None:
    dc = home(tmp_path)
    item = send(dc, "x")
    created = datetime.fromisoformat(builtins(dc.inbox(Inbox(
        entity_id="ent_b"
    )))["items"][0]["created_at"].replace("Z", "+00:00"))
    before = builtins(dc.inbox(Inbox(entity_id="ent_b"), now=created + timedelta(hours=24)))
    assert by_id(before)[item]["flags"] == []  # exactly 24 h is not more than 24 h
    # the same warm handle
    after = builtins(dc.inbox(Inbox(entity_id="ent_b"), now=created + timedelta(hours=24, seconds=1)))
    assert by_id(after)[item]["flags"] == ["STALE"]
    assert by_id(after)[item]["in_state_hours"] == 24


def test_the_expiring_soon_window_is_the_roster_setting(tmp_path: Path) -> None:
    dc = home(tmp_path)
    item = send(dc, "x", current_tic=105, expires_at_tic=110)
    assert by_id(builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=106))))[item]["flags"] == []  # 4 tics left > 2
    limits = msgspec.structs.replace(dc.roster.limits, expiring_tics=4)
    dc.layout.config.write_bytes(roster_mod.dump(msgspec.structs.replace(dc.roster, limits=limits)))
    assert by_id(builtins(open_home(dc.layout.root).inbox(Inbox(
        entity_id="ent_b", current_tic=106
    ))))[item]["flags"] == ["EXPIRING SOON"]

"""``stale-check``: attention debt across every inbox, and at most one signal per entity per day."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec.structs
import orjson

from dovecote.handle.api import Dovecote
from dovecote.model.addresses import HOME, entity
from dovecote.model.letters import canonical_line
from dovecote.model.results import builtins
from dovecote.model.vocab import ENGINE_AGENT, REPORT_KINDS
from dovecote.ops.mail.stale import SIGNAL_KIND, signal_letter
from dovecote.verbs import Box, Inbox, Message, Move, StaleCheck, Sweep
from helpers import ledger_lines, rep, rewrite_roster, run_cli, snapshot
from searchhelpers import finish, mail_home, put_link, put_message

NOW = datetime(2026, 7, 5, 12, 0, tzinfo=UTC)
RESULT_KEYS = [
    "tic", "clock_source", "entities_checked", "entities_with_debt", "total_stale",
    "signals_emitted", "details", "unreachable",
]
DETAIL_KEYS = ["entity", "count", "by_state", "oldest", "ids", "truncated", "signal"]


def tic_home(tmp: Path) -> tuple[Dovecote, dict[str, str]]:
    """ent_a holds one item of every case at hand-picked tics; ent_b one fresh item; ent_c none.

    At tic 20 with the default threshold (more than 5 tics):
      m1  WAIT since 10       -> 10 tics, stale
      m2  WAIT since 16       ->  4, fresh
      m3  ACTIVE since 13     ->  7, stale
      m4  ACTIVE since 15     ->  5, fresh (not more than 5)
      m5  DEFER until 12      ->  reads WAIT since 12: 8, stale
      m6  DEFER until 50      ->  DEFER is never stale
      m7  DONE                ->  terminal, never stale
      m8  WAIT since 14       ->  6, stale
      m9  WAIT since 15       ->  5, fresh
    """
    dc = mail_home(tmp, "ent_a", "ent_b", "ent_c")

    def send(subject: str, tic: int, to: str = "ent_a") -> str:
        return dc.send(Message(recipient=to, sender="ent_x", subject=subject, current_tic=tic)).id

    m = {f"m{n}": send(f"item {n}", tic) for n, tic in ((1, 10), (2, 16), (3, 10), (4, 10), (5, 10), (6, 10), (7, 10),
                                                        (8, 14), (9, 15))}
    dc.move(Move(kind="claim", entity_id="ent_a", ref=m["m3"], current_tic=13))
    dc.move(Move(kind="claim", entity_id="ent_a", ref=m["m4"], current_tic=15))
    dc.move(Move(kind="defer", entity_id="ent_a", ref=m["m5"], current_tic=11, until_tic=12))
    dc.move(Move(kind="defer", entity_id="ent_a", ref=m["m6"], current_tic=11, until_tic=50))
    finish(dc, "ent_a", m["m7"], current=11)
    m["b1"] = send("fresh for b", 19, to="ent_b")
    return dc, m


def test_counts_at_a_given_tic_match_the_hand_computed_ones(tmp_path: Path) -> None:
    dc, m = tic_home(tmp_path)
    out = builtins(dc.stale_check(StaleCheck(current_tic=20), now=NOW))
    assert list(out) == RESULT_KEYS
    assert out["tic"] == 20 and out["clock_source"] == "flag"
    assert out["entities_checked"] == 3 and out["entities_with_debt"] == 1
    assert out["total_stale"] == 4 and out["signals_emitted"] == 0 and out["unreachable"] == []
    (d,) = out["details"]
    assert list(d) == DETAIL_KEYS
    assert d == {
        "entity": "ent_a",
        "count": 4,
        "by_state": {"WAIT": 3, "ACTIVE": 1},
        "oldest": {"id": m["m1"], "subject": "item 1", "state": "WAIT", "in_state_tics": 10},
        "ids": [m["m1"], m["m5"], m["m3"], m["m8"]],  # oldest first: 10, 8, 7, 6 tics
        "truncated": False,
        "signal": None,
    }
    assert orjson.loads(orjson.dumps(out)) == out


def test_the_same_items_at_a_later_tic(tmp_path: Path) -> None:
    dc, m = tic_home(tmp_path)
    out = builtins(dc.stale_check(StaleCheck(current_tic=26), now=NOW))
    # at 26: m1 16, m5 14, m3 13, m8 12, then m4 11, m9 11, m2 10 and b1 7 join; m6 is still deferred
    (a, b) = out["details"]
    assert a["entity"] == "ent_a" and a["count"] == 7
    assert a["by_state"] == {"WAIT": 5, "ACTIVE": 2}
    assert a["ids"][:4] == [m["m1"], m["m5"], m["m3"], m["m8"]]
    assert set(a["ids"][4:6]) == {m["m4"], m["m9"]}  # equal in tics: by the time each entered its state
    assert a["ids"][6] == m["m2"]
    assert b["entity"] == "ent_b" and b["ids"] == [m["b1"]]
    assert out["total_stale"] == 8 and out["entities_with_debt"] == 2


def test_the_threshold_comes_from_the_roster(tmp_path: Path) -> None:
    dc, m = tic_home(tmp_path)
    dc = rewrite_roster(dc, limits=msgspec.structs.replace(dc.roster.limits, stale_tics=7))
    (d,) = builtins(dc.stale_check(StaleCheck(current_tic=20), now=NOW))["details"]
    assert d["ids"] == [m["m1"], m["m5"]] and d["by_state"] == {"WAIT": 2, "ACTIVE": 0}


def test_a_defer_past_its_due_reads_as_wait_and_a_pending_one_never_stales(tmp_path: Path) -> None:
    dc, m = tic_home(tmp_path)
    (d,) = builtins(dc.stale_check(StaleCheck(current_tic=1000), now=NOW))["details"][:1]
    assert m["m6"] in d["ids"]  # due 50 passed long ago: WAIT since 50
    assert m["m7"] not in d["ids"]  # DONE
    undue = builtins(dc.stale_check(StaleCheck(current_tic=49), now=NOW))["details"][0]
    assert m["m6"] not in undue["ids"]


def test_the_tic_from_the_roster_tic_source(tmp_path: Path) -> None:
    dc, _ = tic_home(tmp_path)
    tics = tmp_path / "tics"
    tics.mkdir()
    (tics / "2026-07-04.jsonl").write_text('{"type": "tic", "tic": 90}\n')
    (tics / "2026-07-05.jsonl").write_text('{"type": "tic", "tic": 19}\n{"type": "tic", "tic": 20}\n')
    dc = rewrite_roster(dc, tic_source=str(tics))
    out = builtins(dc.stale_check(now=NOW))
    assert out["tic"] == 20 and out["clock_source"] == "roster" and out["total_stale"] == 4


def hours_home(tmp: Path) -> tuple[Dovecote, dict[str, str]]:
    """No tic anywhere: ages come from letter times. At NOW, with the default 24 hours:
      h1  WAIT since NOW-30h             -> stale, 30h
      h2  WAIT since NOW-24h             -> fresh (not more than 24)
      h3  WAIT since NOW-25h             -> stale, 25h
      h4  created NOW-100h, claimed NOW-26h -> ACTIVE, stale, 26h
      h5  created NOW-100h, claimed NOW-2h  -> ACTIVE, fresh
    """
    dc = mail_home(tmp, "ent_a")

    def ago(hours: int) -> str:
        return (NOW - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")

    h = {
        "h1": put_message(dc, "ent_a", "thirty", ts=ago(30)),
        "h2": put_message(dc, "ent_a", "twenty-four", ts=ago(24)),
        "h3": put_message(dc, "ent_a", "twenty-five", ts=ago(25)),
        "h4": put_message(dc, "ent_a", "old claimed long ago", ts=ago(100)),
        "h5": put_message(dc, "ent_a", "old claimed lately", ts=ago(100)),
    }
    put_link(dc, "ent_a", h["h4"], "claim", ts=ago(26))
    put_link(dc, "ent_a", h["h5"], "claim", ts=ago(2))
    return dc, h


def test_hours_mode_when_no_tic_is_known(tmp_path: Path) -> None:
    dc, h = hours_home(tmp_path)
    out = builtins(dc.stale_check(now=NOW))
    assert out["tic"] is None and out["clock_source"] == "none"
    (d,) = out["details"]
    assert d["count"] == 3 and d["by_state"] == {"WAIT": 2, "ACTIVE": 1}
    assert d["ids"] == [h["h1"], h["h4"], h["h3"]]  # 30h, 26h, 25h
    assert d["oldest"] == {"id": h["h1"], "subject": "thirty", "state": "WAIT", "in_state_hours": 30}


def test_hours_threshold_from_the_roster(tmp_path: Path) -> None:
    dc, h = hours_home(tmp_path)
    dc = rewrite_roster(dc, limits=msgspec.structs.replace(dc.roster.limits, stale_hours=25))
    (d,) = builtins(dc.stale_check(now=NOW))["details"]
    assert d["ids"] == [h["h1"], h["h4"]]


def test_an_item_without_a_tic_falls_back_to_hours_when_a_tic_is_known(tmp_path: Path) -> None:
    dc, h = hours_home(tmp_path)
    tic_item = dc.send(Message(recipient="ent_a", sender="ent_x", subject="counted in tics", current_tic=1)).id
    out = builtins(dc.stale_check(StaleCheck(current_tic=10), now=NOW))
    (d,) = out["details"]
    assert d["ids"] == [tic_item, h["h1"], h["h4"], h["h3"]]  # tic-aged first, then hour-aged
    assert d["oldest"] == {"id": tic_item, "subject": "counted in tics", "state": "WAIT", "in_state_tics": 9}


def test_ids_are_capped_at_50_and_say_so(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, "ent_a")
    made = [put_message(dc, "ent_a", f"n{n}", ts=f"2026-07-01T{n // 60:02d}:{n % 60:02d}:00Z") for n in range(55)]
    (d,) = builtins(dc.stale_check(now=NOW))["details"]
    assert d["count"] == 55 and len(d["ids"]) == 50 and d["truncated"] is True
    assert d["ids"] == made[:50]  # oldest first


def test_an_unreadable_box_is_named_not_counted_as_clean(tmp_path: Path) -> None:
    dc, _ = tic_home(tmp_path)
    path = dc.store.path(entity("ent_c"))
    assert path is not None
    path.mkdir(parents=True)  # a folder where the ledger file should be
    fresh = Dovecote(dc.layout.root)
    out = builtins(fresh.stale_check(StaleCheck(current_tic=20), now=NOW))
    assert out["unreachable"] == ["entity:ent_c"] and out["entities_checked"] == 2


# -- signals ------------------------------------------------------------------------------


def signals(dc: Dovecote) -> list[dict[str, Any]]:
    path = dc.store.path(HOME)
    assert path is not None
    return [d for d in map(orjson.loads, ledger_lines(path)) if d.get("kind") == "signal"]


def test_without_the_flag_nothing_is_written(tmp_path: Path) -> None:
    dc, _ = tic_home(tmp_path)
    before = snapshot(dc.layout.root)
    dc.stale_check(StaleCheck(current_tic=20), now=NOW)
    assert snapshot(dc.layout.root) == before


def test_a_signal_letter_per_entity_with_debt(tmp_path: Path) -> None:
    dc, m = tic_home(tmp_path)
    out = builtins(dc.stale_check(StaleCheck(current_tic=26, emit_signals=True), now=NOW))
    assert out["signals_emitted"] == 2
    sigs = signals(dc)
    assert [s["entity"] for s in sigs] == ["ent_a", "ent_b"]
    a = sigs[0]
    assert list(a) == ["ts", "agent", "kind", "what", "count", "day", "entity", "oldest", "signal"]  # canonical order
    assert a["ts"] == "2026-07-05T12:00:00Z" and a["agent"] == ENGINE_AGENT and a["signal"] == "inbox_attention_debt"
    assert a["day"] == "2026-07-05" and a["count"] == 7
    assert a["oldest"] == {"id": m["m1"], "subject": "item 1", "state": "WAIT", "in_state_tics": 16}
    assert a["what"] == f"ent_a has 7 stale inbox item(s) (5 WAIT, 2 ACTIVE); the oldest is {m['m1']}, 16 tics in WAIT."
    assert out["details"][0]["signal"] == {"id": dc.store.read(HOME).letters[0].id, "emitted": True}


def test_two_runs_on_one_day_emit_once_even_with_other_counts(tmp_path: Path) -> None:
    dc, _ = tic_home(tmp_path)
    first = builtins(dc.stale_check(StaleCheck(current_tic=20, emit_signals=True), now=NOW))
    assert first["signals_emitted"] == 1
    dc.send(Message(recipient="ent_a", sender="ent_x", subject="one more", current_tic=1))  # the count changes
    later = NOW + timedelta(hours=11)
    second = builtins(Dovecote(dc.layout.root).stale_check(StaleCheck(current_tic=20, emit_signals=True), now=later))
    assert second["details"][0]["count"] == 5 and second["signals_emitted"] == 0
    assert second["details"][0]["signal"] == {"id": first["details"][0]["signal"]["id"], "emitted": False}
    assert len(signals(dc)) == 1
    tomorrow = builtins(dc.stale_check(StaleCheck(current_tic=20, emit_signals=True), now=NOW + timedelta(days=1)))
    assert tomorrow["signals_emitted"] == 1
    assert [s["day"] for s in signals(dc)] == ["2026-07-05", "2026-07-06"]


def test_an_exact_replay_dedups_by_content(tmp_path: Path) -> None:
    dc, _ = tic_home(tmp_path)
    out = builtins(dc.stale_check(StaleCheck(current_tic=20, emit_signals=True), now=NOW))
    line = canonical_line(signal_letter(out["details"][0], "2026-07-05", "2026-07-05T12:00:00Z"))
    ((lid, appended),) = dc.store.append(HOME, [line])
    assert not appended and lid == out["details"][0]["signal"]["id"]
    assert len(signals(dc)) == 1


def test_concurrent_runs_in_two_processes_emit_once(tmp_path: Path) -> None:
    """Each process signs at another second (so content dedup cannot help) and scans slowly
    (so a check outside the lock would let every one of them append): only the CAS holds."""
    dc, _ = tic_home(tmp_path)
    go = tmp_path / "go"
    code = (
        "import os, sys, time\n"
        "from datetime import datetime, UTC\n"
        "import dovecote.ops.mail.stale as st\n"
        "from dovecote.handle.api import open_home\n"
        "scan = st.signals_on\n"
        "def slow(letters, day):\n"
        "    found = scan(letters, day)\n"
        "    time.sleep(0.3)\n"
        "    return found\n"
        "st.signals_on = slow\n"
        "dc = open_home(sys.argv[1])\n"
        "now = datetime(2026, 7, 5, 12, 0, int(sys.argv[3]), tzinfo=UTC)\n"
        "from dovecote.verbs import StaleCheck\n"
        "dc.stale_check(StaleCheck(current_tic=26), now=now)\n"  # fold before the race
        "while not os.path.exists(sys.argv[2]): time.sleep(0.001)\n"
        "print(dc.stale_check(StaleCheck(current_tic=26, emit_signals=True), now=now).signals_emitted)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(dc.layout.root), str(go), str(n)], stdout=subprocess.PIPE)
        for n in range(3)
    ]
    time.sleep(1.0)
    go.touch()
    emitted = [int(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(emitted) == 2 and sorted(emitted) in ([0, 0, 2], [0, 1, 1])
    sigs = signals(dc)
    assert sorted(s["entity"] for s in sigs) == ["ent_a", "ent_b"]  # once each, whoever won


def test_the_field_report_sweep_ignores_signal_letters(tmp_path: Path) -> None:
    dc, _ = tic_home(tmp_path)
    dc.report([rep("one real report", repo=None)])
    dc.distribute()
    dc.stale_check(StaleCheck(current_tic=26, emit_signals=True), now=NOW)
    assert len(signals(dc)) == 2
    sweep = dc.sweep(Sweep(distribute=False, include_all=True)).to_dict()
    assert sweep["total"] == 1 and sweep["open"] == 1
    assert [row["what"] for row in sweep["letters"]] == ["one real report"]
    home = dc.box(Box(address="home", include_all=True)).to_dict()
    assert home["total"] == 1
    cold = Dovecote(dc.layout.root).sweep(Sweep(distribute=False, include_all=True)).to_dict()
    assert cold["total"] == 1


# -- the command line ----------------------------------------------------------------------


def test_cli_stale_check(tmp_path: Path) -> None:
    dc, m = tic_home(tmp_path)
    home = dc.layout.root
    r = run_cli(tmp_path, "stale-check", "--current-tic", "20", "--json", home=home)
    assert r.returncode == 0, r.stderr
    out = orjson.loads(r.stdout)
    assert out["total_stale"] == 4 and out["details"][0]["ids"][0] == m["m1"]
    r = run_cli(tmp_path, "stale-check", "--current-tic", "20", home=home)
    assert r.returncode == 0
    text = r.stdout.decode()
    assert text.splitlines()[0] == "STALE-CHECK — tic 20 (flag): 4 stale item(s) in 1 of 3 inbox(es)"
    assert f"oldest {m['m1']} \"item 1\" 10 tics in WAIT" in text
    r1 = run_cli(tmp_path, "stale-check", "--current-tic", "20", "--emit-signals", "--json", home=home)
    r2 = run_cli(tmp_path, "stale-check", "--current-tic", "20", "--emit-signals", home=home)
    assert orjson.loads(r1.stdout)["signals_emitted"] == 1
    text = r2.stdout.decode()
    assert r2.returncode == 0 and "already sent today" in text and "signals emitted: 0" in text
    assert len(signals(dc)) == 1


def test_cli_refusals_exit_2_and_write_nothing(tmp_path: Path) -> None:
    dc, _ = tic_home(tmp_path)
    before = snapshot(dc.layout.root)
    r = run_cli(tmp_path, "stale-check", "--emit-signals", home=tmp_path / "nowhere")
    assert r.returncode == 2 and r.stderr.decode().startswith("Error: no_home:")
    r = run_cli(tmp_path, "stale-check", "--current-tic", "soon", home=dc.layout.root)
    assert r.returncode == 2 and r.stdout == b""
    assert snapshot(dc.layout.root) == before
    assert not (tmp_path / "nowhere").exists()


def test_signal_is_not_a_report_kind() -> None:
    assert SIGNAL_KIND == "signal" and SIGNAL_KIND not in REPORT_KINDS


def test_stale_check_and_the_inbox_flag_agree_to_the_second(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    item = dc.send(Message(recipient="ent_a", sender="ent_b", subject="quiet")).id
    created = datetime.fromisoformat(builtins(dc.inbox(Inbox(
        entity_id="ent_a"
    )))["items"][0]["created_at"].replace("Z", "+00:00"))
    for delta, stale in ((timedelta(hours=24), False), (timedelta(hours=24, seconds=1), True)):
        now = created + delta
        flagged = "STALE" in builtins(dc.inbox(Inbox(entity_id="ent_a"), now=now))["items"][0]["flags"]
        listed = [i for d in builtins(dc.stale_check(now=now))["details"] for i in d["ids"]]
        assert flagged is stale and (item in listed) is stale, delta

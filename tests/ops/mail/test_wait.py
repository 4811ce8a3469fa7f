"""``wait``: woken by new mail after a cursor, exit 1 on timeout, cheap while nothing arrives."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dovecote.errors import Refusal
from dovecote.handle.api import open_home
from dovecote.model.addresses import entity
from dovecote.model.letters import make_letter
from dovecote.model.results import builtins
from dovecote.ops.mail.wait import cursor_text, parse_cursor, position
from dovecote.store.memory import MemoryStore
from dovecote.verbs import Inbox, Move, Wait
from helpers import DOVECOTE_BIN, cli_env, cli_json, run_cli
from mailhelpers import ENTITY, SENDER, mail_home, send

ids = st.lists(st.integers(min_value=0, max_value=10**6), max_size=30, unique=True)


@given(ids)
def test_a_cursor_names_where_the_box_stood(ns: list[int]) -> None:
    letters = [make_letter({"kind": "message", "n": n}) for n in ns]
    index = {x.id: x for x in letters}
    for cut in range(len(letters) + 1):
        text = cursor_text(letters[:cut])
        assert parse_cursor(text)[0] == cut
        assert position(letters, index, text) == cut  # the box grew: what follows the cut is new


def test_a_cursor_from_a_replaced_box_is_found_by_id_or_reads_everything() -> None:
    a, b, c = (make_letter({"kind": "message", "n": n}) for n in range(3))
    old = cursor_text([a, b])
    rebuilt = [b, a, c]  # the same letters in another order (say, a merge)
    assert position(rebuilt, {x.id: x for x in rebuilt}, old) == 1
    other = [c]
    assert position(other, {c.id: c}, old) == 0


@pytest.mark.parametrize("text", ["", "x", "3", "0.abc", "-1.0123456789ab", "2.0123456789AB", "1.0123456789a",
                                  "٣.0123456789ab"])
def test_a_malformed_cursor_is_refused(text: str) -> None:
    with pytest.raises(Refusal) as e:
        parse_cursor(text)
    assert e.value.reason == "invalid_field"


def test_the_inbox_prints_the_cursor_wait_takes(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    assert builtins(dc.inbox(Inbox(entity_id=ENTITY)))["cursor"] == "0"
    first = send(dc, "one")
    cur = builtins(dc.inbox(Inbox(entity_id=ENTITY)))["cursor"]
    assert cur == f"1.{first}" == dc.inbox_cursor(ENTITY)
    second = send(dc, "two", priority="high")
    got = dc.wait(Wait(entity_id=ENTITY, after=cur, timeout=5))  # already there: no waiting
    assert not got.timed_out and [i["id"] for i in got.items] == [second]
    assert got.items[0]["subject"] == "two" and got.items[0]["priority"] == "high"
    assert got.cursor == dc.inbox_cursor(ENTITY)


def test_a_timeout_says_so_and_keeps_the_cursor(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    send(dc, "old")
    t0 = time.monotonic()
    got = dc.wait(Wait(entity_id=ENTITY, timeout=0.2))  # no --after: only what comes after now
    assert got.timed_out and got.items == [] and got.cursor == dc.inbox_cursor(ENTITY)
    assert time.monotonic() - t0 < 5


def test_only_a_message_wakes_it(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    mid = send(dc, "one")
    cur = dc.inbox_cursor(ENTITY)
    dc.move(Move(kind="seen", entity_id=ENTITY, ref=mid))  # a lifecycle letter is not new mail
    dc.hook("prompt", ENTITY, {"session_id": "s"})  # nor is a surfaced record
    assert dc.wait(Wait(entity_id=ENTITY, after=cur, timeout=0.2)).timed_out


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_a_send_from_another_thread_wakes_it(tmp_path: Path, kind: str) -> None:
    dc = mail_home(tmp_path)
    store = MemoryStore() if kind == "memory" else None
    waiter = open_home(dc.layout.root, store=store)
    sender = open_home(dc.layout.root, store=store)
    cur = waiter.inbox_cursor(ENTITY)
    timer = threading.Timer(0.3, lambda: send(sender, "late news"))
    timer.start()
    try:
        got = waiter.wait(Wait(entity_id=ENTITY, after=cur, timeout=10))
    finally:
        timer.join()
    assert [i["subject"] for i in got.items] == ["late news"]
    assert waiter.store.stamp(entity(ENTITY)) != (0, -1)


def test_a_wait_process_is_woken_by_a_send_process_within_a_second(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    home = dc.layout.root
    cur = cli_json(tmp_path, "inbox", ENTITY, "--json", home=home)["cursor"]
    waiter = subprocess.Popen(
        [str(DOVECOTE_BIN), "wait", ENTITY, "--after", cur, "--timeout", "30", "--json"],
        env=cli_env(tmp_path, home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        time.sleep(2.0)  # let it start watching, also on a loaded machine (the cursor makes an earlier send count too)
        r = run_cli(tmp_path, "send", "--to", ENTITY, "--from", SENDER, "--subject", "wake up", home=home)
        assert r.returncode == 0, r.stderr
        sent = time.monotonic()
        out, err = waiter.communicate(timeout=30)
        woke = time.monotonic() - sent
    finally:
        waiter.kill()
        waiter.wait()
    assert waiter.returncode == 0, err
    result = orjson.loads(out)
    assert [i["subject"] for i in result["items"]] == ["wake up"] and result["timed_out"] is False
    assert result["items"][0]["id"] == r.stdout.decode().strip()
    assert woke < 1.0, woke


def test_the_cli_exits_1_on_timeout_and_2_on_a_bad_cursor(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    home = dc.layout.root
    r = run_cli(tmp_path, "wait", ENTITY, "--timeout", "0.2", home=home)
    assert r.returncode == 1
    assert r.stdout.decode() == f"no new mail for {ENTITY} within 0.2s\ncursor 0\n"
    bad = run_cli(tmp_path, "wait", ENTITY, "--after", "nonsense", home=home)
    assert bad.returncode == 2 and b"invalid_field" in bad.stderr
    mid = send(dc, "hello", priority="urgent")
    r = run_cli(tmp_path, "wait", ENTITY, "--after", "0", home=home)
    assert r.returncode == 0
    assert r.stdout.decode() == f'WAIT_{mid} [URGENT] "hello" from {SENDER}\ncursor 1.{mid}\n'

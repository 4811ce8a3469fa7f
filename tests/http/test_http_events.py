"""Live events: the letter feed (``Dovecote.watch``/``poll``), its cursor, and /api/v1/events over a real
``dovecote serve``: a client that reconnects with Last-Event-ID gets every letter appended meanwhile, once."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from dovecote.errors import Refusal
from dovecote.handle import remote
from dovecote.handle.api import Dovecote, Principal
from dovecote.http.app import create_app
from dovecote.model.addresses import entity
from dovecote.model.results import builtins
from dovecote.ops.agents.feed import decode_cursor, encode_cursor
from dovecote.verbs import Message, Move
from helpers import DOVECOTE_BIN, cli_env, rep
from mailhelpers import SENDER, send
from serverhelpers import ENTITY, assert_error_shape, served_home, serving

pytestmark = pytest.mark.files_only

counts = st.dictionaries(st.text(min_size=1, max_size=30), st.integers(min_value=0, max_value=2**40), max_size=8)


@given(counts)
def test_a_cursor_reads_back_as_its_counts(c: dict[str, int]) -> None:
    token = encode_cursor(c)
    assert decode_cursor(token) == {k: v for k, v in c.items() if v}
    assert token.isascii() and "\n" not in token and ":" not in token


@given(st.text(max_size=80))
def test_any_other_text_is_refused_or_is_a_cursor(text: str) -> None:
    try:
        got = decode_cursor(text)
    except Refusal as r:
        assert r.reason == "invalid_field"
    else:
        assert all(isinstance(v, int) and v >= 0 for v in got.values())


def test_a_fresh_watch_starts_at_the_end_and_sees_each_new_letter_once(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    w = dc.watch()
    assert dc.poll(w) == []
    item = send(dc, "new one")
    dc.move(Move(kind="seen", entity_id=ENTITY, ref=item, current_tic=101))
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=item, current_tic=101))
    dc.report([rep(repo="atlas", what="late")], actor="p")
    events = builtins(dc.poll(w))
    assert [(e["box"], e["kind"]) for e in events] == [
        ("spool", "report"), (f"entity:{ENTITY}", "message"), (f"entity:{ENTITY}", "seen"),
        (f"entity:{ENTITY}", "claim"), (f"entity:{SENDER}", "sent")]  # a send also files the sender's record
    mail = events[1:4]
    assert {e["item"] for e in mail} == {item} and {e["state"] for e in mail} == {"ACTIVE"}  # the item's state now
    assert mail[0]["letter"] == item
    assert dc.poll(w) == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(["report", "mail", "seen"]), max_size=4), min_size=1, max_size=5),
       st.data())
def test_resuming_from_any_event_gives_exactly_the_letters_after_it(tmp_path_factory: pytest.TempPathFactory,
                                                                    batches: list[list[str]], data: Any) -> None:
    dc = served_home(tmp_path_factory.mktemp("feed"))
    w = dc.watch()
    seen: list[dict[str, Any]] = []
    n = 0
    for batch in batches:
        for what in batch:
            n += 1
            if what == "report":
                dc.report([rep(repo="atlas", what=f"r{n}")], actor="p")
            elif what == "mail":
                send(dc, f"m{n}")
            else:
                dc.report([rep(repo=None, what=f"h{n}")], actor="p")
                dc.distribute()
        seen += builtins(dc.poll(w))
    letters = [(e["box"], e["letter"]) for e in seen]
    assert len(letters) == len(set(letters))  # never twice
    if not seen:
        return
    k = data.draw(st.integers(min_value=0, max_value=len(seen) - 1))
    again = Dovecote(dc.layout.root)  # another process, in effect: a cold handle
    resumed = [(e["box"], e["letter"]) for e in builtins(again.poll(again.watch(seen[k]["id"])))]
    assert sorted(resumed) == sorted(letters[k + 1:])  # the same letters, none missed, none twice
    for box in {b for b, _ in resumed}:  # and each box's in ledger order (a resume reads box by box)
        assert [x for x in resumed if x[0] == box] == [x for x in letters[k + 1:] if x[0] == box]


def test_a_cursor_past_a_boxs_end_or_past_2_to_the_53_is_refused_before_the_stream_opens(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    held = len(dc.context.store.read(entity(ENTITY)).letters)
    forged = [encode_cursor(c) for c in ({f"entity:{ENTITY}": held + 1}, {"spool": 2**53 + 1}, {"home": 10**30})]
    for cursor in forged:  # the handle first: a cursor it took would open a stream that never ends here
        with pytest.raises(Refusal) as refused:
            dc.watch(cursor)
        assert refused.value.reason == "invalid_field"
    with TestClient(create_app(dc)) as c:
        for cursor in forged:
            assert_error_shape(c.get("/api/v1/events", headers={"Last-Event-ID": cursor}), 400, "invalid_field")
    assert dc.poll(dc.watch(dc.watch().cursor)) == []  # every box at its end: valid, and nothing new


def test_an_agents_stream_carries_its_own_box_alone_whatever_cursor_it_resumes_from(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    operator = remote.watch(dc, Principal(SENDER, "operator"), None)
    send(dc, "for the builder")
    dc.send(Message(recipient=SENDER, sender=ENTITY, subject="for ops", body="b", current_tic=100))
    dc.report([rep(repo="atlas", what="elsewhere")], actor="p")
    everything = builtins(dc.poll(operator))
    assert {e["box"] for e in everything} == {"spool", f"entity:{ENTITY}", f"entity:{SENDER}"}
    builder = Principal(ENTITY, "agent")
    for cursor in (encode_cursor({}), everything[0]["id"]):  # forged (from the start), and an operator's event id
        events = builtins(dc.poll(remote.watch(dc, builder, cursor)))
        assert events and {e["box"] for e in events} == {f"entity:{ENTITY}"}
        assert all(set(decode_cursor(e["id"])) == {f"entity:{ENTITY}"} for e in events)  # no other box's count
    agent = remote.watch(dc, Principal(SENDER, "agent"), encode_cursor({}))
    assert builtins(dc.poll(agent))[-1]["box"] == f"entity:{SENDER}"


def _read_events(url: str, want: int, headers: dict[str, str], got: list[dict[str, Any]],
                 timeout: float = 20.0) -> None:
    """Read ``want`` letter events from the stream into ``got``, then hang up."""
    with httpx.stream("GET", url + "/api/v1/events", headers=headers, timeout=timeout) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        event: dict[str, str] = {}
        for line in r.iter_lines():
            if line == "" and "data" in event:
                got.append({"sse_id": event["id"], **json.loads(event["data"])})
                event = {}
                if len(got) >= want:
                    return
            elif line and not line.startswith(":"):
                field, _, value = line.partition(": ")
                event[field] = value


def _cli(tmp: Path, home: Path, *args: str) -> None:
    r = subprocess.run([str(DOVECOTE_BIN), *args], env=cli_env(tmp, home), capture_output=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr.decode()


def test_serve_resumes_with_last_event_id_across_a_reconnect(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    home = dc.layout.root
    with serving(tmp_path, home) as server:
        first: list[dict[str, Any]] = []
        reader = threading.Thread(target=_read_events, args=(server.url, 4, {}, first))
        reader.start()
        time.sleep(1.0)  # the stream is open and at the end of every box
        _cli(tmp_path, home, "send", "--to", ENTITY, "--from", SENDER, "--subject", "one", "--body", "b")
        _cli(tmp_path, home, "send", "--to", ENTITY, "--from", SENDER, "--subject", "two", "--body", "b")
        reader.join(30)
        assert sorted(e["kind"] for e in first) == ["message", "message", "sent", "sent"]  # two sends
        assert all(e["sse_id"] == e["id"] for e in first)
        assert [e["state"] for e in first if e["kind"] == "message"] == ["WAIT", "WAIT"]
        # Disconnected: another process appends to three boxes meanwhile.
        _cli(tmp_path, home, "send", "--to", ENTITY, "--from", SENDER, "--subject", "three", "--body", "b")
        dc.report([rep(repo="atlas", what="while away")], actor="p")
        dc.send(Message(recipient="ent_ops", sender=ENTITY, subject="four", body="b", current_tic=100))
        later: list[dict[str, Any]] = []
        _read_events(server.url, 5, {"Last-Event-ID": first[-1]["sse_id"]}, later)
        assert sorted((e["box"], e["kind"]) for e in later) == [
            ("entity:ent_builder", "message"), ("entity:ent_builder", "sent"), ("entity:ent_ops", "message"),
            ("entity:ent_ops", "sent"), ("spool", "report")]
        assert not {e["letter"] for e in later} & {e["letter"] for e in first}
        # And nothing more: a resume from the newest id waits (keep-alives only) until a new letter lands.
        last: list[dict[str, Any]] = []
        t = threading.Thread(target=_read_events, args=(server.url, 1, {"Last-Event-ID": later[-1]["sse_id"]}, last))
        t.start()
        time.sleep(1.0)
        assert last == []
        _cli(tmp_path, home, "send", "--to", ENTITY, "--from", SENDER, "--subject", "five", "--body", "b")
        t.join(30)
        assert len(last) == 1 and last[0]["kind"] == "message"

"""REST writes (in process, over Starlette's TestClient): each route is its verb, the token's entity is the actor,
what a route refuses changes nothing, and the long-poll wait answers as ``dovecote wait`` without holding the
handle's worker."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from dovecote.handle.api import Dovecote
from dovecote.http import inputs
from dovecote.model.results import builtins
from dovecote.verbs import Inbox, Message, MoveKind, Show
from serverhelpers import ENTITY, SENDER, assert_error_shape, served_home

pytestmark = pytest.mark.files_only


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return served_home(tmp_path)


def bearer(dc: Dovecote, entity: str, role: str = "agent") -> dict[str, str]:
    return {"Authorization": f"Bearer {dc.token_issue(entity, role).token}"}


def ledgers(dc: Dovecote) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in dc.layout.root.rglob("*.jsonl") if p.name != "tokens.jsonl"}


def items(dc: Dovecote, entity: str = ENTITY) -> dict[str, dict[str, Any]]:
    return {i["id"]: i for i in builtins(dc.inbox(Inbox(entity_id=entity, include_terminal=True)))["items"]}


def test_a_send_is_durable_when_it_answers_201_with_the_new_letters_id(client: TestClient, dc: Dovecote) -> None:
    r = client.post(f"/api/v1/entities/{ENTITY}/messages", headers=bearer(dc, SENDER),
                    json={"subject": "over REST", "body": "b", "priority": "high", "idempotency_key": "k1"})
    assert r.status_code == 201, r.text
    got = r.json()
    assert got["to"] == ENTITY and got["from"] == SENDER and got["appended"] is True
    item = items(dc)[got["id"]]  # another read of the ledger: it is there
    assert (item["subject"], item["priority"], item["sender"]) == ("over REST", "high", SENDER)
    again = client.post(f"/api/v1/entities/{ENTITY}/messages", headers=bearer(dc, SENDER),
                        json={"subject": "over REST", "body": "b", "priority": "high", "idempotency_key": "k1"})
    assert again.status_code == 201 and again.json()["id"] == got["id"] and again.json()["appended"] is False


def test_the_body_may_repeat_the_paths_recipient_but_not_name_another(client: TestClient, dc: Dovecote) -> None:
    same = client.post(f"/api/v1/entities/{ENTITY}/messages", headers=bearer(dc, SENDER),
                       json={"recipient": ENTITY, "subject": "s"})
    assert same.status_code == 201
    before = ledgers(dc)
    other = client.post(f"/api/v1/entities/{ENTITY}/messages", headers=bearer(dc, SENDER),
                        json={"recipient": SENDER, "subject": "s"})
    assert "path says" in assert_error_shape(other, 400, "invalid_field")["detail"]
    assert ledgers(dc) == before


BAD_SENDS: list[tuple[Any, int, str]] = [
    ({"subject": "s", "colour": "red"}, 400, "unknown_field"),
    ({"subject": "s", "priority": "asap"}, 400, "invalid_field"),
    ({"subject": "s", "current_tic": "1"}, 400, "invalid_field"),  # strict: no text for a number
    ({"body": "no subject"}, 400, "missing_field"),
    ({"subject": "s", "body_file": "/etc/passwd"}, 403, "server_file"),
    ({"subject": "s", "artifact_paths": ["/etc/passwd"]}, 403, "server_file"),
    ({"subject": "s", "sender": "ent_someone_else"}, 403, "forbidden"),
    (b"{not json", 400, "invalid_json"),
    (b"[1, 2]", 400, "invalid_json"),
    (b"x" * (inputs.MAX_BODY + 1), 413, "too_large"),
]


@pytest.mark.parametrize(("body", "status", "reason"), BAD_SENDS)
def test_a_refused_send_is_the_error_shape_and_writes_nothing(client: TestClient, dc: Dovecote, body: Any,
                                                              status: int, reason: str) -> None:
    headers = bearer(dc, SENDER)
    before = ledgers(dc)
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    r = client.post(f"/api/v1/entities/{ENTITY}/messages", headers={**headers, "Content-Type": "application/json"},
                    content=content)
    assert_error_shape(r, status, reason)
    assert ledgers(dc) == before


def test_a_body_over_the_limit_is_refused_as_it_streams_without_a_length(client: TestClient, dc: Dovecote) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(inputs.MAX_BODY // 65536 + 2):
            yield b" " * 65536

    r = client.post(f"/api/v1/entities/{ENTITY}/messages", headers=bearer(dc, SENDER), content=chunks())
    assert_error_shape(r, 413, "too_large")


def test_a_write_without_a_token_is_refused_on_loopback_and_a_read_is_not(client: TestClient, dc: Dovecote) -> None:
    before = ledgers(dc)
    r = client.post(f"/api/v1/entities/{ENTITY}/messages", json={"subject": "s"})
    assert "Bearer" in assert_error_shape(r, 401, "unauthorized")["detail"]
    assert ledgers(dc) == before
    assert client.get(f"/api/v1/entities/{ENTITY}/inbox").status_code == 200
    assert_error_shape(client.get("/api/v1/doctor", headers={"Authorization": "Bearer dct_made_up"}), 401,
                       "unauthorized")


@pytest.mark.parametrize("kind", list(MoveKind))
def test_every_move_is_a_route_and_the_tokens_entity_is_its_actor(client: TestClient, dc: Dovecote,
                                                                  kind: MoveKind) -> None:
    own = bearer(dc, ENTITY)
    ref = client.post(f"/api/v1/entities/{ENTITY}/messages", headers=bearer(dc, SENDER),
                      json={"subject": f"for {kind}", "current_tic": 100}).json()["id"]
    # Bring the item to where the move applies: complete needs ACTIVE and seen, undefer a DEFER.
    setup = {"complete": [("seen", {}), ("claim", {})], "undefer": [("defer", {"until_tic": 500})],
             "nack": [("seen", {})], "unseen": [("seen", {})]}.get(kind.value, [])
    for step, options in setup:
        assert client.post(f"/api/v1/entities/{ENTITY}/items/{ref}/{step}", headers=own, json=options).is_success
    options = {"defer": {"until_tic": 900, "reason": "later"}, "nack": {"reason": "not mine"},
               "complete": {"result_ref": "r1"}}.get(kind.value, {})
    r = client.post(f"/api/v1/entities/{ENTITY}/items/{ref}/{kind}", headers=own, json=options)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["kind"] == kind.value and got["item"] == ref
    want = {"claim": "ACTIVE", "complete": "DONE", "defer": "DEFER", "undefer": "WAIT", "nack": "NACK",
            "seen": "WAIT", "unseen": "WAIT"}[kind.value]
    assert items(dc)[ref]["state"] == want
    assert items(dc)[ref]["seen"] is (kind.value in ("seen", "nack", "complete"))  # unseen: unread again
    shown = builtins(dc.show(Show(entity_id=ENTITY, ref=ref)))
    assert shown["history"][-1]["agent"] == ENTITY


def test_a_move_takes_only_its_own_options_and_the_path_names_the_move(client: TestClient, dc: Dovecote) -> None:
    own = bearer(dc, ENTITY)
    ref = next(iter(items(dc)))
    before = ledgers(dc)
    assert_error_shape(client.post(f"/api/v1/entities/{ENTITY}/items/{ref}/claim", headers=own,
                                   json={"until_tic": 5}), 400, "invalid_field")
    assert_error_shape(client.post(f"/api/v1/entities/{ENTITY}/items/{ref}/claim", headers=own,
                                   json={"kind": "nack"}), 400, "invalid_field")
    assert_error_shape(client.post(f"/api/v1/entities/{ENTITY}/items/{ref}/resurface", headers=own, json={}),
                       400, "invalid_field")
    assert_error_shape(client.post(f"/api/v1/entities/{ENTITY}/items/{ref}/defer", headers=own, json={}),
                       400, "no_due")
    assert ledgers(dc) == before


def test_an_agent_moves_only_in_its_own_box_and_an_operator_anywhere(client: TestClient, dc: Dovecote) -> None:
    ref = next(iter(items(dc)))
    before = ledgers(dc)
    r = client.post(f"/api/v1/entities/{ENTITY}/items/{ref}/claim", headers=bearer(dc, SENDER), json={})
    assert_error_shape(r, 403, "forbidden")
    assert ledgers(dc) == before
    r = client.post(f"/api/v1/entities/{ENTITY}/items/{ref}/claim", headers=bearer(dc, "ops", "operator"))
    assert r.status_code == 200 and items(dc)[ref]["state"] == "ACTIVE"


def test_a_report_is_filed_by_the_tokens_entity(client: TestClient, dc: Dovecote) -> None:
    r = client.post("/api/v1/reports", headers=bearer(dc, ENTITY),
                    json={"tool": "seek", "class": "bug", "what": "it fell over", "repo": "atlas"})
    assert r.status_code == 201, r.text
    (filed,) = r.json()["letters"]
    assert filed["appended"] is True
    line = next(orjson.loads(x) for x in dc.layout.spool.read_bytes().splitlines() if b"it fell over" in x)
    assert line["agent"] == ENTITY
    as_other = client.post("/api/v1/reports", headers=bearer(dc, ENTITY),
                           json={"tool": "t", "class": "bug", "what": "w", "agent": "someone"})
    assert_error_shape(as_other, 403, "forbidden")
    assert_error_shape(client.post("/api/v1/reports", headers=bearer(dc, ENTITY), json={"tool": "t"}), 400,
                       "missing_field")


def test_distribute_files_the_spool_and_a_rerun_files_nothing(client: TestClient, dc: Dovecote) -> None:
    dc.report([{"ts": "2026-07-06T00:00:00Z", "agent": "p", "tool": "t", "class": "win", "what": "w", "repo": "atlas"}])
    assert client.get("/api/v1/sweep?box=spool").json()["letters"]
    first = client.post("/api/v1/distribute", headers=bearer(dc, ENTITY))
    assert first.status_code == 200 and first.json()["appended"] == 1, first.text
    assert client.get("/api/v1/sweep?box=spool").json()["letters"] == []
    again = client.post("/api/v1/distribute", headers=bearer(dc, ENTITY), json={})
    assert again.json()["appended"] == 0 and again.json()["spool_total"] == first.json()["spool_total"]
    assert_error_shape(client.post("/api/v1/distribute", headers=bearer(dc, ENTITY), json={"x": 1}), 400,
                       "unknown_field")


def test_a_draft_waits_in_the_outbox_until_its_sender_sends_it(client: TestClient, dc: Dovecote) -> None:
    own = bearer(dc, SENDER)
    d = client.post(f"/api/v1/entities/{ENTITY}/drafts", headers=own, json={"subject": "drafted"})
    assert d.status_code == 201, d.text
    assert "drafted" not in {i["subject"] for i in items(dc).values()}
    assert client.post("/api/v1/outbox", headers=bearer(dc, ENTITY), json={}).json() == {"sent": []}  # not its own
    assert_error_shape(client.post("/api/v1/outbox", headers=bearer(dc, ENTITY), json={"sender": SENDER}), 403,
                       "forbidden")
    sent = client.post("/api/v1/outbox", headers=own).json()["sent"]
    assert len(sent) == 1 and "drafted" in {i["subject"] for i in items(dc).values()}


# -- the long poll -------------------------------------------------------------------------


def test_wait_times_out_with_the_cursor_and_a_later_letter_after_it_is_answered(client: TestClient,
                                                                                dc: Dovecote) -> None:
    t0 = time.monotonic()
    quiet = client.get(f"/api/v1/entities/{ENTITY}/wait?timeout=0.3").json()
    assert quiet["timed_out"] is True and quiet["items"] == [] and time.monotonic() - t0 >= 0.3
    assert quiet["cursor"] == dc.inbox_cursor(ENTITY)
    late = dc.send(Message(recipient=ENTITY, sender=SENDER, subject="after the cursor", current_tic=100)).id
    got = client.get(f"/api/v1/entities/{ENTITY}/wait?timeout=5&after={quiet['cursor']}").json()
    assert got["timed_out"] is False and [i["id"] for i in got["items"]] == [late]
    assert client.get(f"/api/v1/entities/{ENTITY}/wait?timeout=0&after={got['cursor']}").json()["items"] == []


def test_a_waiting_request_holds_no_worker_and_wakes_on_a_send(client: TestClient, dc: Dovecote) -> None:
    answers: list[dict[str, Any]] = []
    waiter = threading.Thread(target=lambda: answers.append(
        client.get(f"/api/v1/entities/{ENTITY}/wait?timeout=20").json()))
    waiter.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    assert client.get("/api/v1/doctor").status_code == 200  # the handle's worker is free while the wait waits
    r = client.post(f"/api/v1/entities/{ENTITY}/messages", headers=bearer(dc, SENDER), json={"subject": "wake"})
    assert time.monotonic() - t0 < 5 and r.status_code == 201
    waiter.join(timeout=10)
    assert answers and [i["subject"] for i in answers[0]["items"]] == ["wake"] and not answers[0]["timed_out"]


def test_wait_is_the_verbs_refusals_and_an_agent_waits_only_on_its_own_box(client: TestClient,
                                                                           dc: Dovecote) -> None:
    assert_error_shape(client.get(f"/api/v1/entities/{ENTITY}/wait?timeout=301"), 400, "invalid_field")
    assert_error_shape(client.get(f"/api/v1/entities/{ENTITY}/wait?after=nonsense&timeout=0"), 400, "invalid_field")
    assert_error_shape(client.get("/api/v1/entities/ent_nobody/wait?timeout=0"), 404, "unknown_entity")
    assert_error_shape(client.get(f"/api/v1/entities/{ENTITY}/wait?timeout=0", headers=bearer(dc, SENDER)), 403,
                       "forbidden")

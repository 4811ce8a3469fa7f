"""Delivery over REST (issue 9): tasks and acks from agent tokens, a broadcast, and the operator's intake,
mailman pass, presence and status, each the handle's answer, each refusal writing nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from deliveryhelpers import AGENTS, box_letters, delivery_home, drop, envelope, intake_files
from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from serverhelpers import assert_error_shape

pytestmark = pytest.mark.files_only

API = "/api/v1"


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return delivery_home(tmp_path)


def bearer(dc: Dovecote, entity: str, role: str = "agent") -> dict[str, str]:
    return {"Authorization": f"Bearer {dc.token_issue(entity, role).token}"}


def test_a_task_sent_over_rest_is_tracked_and_only_its_recipient_acks_it_once(
        client: TestClient, dc: Dovecote) -> None:
    aya, tariq = bearer(dc, "aya"), bearer(dc, "tariq")
    r = client.post(f"{API}/entities/tariq/messages", headers=aya, json={
        "type": "task", "work_item_id": "wi-7", "subject": "review the plan", "task_type": "architecture-review",
        "acceptance_criteria": ["a diagram"], "ack_timeout": 600})
    assert r.status_code == 201, r.text
    sent = r.json()
    assert sent["type"] == "task" and sent["from"] == "aya" and [d["to"] for d in sent["deliveries"]] == [
        "tariq"]
    delivery = sent["deliveries"][0]["id"]
    (letter,) = [x for x in box_letters(dc, "tariq") if x.get("kind") == "task"]
    assert (letter["task_type"], letter["acceptance_criteria"]) == ("architecture-review", ["a diagram"])
    assert letter["ack_policy"]["ack_timeout_s"] == 600

    mine = client.get(f"{API}/trackers", headers=tariq).json()  # an agent's trackers are its own deliveries
    assert [(t["delivery_id"], t["ack_state"]) for t in mine["trackers"]] == [(delivery, "pending")]
    assert client.get(f"{API}/trackers", headers=aya).json()["total"] == 0

    assert_error_shape(client.post(f"{API}/entities/tariq/acks", headers=aya, json={"ref": delivery}), 403,
                       "forbidden")
    acked = client.post(f"{API}/entities/tariq/acks", headers=tariq, json={"ref": delivery})
    assert acked.status_code == 201 and acked.json()["ack_state"] == "acked", acked.text
    before = box_letters(dc, "tariq")
    again = client.post(f"{API}/entities/tariq/acks", headers=tariq, json={"ref": delivery, "status": "rejected"})
    assert_error_shape(again, 409, "already_acked")
    assert box_letters(dc, "tariq") == before
    assert client.get(f"{API}/trackers", headers=tariq).json()["trackers"][0]["ack_state"] == "acked"


def test_a_broadcast_goes_to_every_entity_but_the_sender_and_the_path_route_refuses_it(
        client: TestClient, dc: Dovecote) -> None:
    aya = bearer(dc, "aya")
    body = {"to_all": True, "type": "task", "work_item_id": "wi-9", "subject": "standup"}
    refused = client.post(f"{API}/entities/tariq/messages", headers=aya, json=body)
    assert_error_shape(refused, 400, "invalid_field")
    assert builtins(dc.trackers())["total"] == 0
    r = client.post(f"{API}/messages", headers=aya, json=body)
    assert r.status_code == 201, r.text
    assert sorted(d["to"] for d in r.json()["deliveries"]) == sorted(a for a in AGENTS if a != "aya")


def test_a_response_field_on_a_task_is_refused_and_writes_nothing(client: TestClient, dc: Dovecote) -> None:
    r = client.post(f"{API}/entities/tariq/messages", headers=bearer(dc, "aya"), json={
        "type": "task", "work_item_id": "wi-7", "subject": "s", "blocker_flag": True})
    assert_error_shape(r, 400, "invalid_field")
    assert box_letters(dc, "tariq") == []


def test_the_operator_runs_one_mailman_pass_and_intake_over_rest(client: TestClient, dc: Dovecote) -> None:
    operator, agent = bearer(dc, "arbiter", "operator"), bearer(dc, "aya")
    drop(dc, envelope(to="kimi"))
    assert_error_shape(client.post(f"{API}/mailman", headers=agent, json={}), 403, "forbidden")
    assert_error_shape(client.post(f"{API}/mailman", headers=operator, json={"loop": True}), 400, "invalid_field")
    assert_error_shape(client.post(f"{API}/mailman", headers=operator, json={"dir": "/etc"}), 403, "server_file")
    assert_error_shape(client.post(f"{API}/intake", headers=operator, json={"dir": "/tmp"}), 403, "server_file")
    assert len(intake_files(dc, "pending")) == 1 and box_letters(dc, "kimi") == []  # the refusals wrote nothing
    r = client.post(f"{API}/mailman", headers=operator, json={})
    assert r.status_code == 200, r.text
    assert r.json()["intake"]["processed"] == 1 and [x["kind"] for x in box_letters(dc, "kimi")][:1] == ["task"]
    again = client.post(f"{API}/intake", headers=operator, json={}).json()
    assert (again["seen"], again["processed"]) == (0, 0)


def test_status_is_the_operators_and_presence_answers_anyone(client: TestClient, dc: Dovecote) -> None:
    operator, agent = bearer(dc, "arbiter", "operator"), bearer(dc, "aya")
    client.post(f"{API}/entities/tariq/messages", headers=agent, json={
        "type": "task", "work_item_id": "wi-7", "subject": "s"})
    assert_error_shape(client.get(f"{API}/status", headers=agent), 403, "forbidden")
    status = client.get(f"{API}/status", headers=operator).json()
    assert status == builtins(dc.status()) | {"ts": status["ts"]}
    assert status["tracker_counts"]["pending_ack"] == 1 and status["work"]["tasks"] == 1

    assert_error_shape(client.post(f"{API}/presence/beats", headers=agent, json={"agent": "aya"}), 403, "forbidden")
    beat = client.post(f"{API}/presence/beats", headers=operator, json={"agent": "kimi", "session": "s-1"})
    assert beat.status_code == 201, beat.text
    rows = {a["agent"]: a for a in client.get(f"{API}/presence", headers=agent).json()["agents"]}
    assert rows["kimi"]["recently_active"] and rows["kimi"]["session"] == "s-1"
    assert not rows["aya"]["recently_active"] and rows["aya"]["status"] != "online"

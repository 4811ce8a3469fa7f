"""REST under /api/v1 (in process, over Starlette's TestClient): the answers are the handle's, and every
failure is the one error shape with the status of its keyword."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from dovecote.errors import StoreError
from dovecote.handle.api import Dovecote
from dovecote.http import openapi, rest
from dovecote.http.app import create_app
from dovecote.model.results import builtins
from dovecote.verbs import Box, EntityAdd, Inbox, Message, Search, Sweep
from serverhelpers import ENTITY, assert_error_shape, served_home

pytestmark = pytest.mark.files_only


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return served_home(tmp_path)


def same(data: Any) -> Any:
    """``data`` as it travels as JSON."""
    return orjson.loads(orjson.dumps(builtins(data)))


def test_boxes_counts_every_box_the_roster_names(client: TestClient, dc: Dovecote) -> None:
    got = client.get("/api/v1/boxes").json()["boxes"]
    assert [b["box"] for b in got] == ["home", "project:atlas", f"entity:{ENTITY}", "entity:ent_ops"]
    atlas = got[1]
    direct = dc.box(Box(address="project:atlas")).to_dict()
    assert (atlas["total"], atlas["open"], atlas["counts"], atlas["held"]) == (
        direct["total"], direct["open"], direct["counts"], direct["held"])
    assert atlas["open"] == 3 and atlas["counts"]["in_flight"] == 1 and atlas["reachable"] is True
    assert "letters" not in atlas


@pytest.mark.parametrize(("url", "call"), [
    ("/api/v1/boxes/project:atlas", lambda dc: dc.box(Box(address="project:atlas")).to_dict()),
    ("/api/v1/boxes/project:atlas?include_all=true",
     lambda dc: dc.box(Box(address="project:atlas", include_all=True)).to_dict()),
    ("/api/v1/entities", lambda dc: dc.entities()),
    ("/api/v1/projects", lambda dc: dc.projects()),
    (f"/api/v1/entities/{ENTITY}/inbox?current_tic=101", lambda dc: dc.inbox(Inbox(entity_id=ENTITY, current_tic=101))),
    (f"/api/v1/entities/{ENTITY}/inbox?current_tic=101&direction=both&include_terminal=true",
     lambda dc: dc.inbox(Inbox(entity_id=ENTITY, current_tic=101, direction="both", include_terminal=True))),
    ("/api/v1/search?query=rebuild", lambda dc: dc.search(Search(query="rebuild"))),
    ("/api/v1/doctor", lambda dc: dc.doctor()),
])
def test_a_route_answers_what_the_handle_answers(client: TestClient, dc: Dovecote, url: str, call: Any) -> None:
    r = client.get(url)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    got, want = r.json(), same(call(dc))
    if url.endswith("/doctor") or "/inbox" in url:  # ages and the doctor's clock move between the two reads
        got, want = _without_clock(got), _without_clock(want)
    assert got == want


def _without_clock(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _without_clock(v) for k, v in d.items() if k not in ("age_hours", "in_state_hours")}
    if isinstance(d, list):
        return [_without_clock(v) for v in d]
    return d


def test_an_item_is_show_by_entity_and_ref(client: TestClient, dc: Dovecote) -> None:
    item = builtins(dc.inbox(Inbox(entity_id=ENTITY)))["items"][0]["id"]
    got = client.get(f"/api/v1/entities/{ENTITY}/items/{item[:8]}?current_tic=101").json()
    assert got["item"]["id"] == item and got["body"] == "body of index rebuild failed"
    assert [h["kind"] for h in got["history"]] == ["seen"]


def test_sweep_reads_without_distributing_and_filters_by_fate_box_and_class(client: TestClient, dc: Dovecote) -> None:
    dc.report([{"ts": "2026-07-06T00:00:00Z", "agent": "p", "tool": "t", "class": "win", "what": "w", "repo": "atlas"}])
    spool_before = dc.layout.spool.read_bytes()
    box_before = dc.store.read(dc.report_boxes()[1]).letters
    everything = client.get("/api/v1/sweep").json()
    assert everything["distribution"] is None and dc.layout.spool.read_bytes() == spool_before
    assert len(dc.store.read(dc.report_boxes()[1]).letters) == len(box_before)  # nothing was filed
    pending = client.get("/api/v1/sweep?box=spool").json()["letters"]
    assert [row["class"] for row in pending] == ["win"] and pending[0]["box"] is None
    flight = client.get("/api/v1/sweep?fate=in_flight").json()
    assert [r["fate"] for r in flight["letters"]] == ["in_flight"]
    assert flight["filter"] == {"fate": "in_flight", "box": None, "class": None, "all": False}
    clay = client.get("/api/v1/sweep?fate=fired_clay").json()
    assert clay["filter"]["all"] is True  # closed fates are only in the whole list
    bugs = client.get("/api/v1/sweep?box=project:atlas&class=bug").json()["letters"]
    assert len(bugs) == 2 and {r["box"] for r in bugs} == {"project:atlas"}
    assert everything["total"] == dc.sweep(Sweep(distribute=False)).total


def _boom(*_: Any, **__: Any) -> Any:
    raise RuntimeError("a bug")


def _store_down(*_: Any, **__: Any) -> Any:
    raise StoreError("disk unplugged")


ERRORS = [
    ("/api/v1/sweep?colour=red", 400, "unknown_field"),
    ("/api/v1/sweep?fate=soggy", 400, "invalid_field"),
    ("/api/v1/sweep?all=perhaps", 400, "invalid_field"),
    ("/api/v1/sweep?fate=wet_ink&fate=in_flight", 400, "invalid_field"),
    ("/api/v1/boxes?x=1", 400, "unknown_field"),
    ("/api/v1/boxes/nowhere", 400, "invalid_address"),
    ("/api/v1/boxes/project:..", 400, "invalid_name"),
    (f"/api/v1/entities/{ENTITY}/inbox?current_tic=-1", 400, "invalid_field"),
    (f"/api/v1/entities/{ENTITY}/inbox?current_tic=soon", 400, "invalid_field"),
    (f"/api/v1/entities/{ENTITY}/inbox?direction=up", 400, "invalid_field"),
    ("/api/v1/entities/ent_nobody/inbox", 404, "unknown_entity"),
    (f"/api/v1/entities/{ENTITY}/items/ffffffffffff", 404, "unknown_letter"),
    ("/api/v1/search", 400, "missing_field"),
    ("/api/v1/search?query=", 400, "invalid_field"),
    ("/api/v1/search?query=x&limit=0", 400, "invalid_field"),
    ("/api/v1/search?query=x&entity_id=ent_nobody", 404, "unknown_entity"),
    ("/api/v1/doctor?verbose=1", 400, "unknown_field"),
    ("/api/v1/no-such-route", 404, "not_found"),
    ("/openapi.json?x=1", 400, "unknown_field"),
]


@pytest.mark.parametrize(("url", "status", "reason"), ERRORS)
def test_every_refusal_is_the_error_shape(client: TestClient, dc: Dovecote, url: str, status: int,
                                          reason: str) -> None:
    before = {p: p.read_bytes() for p in dc.layout.root.rglob("*.jsonl")}
    assert_error_shape(client.get(url), status, reason)
    assert {p: p.read_bytes() for p in dc.layout.root.rglob("*.jsonl")} == before


def test_a_wrong_method_is_the_error_shape(client: TestClient) -> None:
    assert_error_shape(client.post("/api/v1/boxes", json={}), 405, "method_not_allowed")
    assert_error_shape(client.delete("/api/v1/doctor"), 405, "method_not_allowed")


def test_a_bad_event_cursor_is_refused_before_the_stream_opens(client: TestClient) -> None:
    for bad in ("not a cursor!", "e30x", "WyJsaXN0Il0", "eyJob21lIjotMX0"):  # junk, junk, a list, a negative count
        assert_error_shape(client.get("/api/v1/events", headers={"Last-Event-ID": bad}), 400, "invalid_field")


@pytest.mark.parametrize(("fault", "status", "reason"),
                         [(_store_down, 503, "io_error"), (_boom, 500, "internal_error")])
def test_a_store_failure_and_a_bug_are_the_error_shape_too(dc: Dovecote, monkeypatch: pytest.MonkeyPatch,
                                                           fault: Any, status: int, reason: str) -> None:
    monkeypatch.setattr(Dovecote, "doctor", fault)
    with TestClient(create_app(dc), raise_server_exceptions=False) as c:
        body = assert_error_shape(c.get("/api/v1/doctor"), status, reason)
        assert "Traceback" not in body["detail"]
        page = c.get("/")  # the overview reads the doctor too: a page, never a traceback
        assert page.status_code == status and reason in page.text and "Traceback" not in page.text


def test_openapi_lists_every_route_with_its_parameters(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    ops = {(m.upper(), p): op for p, item in doc["paths"].items() for m, op in item.items()}
    assert {(r.method, "/api/v1" + r.template) for r in rest.ROUTES} | {("GET", "/api/v1/events")} == set(ops)
    sweep = ops[("GET", "/api/v1/sweep")]
    params = {p["name"]: p for p in sweep["parameters"]}
    assert set(params) == {"fate", "box", "class", "all"}
    assert sorted(params["fate"]["schema"]["enum"]) == sorted(rest.FATES) and params["fate"]["in"] == "query"
    item = {p["name"]: p for p in ops[("GET", "/api/v1/entities/{entity_id}/items/{ref}")]["parameters"]}
    assert item["entity_id"]["in"] == item["ref"]["in"] == "path" and item["entity_id"]["required"]
    assert set(item) == {"entity_id", "ref", "current_tic"}  # the verb's fields: Show, not a copy of it
    send = ops[("POST", "/api/v1/entities/{recipient}/messages")]
    assert [p["name"] for p in send["parameters"]] == ["recipient"]
    body = send["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["subject"] and "recipient" not in body["properties"]
    assert not {"body_file", "artifact_paths"} & set(body["properties"])  # a remote caller names no server file
    assert sweep["responses"]["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")
    assert set(doc["components"]["schemas"]["ErrorBody"]["required"]) == {"ok", "error", "reason", "detail", "status"}
    assert doc == openapi.document()


def test_an_entity_added_by_another_process_is_served_at_once(client: TestClient, dc: Dovecote) -> None:
    w = client.get("/api/v1/entities").json()
    other = Dovecote(dc.layout.root)  # another process, in effect
    other.add_entity(EntityAdd(entity_id="ent_late", role="reviewer"))
    assert client.get("/api/v1/entities").json() == [*w, {"id": "ent_late", "role": "reviewer"}]
    assert client.get("/api/v1/entities/ent_late/inbox").json()["counts"]["inbound"] == 0
    watch = dc.watch()
    other.send(Message(recipient="ent_late", sender="ent_ops", subject="welcome", body="b", current_tic=100))
    dc.refresh()
    assert sorted((e["box"], e["kind"]) for e in builtins(dc.poll(watch))) == [("entity:ent_late", "message"),
                                                                     ("entity:ent_ops", "sent")]

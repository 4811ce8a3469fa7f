"""Schemathesis over /openapi.json: whatever a client sends that the schema allows (or nearly allows), the
server never answers 5xx, and every 4xx is the one error shape. Bounded: a few examples per route."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from starlette.testclient import TestClient

from dovecote.errors import REASONS
from dovecote.http.app import create_app
from dovecote.http.openapi import document
from serverhelpers import ENTITY, SENDER, SHAPE, served_home

pytestmark = pytest.mark.files_only

# The document the server serves (test_http_rest checks /openapi.json is this). The event stream never
# ends by design; its one refusal is checked in test_http_rest. The long poll waits up to its timeout by
# design (test_http_writes checks it).
schema = schemathesis.openapi.from_dict(document()).exclude(operation_id=["events", "wait"])


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    dc = served_home(tmp_path)
    token = dc.token_issue(SENDER, "operator").token  # so the writes are tried past the door too
    with TestClient(create_app(dc), headers={"Authorization": f"Bearer {token}"}) as c:
        yield c


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_route_answers_5xx_and_every_4xx_is_the_error_shape(case: Any, client: TestClient) -> None:
    kwargs = case.as_transport_kwargs(base_url="http://testserver")
    headers = {k: v for k, v in (kwargs.get("headers") or {}).items() if k.lower() != "authorization"}
    body = {"json": kwargs["json"]} if "json" in kwargs else {"content": kwargs.get("data")}
    response = client.request(kwargs["method"], kwargs["url"], params=kwargs.get("params"),
                              headers=headers, **body)  # the API reads no cookie
    _check(response)


# -- stateful: the links between routes (a send's id read and moved, a posted mission read) ----------------------

def _check(response: Any) -> None:
    """No 5xx, every 4xx the one error shape with its keyword's status, every success JSON."""
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        body = response.json()
        assert set(body) >= SHAPE and body["ok"] is False and body["status"] == response.status_code
        assert body["reason"] in REASONS and REASONS[body["reason"]][0] == response.status_code
    else:
        assert response.status_code in (200, 201) and response.headers["content-type"] == "application/json"


def test_the_schema_links_a_send_to_its_item_and_a_mission_post_to_its_mission() -> None:
    doc = document()
    links = doc["paths"]["/api/v1/entities/{recipient}/messages"]["post"]["responses"]["201"]["links"]
    assert {v["operationId"] for v in links.values()} == {"item", "move"}
    ops = {op["operationId"] for path in doc["paths"].values() for op in path.values()}
    assert {v["operationId"] for path in doc["paths"].values() for op in path.values()
            for r in op["responses"].values() for v in r.get("links", {}).values()} <= ops


#: The quick run walks the send links (the inbox beside them); the deep one (make stress) every route.
LINKED = ["send", "item", "move", "inbox"]


@pytest.mark.parametrize("depth", [pytest.param(10, id="quick"),
                                   pytest.param(150, id="deep", marks=[pytest.mark.stress, pytest.mark.deep])])
def test_stateful_sequences_never_answer_5xx_and_every_4xx_is_the_error_shape(tmp_path: Path, depth: int) -> None:
    walked = schema.include(operation_id=LINKED) if depth < 100 else schema
    dc = served_home(tmp_path)
    token = dc.token_issue(SENDER, "operator").token
    steps: list[tuple[str, int]] = []
    with TestClient(create_app(dc), headers={"Authorization": f"Bearer {token}"}) as client:

        class Machine(walked.as_state_machine()):  # type: ignore[misc]
            def before_call(self, case: Any) -> None:
                """Sends go to a registered entity with a plain subject, so their links have an item to follow
                (a random recipient or body is a 4xx the stateless test already covers)."""
                if case.operation.definition.raw.get("operationId") == "send":
                    case.path_parameters = {**(case.path_parameters or {}), "recipient": ENTITY}
                    case.body = {"subject": "stateful", "body": "b"}

            def call(self, case: Any, **kwargs: Any) -> Any:
                from schemathesis.core.transport import Response

                sent = case.as_transport_kwargs(base_url="http://testserver")
                headers = {k: v for k, v in (sent.get("headers") or {}).items() if k.lower() != "authorization"}
                body = {"json": sent["json"]} if "json" in sent else {"content": sent.get("data")}
                r = client.request(sent["method"], sent["url"], params=sent.get("params"), headers=headers, **body)
                steps.append((case.operation.definition.raw.get("operationId", "?"), r.status_code))
                _check(r)
                return Response.from_any(r)

            def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
                """``call`` checked it (the one shape, as the stateless test checks)."""

        Machine.run(settings=settings(max_examples=depth, stateful_step_count=6, deadline=None, database=None,
                                      suppress_health_check=list(HealthCheck)))
    followed = {name for name, status in steps if name in ("item", "move", "mission") and status < 300}
    print(f"schemathesis stateful ({depth} sequences): {len(steps)} requests, links followed to {sorted(followed)}")
    assert len(steps) >= depth
    assert {"item", "move"} <= followed, steps  # the links were followed, not only random requests made

"""Schemathesis over /openapi.json: whatever a client sends that the schema allows (or nearly allows), the
server never answers 5xx, and every 4xx is the one error shape. Bounded: a few examples per route."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig
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
    assert {v["operationId"] for v in links.values()} == {"item", "move", "inbox"}
    ops = {op["operationId"] for path in doc["paths"].values() for op in path.values()}
    assert {v["operationId"] for path in doc["paths"].values() for op in path.values()
            for r in op["responses"].values() for v in r.get("links", {}).values()} <= ops


@dataclass
class Step:
    """One request of a sequence: its route, its status, and the route whose answer a link took it from."""

    name: str
    status: int
    via: str | None  # None: a first request (its parameters generated, not taken from an answer)


def _chain(steps: list[Step], path: list[str]) -> bool:
    """Whether some 2xx request of each route of ``path`` came by a link from a 2xx of the route before it."""
    ok = {(s.name, s.via) for s in steps if s.status < 300}
    return all((b, a) in ok for a, b in pairwise(path))


#: The stateful runs follow the document's own links only: schemathesis's inferred ones guess fields
#: (``entity_id``, ``case_id``) that the untyped answers (``type: object``) do not have, so none ever applies.
linked_schema = schemathesis.openapi.from_dict(document(), config=SchemathesisConfig.from_dict(
    {"phases": {"stateful": {"inference": {"algorithms": []}}}})).exclude(operation_id=["events", "wait"])

#: The quick run walks the mail links (the entities list, a send, its item, a move, the inbox); the deep one
#: (make stress) every route.
LINKED = ["entities", "send", "item", "move", "inbox"]


@pytest.mark.parametrize("depth", [pytest.param(10, id="quick"),
                                   pytest.param(150, id="deep", marks=[pytest.mark.stress])])
def test_stateful_sequences_follow_the_links_and_never_answer_5xx(tmp_path: Path, depth: int) -> None:
    walked = linked_schema.include(operation_id=LINKED) if depth < 100 else linked_schema
    dc = served_home(tmp_path)
    token = dc.token_issue(SENDER, "operator").token
    steps: list[Step] = []
    with TestClient(create_app(dc), headers={"Authorization": f"Bearer {token}"}) as client:

        class Machine(walked.as_state_machine()):  # type: ignore[misc]
            def _via(self, case: Any) -> str | None:
                """The route whose answer this request's link parameters came from (None: none applied)."""
                node = self.recorder.cases.get(case.id)
                if node is None or node.parent_id is None or not node.is_transition_applied:
                    return None
                return str(self.recorder.cases[node.parent_id].value.operation.definition.raw["operationId"])

            def before_call(self, case: Any) -> None:
                """A send has a plain subject and body, and a first send goes to a registered entity (a link's
                recipient is kept), so its links have an item to follow; a random recipient or body is a 4xx
                the stateless test already covers."""
                if case.operation.definition.raw.get("operationId") == "send":
                    if self._via(case) is None:
                        case.path_parameters = {**(case.path_parameters or {}), "recipient": ENTITY}
                    case.body = {"subject": "stateful", "body": "b"}

            def call(self, case: Any, **kwargs: Any) -> Any:
                from schemathesis.core.transport import Response

                sent = case.as_transport_kwargs(base_url="http://testserver")
                headers = {k: v for k, v in (sent.get("headers") or {}).items() if k.lower() != "authorization"}
                body = {"json": sent["json"]} if "json" in sent else {"content": sent.get("data")}
                r = client.request(sent["method"], sent["url"], params=sent.get("params"), headers=headers, **body)
                steps.append(Step(case.operation.definition.raw.get("operationId", "?"), r.status_code,
                                  self._via(case)))
                _check(r)
                return Response.from_any(r)

            def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
                """``call`` checked it (the one shape, as the stateless test checks)."""

        if depth < 100:  # the quick run starts where a client starts, at the entity list: a random move (a root
            # to schemathesis, being a POST) is a 404 the stateless test covers, and would take most of the steps
            for name in Machine.root_rules - {n for n in Machine.root_rules if n.endswith("_GET_api_v1_entities")}:
                setattr(Machine, name, None)
        # in CI the sequences are derandomized (as the fuzz is): a run proven green stays green
        Machine.run(settings=settings(max_examples=depth, stateful_step_count=8, deadline=None, database=None,
                                      derandomize=bool(os.environ.get("CI")), suppress_health_check=list(HealthCheck)))
    linked = Counter(f"{s.via}->{s.name}" for s in steps if s.via is not None and s.status < 300)
    print(f"schemathesis stateful ({depth} sequences): {len(steps)} requests, "
          f"{Counter(s.status for s in steps)}; 2xx by a link: {dict(linked)}")
    assert len(steps) >= depth
    # the links were followed, not only random requests made: a sent message read by its id, then moved
    assert _chain(steps, ["send", "item", "move"]) or _chain(steps, ["send", "move"]), steps
    assert _chain(steps, ["send", "item"]) and _chain(steps, ["move", "inbox"]), steps

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
from serverhelpers import SENDER, SHAPE, served_home

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
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        body = response.json()
        assert set(body) >= SHAPE and body["ok"] is False and body["status"] == response.status_code
        assert body["reason"] in REASONS and REASONS[body["reason"]][0] == response.status_code
    else:
        assert response.status_code in (200, 201) and response.headers["content-type"] == "application/json"

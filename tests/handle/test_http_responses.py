"""Every REST route's answer validates against the response schema the OpenAPI document gives it.

The schemas are generated from the handle's result types (``rest.ROUTES``' ``response``), so a result
that grows a key or changes a type without its type saying so fails here, in process, on the demo home.
Each route is called once with the demo's own names (an entity, an item, a box, a case); the writes by
an operator token (the server's loopback without one reads only).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from starlette.testclient import TestClient
from test_verb_json import demo_home

from dovecote import verbs
from dovecote.handle.api import Dovecote
from dovecote.http import openapi, rest
from dovecote.http.app import create_app
from dovecote.model.results import builtins

#: The demo's names a path or a body takes (an item and a case are looked up, see ``_names``).
NAMES = {"entity_id": "ent_builder", "recipient": "ent_ops", "address": "project:atlas", "kind": "seen",
         "block_id": "sb_alpha", "mission_id": "msn_0123456789ab"}
#: The JSON bodies of the writes: each one the demo home accepts (or refuses in the one error shape).
BODIES: dict[str, dict[str, Any]] = {
    "send_all": {"recipient": "ent_ops", "subject": "typed", "sender": "ent_builder"},
    "ack": {"ref": "{ref}", "status": "accepted"},
    "presence_beat": {"agent": "ent_builder"},
    "send": {"subject": "typed", "sender": "ent_builder"},
    "draft": {"subject": "typed", "sender": "ent_builder"},
    "report": {"agent": "ent_builder", "repo": "atlas", "tool": "seek", "class": "bug", "what": "typed"},
    "receipt": {"answers": ["{case_letter}"], "disposition": "fixed", "agent": "ent_builder"},
    "monitor_add": {"name": "nightly", "every_minutes": 60},
    "hook_event": {"event": "stop", "payload": {"session_id": "s1"}},
    "block_add": {"project": "atlas"},
    "block_bump": {"project": "atlas"},
}
#: The query of a read that needs one.
QUERIES = {"search": "?query=seek&include_terminal=true"}
#: Routes left out: the long poll waits out its timeout, and the server's files are refused on this face.
SKIP = {"wait", "intake", "mailman"}


#: The routes whose answer the OpenAPI still gives as any JSON object: their handle calls answer a value whose
#: JSON its own ``to_dict`` writes (not its fields), or plain data. Each typed result takes its route off.
OPEN = {"box", "distribute", "intake", "mailman", "send", "send_all", "sweep"}


def test_the_answers_are_typed_in_the_openapi() -> None:
    """A typed answer's schema names its fields (a ``$ref`` to its component), never only "an object"."""
    doc = openapi.document()

    def declared(route: rest.Route) -> dict[str, Any]:
        answers = doc["paths"][openapi.API + route.template][route.method.lower()]["responses"]
        out: dict[str, Any] = answers[str(route.status)]["content"]["application/json"]["schema"]
        return out

    untyped = {r.name for r in rest.ROUTES if declared(r) in ({"type": "object"},
                                                               {"type": "array", "items": {"type": "object"}})}
    assert untyped == OPEN


def _names(dc: Dovecote) -> dict[str, str]:
    inbox = builtins(dc.inbox(verbs.Inbox(entity_id="ent_builder", include_terminal=True)))
    cases = builtins(dc.cases())["cases"]
    swept = builtins(dc.sweep(verbs.Sweep(distribute=False, include_all=True)))
    return {**NAMES, "ref": inbox["items"][0]["id"], "fingerprint": cases[0]["fingerprint"],
            "case_letter": swept["letters"][0]["id"]}


def _fill(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return re.sub(r"{(\w+)}", lambda m: names[m.group(1)], value)
    if isinstance(value, list):
        return [_fill(v, names) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, names) for k, v in value.items()}
    return value


def test_every_route_answers_what_its_schema_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dc = demo_home(tmp_path, monkeypatch)
    names = _names(dc)
    token = dc.token_issue("ent_ops", "operator").token
    doc = openapi.document()
    checked = []
    with TestClient(create_app(dc), headers={"Authorization": f"Bearer {token}"}) as client:
        for route in rest.ROUTES:
            if route.name in SKIP:
                continue
            path = re.sub(r"{(\w+)(?::\w+)?}", lambda m: names[m.group(1)], route.path)
            if route.body:
                r = client.post(openapi.API + path, json=_fill(BODIES.get(route.name, {}), names))
            else:
                r = client.get(openapi.API + path + QUERIES.get(route.name, ""))
            answers = doc["paths"][openapi.API + route.template][route.method.lower()]["responses"]
            assert str(r.status_code) in answers, (route.name, r.status_code, r.text)
            schema = answers[str(r.status_code)]["content"]["application/json"]["schema"]
            jsonschema.validate(r.json(), {**schema, "components": doc["components"]})
            checked.append((route.name, r.status_code, r.text[:200]))
    ok = [name for name, status, _ in checked if status < 300]
    # the reads all answer on the demo home: their schemas are what is checked, not an error's
    assert {r.name for r in rest.ROUTES if not r.body and r.name not in SKIP} - {"mission"} <= set(ok), checked

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
import msgspec
import pytest
from starlette.testclient import TestClient
from test_verb_json import demo_home

from dovecote import verbs
from dovecote.handle import api
from dovecote.handle.api import Dovecote
from dovecote.http import openapi, rest
from dovecote.http.app import create_app
from dovecote.model.results import builtins
from dovecote.verbs.delivery import SendType

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
#: Routes left out: the long poll waits out its timeout (intake and the mailman run on the home's own folder).
SKIP = {"wait"}


#: The routes whose answer the OpenAPI gives as any JSON object: none (a value whose JSON its own ``to_dict``
#: writes declares the Struct that describes that JSON, ``test_each_rich_answer_is_its_declared_shape...``).
OPEN: set[str] = set()


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


def _same_bytes(kind: type[msgspec.Struct], data: Any) -> None:
    """``data`` decodes as ``kind`` and encodes back to the very bytes: the type says every key, in order."""
    assert msgspec.json.encode(msgspec.convert(data, kind)) == msgspec.json.encode(data), kind.__name__


def test_each_rich_answer_is_its_declared_shape_byte_for_byte(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep, a box, a distribution, intake, a mailman pass and a work send write their JSON in their own
    ``to_dict``: the type their route and tool declare must describe exactly those keys, in that order."""
    dc = demo_home(tmp_path, monkeypatch)
    dc.report([{"tool": "seek", "class": "bug", "what": "typed", "repo": "nowhere"}], actor="ent_builder")
    _same_bytes(api.DistributionAnswer, dc.distribute().to_dict())
    for every in (False, True):
        _same_bytes(api.SweepAnswer, dc.sweep(verbs.Sweep(distribute=False, include_all=every)).to_dict())
    _same_bytes(api.SweepAnswer, dc.sweep(verbs.Sweep(distribute=True)).to_dict())
    for address in ("home", "project:atlas", "entity:ent_builder", "project:nowhere"):
        _same_bytes(api.BoxAnswer, dc.box(verbs.Box(address=address, include_all=True)).to_dict())
    sent = dc.send(verbs.Send(type=SendType.task, recipient="ent_ops", subject="typed", sender="ent_builder",
                                 work_item_id="wi_typed"))
    _same_bytes(api.SentAnswer, sent.to_dict())
    _same_bytes(api.SentAnswer, dc.send(verbs.Send(to_all=True, subject="all", sender="ent_builder")).to_dict())
    (intake := dc.layout.root / "intake" / "pending").mkdir(parents=True, exist_ok=True)
    (intake / "bad.json").write_text("{")
    _same_bytes(api.IntakeAnswer, dc.intake().to_dict())
    (one,) = dc.mailman(passes=1)
    _same_bytes(api.PassAnswer, one.to_dict())

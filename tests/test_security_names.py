"""Path tricks and look-alikes in every name and address, on REST and MCP: refused with a keyword, nothing written.

One table names each argument that names something (entity, recipient, box address, ref, mission id, project)
with the REST request and the MCP call that carry it. Each hostile value (``../``, absolute paths, NUL, an
overlong name, mixed case, NFC/NFD variants, Cyrillic and full-width look-alikes, zero-width and bidi
characters, the engine's reserved name) goes through both faces as an operator: every answer is a 4xx in the
one error shape (``isError`` with a keyword on MCP), never a 2xx naming another box; and no file changes,
inside the home or anywhere else under the test's directory. The engine's agent name cannot be registered,
hold a token, or be used as the author of a send.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from starlette.testclient import TestClient

from dovecote import verbs
from dovecote.api import Principal
from dovecote.errors import REASONS, Refusal
from dovecote.http.app import create_app
from dovecote.mcp.server import Face
from dovecote.mcp.tools import TOOLS
from dovecote.vocab import ENGINE_AGENT
from helpers import snapshot
from serverhelpers import ENTITY, SENDER, assert_error_shape, served_home

pytestmark = pytest.mark.files_only

HOSTILE = (
    "../ent_ops", "..", "/etc/passwd", "a\x00b", "x" * 300, "ent_builder/../ent_ops", "entity:../../x",
    ENTITY.upper(), "Ent_Builder", "ent_buil\u0434er", "\uff45nt_builder", "ent_builder\u200b", "\u202eent_builder",
    "caf\u00e9", "cafe\u0301", ENGINE_AGENT, "entity:" + ENGINE_AGENT, "home/../entity:ent_ops", "project:../atlas",
    "msn_../../x", ".", "~", "%2e%2e", "\\..\\x",
)

#: argument -> (REST method, path template, JSON body or None; MCP tool, its arguments). ``{v}`` is the value.
TABLE: dict[str, tuple[str, str, dict[str, Any] | None, str, dict[str, Any]]] = {
    "entity": ("GET", "/entities/{v}/inbox", None, "inbox", {"entity_id": "{v}"}),
    "recipient": ("POST", "/entities/{v}/messages", {"subject": "s"}, "send", {"recipient": "{v}", "subject": "s"}),
    "address": ("GET", "/boxes/{v}", None, "box", {"address": "{v}"}),
    "ref": ("GET", f"/entities/{ENTITY}/items/{{v}}", None, "show", {"entity_id": ENTITY, "ref": "{v}"}),
    "mission_id": ("GET", "/missions/{v}", None, "missions", {"view": "mission", "mission_id": "{v}"}),
    "block": ("POST", "/blocks/{v}/bumps", {"project": "atlas"}, "missions", {"view": "blocks"}),
    "project": ("POST", "/blocks", {"block_id": "sb_new", "project": "{v}"}, "missions", {"project": "{v}"}),
}


def _fill(value: Any, v: str) -> Any:
    if isinstance(value, str):
        return value.replace("{v}", v)
    if isinstance(value, dict):
        return {k: _fill(x, v) for k, x in value.items()}
    return value


def _mcp(face: Face, name: str, args: dict[str, Any]) -> Any:
    async def call() -> Any:
        return await face.call(TOOLS[name], Principal(SENDER, "operator"), args)

    try:
        return anyio.run(call)
    except Refusal as r:
        return r


@pytest.mark.parametrize("argument", sorted(TABLE))
def test_path_tricks_and_look_alikes_are_refused_on_rest_and_mcp_and_write_nothing(tmp_path: Path,
                                                                                   argument: str) -> None:
    dc = served_home(tmp_path)
    token = dc.token_issue(SENDER, "operator").token
    method, template, body, tool, args = TABLE[argument]
    before = snapshot(tmp_path)
    face = Face(dc)
    with TestClient(create_app(dc), headers={"Authorization": f"Bearer {token}"}) as client:
        for v in HOSTILE:
            if v not in (".", "..") or "{v}" not in template:  # a client resolves a dot segment (RFC 3986)
                path = "/api/v1" + template.replace("{v}", quote(v, safe=""))
                r = client.request(method, path, json=_fill(body, v) if body is not None else None)
                assert 400 <= r.status_code < 500, (argument, v, r.status_code, r.text)
                assert_error_shape(r, r.status_code)
            got = _mcp(face, tool, _fill(args, v))
            if argument != "block":  # the blocks view takes no name: only REST carries a block id
                assert isinstance(got, Refusal) and got.reason in REASONS, (argument, v, got)
    after = snapshot(tmp_path)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)
                     and "/cache/" not in k and not k.endswith("tokens.json"))
    assert not changed, changed


def test_the_engines_agent_name_is_reserved_on_every_door(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    for attempt in (lambda: dc.add_entity(verbs.EntityAdd(entity_id=ENGINE_AGENT)),
                    lambda: dc.token_issue(ENGINE_AGENT, "agent"), lambda: dc.token_issue(ENGINE_AGENT, "operator"),
                    lambda: dc.send(verbs.Message(sender=ENGINE_AGENT, recipient=ENTITY, subject="s")),
                    lambda: dc.report([{"tool": "t", "class": "bug", "what": "w", "agent": ENGINE_AGENT}])):
        with pytest.raises(Refusal) as refused:
            attempt()
        assert refused.value.reason in ("reserved_agent", "invalid_name"), refused.value
    token = dc.token_issue(SENDER, "operator").token
    with TestClient(create_app(dc), headers={"Authorization": f"Bearer {token}"}) as client:
        r = client.post("/api/v1/reports", json={"tool": "t", "class": "bug", "what": "w", "agent": ENGINE_AGENT})
        assert r.status_code in (400, 403), r.text
        assert r.json()["reason"] in ("reserved_agent", "invalid_name", "unknown_field")

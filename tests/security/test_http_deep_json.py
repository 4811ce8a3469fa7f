"""JSON nested past what a reader can follow is ``invalid_json`` (400) on every route that reads a body, and
nothing is written: never a ``RecursionError`` escaping as a 500.

The routes are walked from the OpenAPI document the app serves (every POST reads a JSON body), so a new
route is covered when it is added. The bodies are the hostile test's: arrays 100,000 deep and objects 5,000 deep
(each past the decoder's stack), and a hook payload nested 300 deep, which decodes but could never be written
in a letter (``verbs.limits.MAX_DEPTH``). MCP is held to the same depth by the same decoder (``verbs.decode``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.testclient import TestClient

from dovecote.errors import Refusal
from dovecote.handle.api import Principal
from dovecote.http.app import create_app
from dovecote.http.rest import ROUTES
from dovecote.mcp.server import Face
from dovecote.mcp.tools import TOOLS
from dovecote.verbs import MAX_DEPTH
from helpers import snapshot
from serverhelpers import ENTITY, SENDER, assert_error_shape, served_home

pytestmark = pytest.mark.files_only

#: A value for each path parameter a route with a body names.
PATH_VALUES = {"recipient": ENTITY, "entity_id": ENTITY, "ref": "0123456789ab", "kind": "claim",
               "block_id": "sb_alpha"}


def _nested(depth: int, inner: str = "1") -> bytes:
    return b'{"a":' * depth + inner.encode() + b"}" * depth


DEEP = {
    "arrays 100,000 deep": b"[" * 100_000 + b"]" * 100_000,
    "objects 5,000 deep": _nested(5_000),
    "a field 100,000 deep": b'{"subject":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "a hook payload 300 deep": b'{"event":"stop","payload":' + _nested(300) + b"}",
}


def _ledgers(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in snapshot(root).items() if k.endswith(".jsonl")}


def _body_routes(spec: dict[str, Any]) -> list[str]:
    paths = [p for p, ops in spec["paths"].items() if "post" in ops]
    return [re.sub(r"{(\w+)}", lambda m: PATH_VALUES[m.group(1)], p) for p in paths]


def test_deep_json_is_invalid_json_on_every_route_that_reads_a_body(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    token = dc.token_issue(SENDER, "operator").token
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    before = _ledgers(dc.layout.root)
    with TestClient(create_app(dc)) as c:
        routes = _body_routes(c.get("/openapi.json").json())
        assert len(routes) == len({r.path for r in ROUTES if r.method == "POST"})
        for path in routes:
            for what, body in DEEP.items():
                r = c.post(path, content=body, headers=headers)
                assert r.status_code == 400, (path, what, r.text)
                assert_error_shape(r, 400, "invalid_json")
    assert _ledgers(dc.layout.root) == before


def test_mcp_refuses_an_argument_nested_past_what_a_letter_holds(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(MAX_DEPTH):
        inner["a"] = inner = {}
    before = _ledgers(dc.layout.root)

    async def call() -> Any:
        return await Face(dc).call(TOOLS["hook_event"], Principal(SENDER, "operator", local=True),
                                   {"event": "stop", "payload": deep})

    with pytest.raises(Refusal) as e:
        anyio.run(call)
    assert e.value.reason == "invalid_json" and str(MAX_DEPTH) in e.value.detail
    assert _ledgers(dc.layout.root) == before

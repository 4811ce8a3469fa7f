"""Size limits, one table, every face: a subject, a body and an artifact at the limit pass, one over is refused.

``LIMITS`` is the table (the subject's characters from ``envelope.SUBJECT_MAX``, the body's and an artifact's
bytes from the roster's ``body_hard_limit``, set small here so the test is quick). Each row goes through the
CLI (a real argv, exit 2 and ``Error: too_large``), REST (413 in the one error shape) and MCP (a refusal
``too_large``); at the limit the send succeeds, at limit+1 it is refused and no ledger changes. An artifact is
a file on the server, so REST and MCP refuse it as ``server_file`` whatever its size (checked too); its limit
is the CLI's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import msgspec.structs
import pytest
from starlette.testclient import TestClient

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote, Principal
from dovecote.http.app import create_app
from dovecote.mcp.server import Face
from dovecote.mcp.tools import TOOLS
from dovecote.model.envelope import SUBJECT_MAX
from helpers import rewrite_roster, run_cli, snapshot
from serverhelpers import ENTITY, SENDER, assert_error_shape, served_home

pytestmark = pytest.mark.files_only
BODY_LIMIT = 4096
#: field -> (the limit, a value of n units).
LIMITS: dict[str, tuple[int, Any]] = {
    "subject": (SUBJECT_MAX, lambda n: "s" * n),
    "body": (BODY_LIMIT, lambda n: "b" * n),
    "artifact": (BODY_LIMIT, lambda n: b"a" * n),
}


def _home(tmp: Path) -> Dovecote:
    dc = served_home(tmp)
    return rewrite_roster(dc, limits=msgspec.structs.replace(dc.roster.limits, body_hard_limit=BODY_LIMIT))


def _ledgers(dc: Dovecote) -> dict[str, bytes]:
    return {k: v for k, v in snapshot(dc.layout.root).items() if k.endswith(".jsonl")}


def _fields(tmp: Path, field: str, n: int) -> dict[str, Any]:
    value = LIMITS[field][1](n)
    if field == "artifact":
        path = tmp / f"artifact-{n}.bin"
        path.write_bytes(value)
        return {"subject": "with a file", "artifact_paths": [str(path)]}
    return {"subject": "s", field: value} if field != "subject" else {"subject": value}


def _cli(tmp: Path, dc: Dovecote, fields: dict[str, Any]) -> tuple[bool, str]:
    argv = ["send", "--recipient", ENTITY, "--sender", SENDER, "--subject", fields["subject"]]
    if "body" in fields:
        argv += ["--body", fields["body"]]
    for p in fields.get("artifact_paths", ()):
        argv += ["--artifact", p]
    r = run_cli(tmp, *argv, home=dc.layout.root)
    return r.returncode == 0, r.stderr.decode()


def _rest(dc: Dovecote, fields: dict[str, Any], token: str) -> Any:
    with TestClient(create_app(dc)) as c:
        return c.post(f"/api/v1/entities/{ENTITY}/messages", json=fields, headers={"Authorization": f"Bearer {token}"})


def _mcp(dc: Dovecote, fields: dict[str, Any]) -> Any:
    async def call() -> Any:
        return await Face(dc).call(TOOLS["send"], Principal(SENDER, "operator", local=True),
                                   {"recipient": ENTITY, **fields})

    try:
        return anyio.run(call)
    except Refusal as r:
        return r


@pytest.mark.parametrize("field", sorted(LIMITS))
def test_each_limit_holds_at_the_limit_and_refuses_one_over_on_every_face(tmp_path: Path, field: str) -> None:
    dc = _home(tmp_path)
    token = dc.token_issue(SENDER, "agent").token
    limit = LIMITS[field][0]
    for n in (limit, limit + 1):
        over = n > limit
        fields = _fields(tmp_path, field, n)
        before = _ledgers(dc)
        ok, err = _cli(tmp_path, dc, fields)
        assert ok is not over, (field, n, err)
        if over:
            assert err.startswith("Error: too_large:"), err
        if field != "artifact":  # an artifact is a file on the server: the CLI's alone (server_file below)
            got = _mcp(dc, fields)
            assert isinstance(got, Refusal) is over and (not over or got.reason == "too_large"), (field, n, got)
            r = _rest(dc, fields, token)
            if over:
                assert_error_shape(r, 413, "too_large")
            else:
                assert r.status_code == 201, r.text
        if over:
            assert _ledgers(dc) == before, (field, n)


def test_rest_and_mcp_refuse_any_artifact_path_as_a_server_file(tmp_path: Path) -> None:
    dc = _home(tmp_path)
    token = dc.token_issue(SENDER, "agent").token
    before = _ledgers(dc)
    assert_error_shape(_rest(dc, _fields(tmp_path, "artifact", 1), token), 403, "server_file")
    got = _mcp(dc, _fields(tmp_path, "artifact", 1))
    assert isinstance(got, Refusal) and got.reason == "server_file"
    assert _ledgers(dc) == before

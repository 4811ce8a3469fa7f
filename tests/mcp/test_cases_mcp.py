"""The case tools over MCP: ``cases`` reads, ``receipt`` writes as the connection's entity."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from dovecote.handle.api import Dovecote, Principal
from dovecote.mcp.server import build
from dovecote.model.results import builtins
from mailhelpers import ENTITY, mail_home
from mcphelpers import trilogy

pytestmark = pytest.mark.anyio


def client(dc: Dovecote, role: str = "agent", read_only: bool = False) -> Client:
    face = build(dc, principal=Principal(ENTITY, role), read_only=read_only)
    return Client(face.server)


async def test_cases_and_a_receipt_over_mcp(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    ids = trilogy(dc)
    async with client(dc) as c:
        got = await c.call_tool("cases", {})
        assert not got.is_error and got.structured_content is not None
        assert got.structured_content["recurrence"] == {"fp:north/false_absence": 3}
        assert got.content[0].text == "cases: 1 cases, 0 kindless letters"
        done = await c.call_tool("receipt", {"answers": ids, "disposition": "fixed", "ref": "abc123"})
        assert not done.is_error, done.content
        assert done.structured_content is not None
        assert done.structured_content["fingerprint"] == "fp:north/false_absence"
        probe = await c.call_tool("receipt", {"answers": ids, "disposition": "fixed", "sentinel_probe": "true"})
        assert probe.is_error and probe.content[0].text.startswith("forbidden:")  # a probe is an operator's
        bad = await c.call_tool("receipt", {"answers": ids, "disposition": "fixed", "fingerprint": "fp:north/x"})
        assert bad.is_error and bad.content[0].text.startswith("unknown_symptom:")
    case = builtins(dc.cases())["cases"][0]
    assert case["label"] == "answered" and case["receipt"]["ref"] == "abc123"
    from dovecote.model.addresses import parse_address

    box = case["receipt"]["box"]  # the project is not in this roster: the receipt waits in the spool with it
    held = dc.store.read(parse_address(box) if box else "spool").letters
    receipt = next(lt for lt in held if lt.id == case["receipt"]["id"])
    assert receipt.agent == ENTITY, "the receipt is by the connection's entity"


async def test_a_read_only_face_refuses_the_receipt(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    ids = trilogy(dc)
    async with client(dc, read_only=True) as c:
        assert not (await c.call_tool("cases", {})).is_error
        r = await c.call_tool("receipt", {"answers": ids, "disposition": "moot"})
        assert r.is_error and r.content[0].text.startswith("read_only:")

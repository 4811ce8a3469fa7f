"""The delivery and case verbs over MCP, through the SDK's own client: the operator's tools, the read views,
and the refusals an agent meets when it reaches past its catalog."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deliveryhelpers import delivery_home, drop, envelope, kinds
from dovecote import verbs
from dovecote.handle.api import Dovecote, Principal
from dovecote.mcp.server import build
from helpers import snapshot
from mcphelpers import trilogy

pytestmark = pytest.mark.anyio

OPS = Principal("arbiter", "operator")
AGENT = Principal("tariq", "agent")


def client(dc: Dovecote, principal: Principal = OPS, read_only: bool = False) -> Client:
    return Client(build(dc, principal=principal, read_only=read_only).server)


async def ok(c: Client, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A call that must succeed: its one-line text and its structured content."""
    r = await c.call_tool(name, args)
    assert not r.is_error and r.structured_content is not None, (name, args, r.content)
    text = r.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text
    return text, r.structured_content


async def refused(c: Client, name: str, args: dict[str, Any], keyword: str) -> None:
    r = await c.call_tool(name, args)
    assert r.is_error and r.content[0].text.startswith(f"{keyword}: "), (name, args, r.content)  # type: ignore[union-attr]
    assert "Traceback" not in r.content[0].text  # type: ignore[union-attr]


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return delivery_home(tmp_path)


async def test_intake_over_mcp_delivers_a_dropped_envelope_and_status_counts_it(dc: Dovecote) -> None:
    env = envelope()
    drop(dc, env)
    drop(dc, b"{not json", name="broken.json")
    async with client(dc) as c:
        text, run = await ok(c, "intake", {})
        assert (run["processed"], run["quarantined"], run["left_pending"]) == (1, 1, 0)
        assert text == "intake: 1 processed, 1 quarantined, 0 left_pending, 1 letters_appended"
        text, status = await ok(c, "trackers", {"view": "status"})
        counts = {k: status["intake"][k] for k in ("pending", "processed", "quarantined", "entered")}
        assert counts == {"pending": 0, "processed": 1, "quarantined": 1, "entered": 2}  # it adds up
        assert status["tracker_counts"]["total"] == 1 and status["tracker_counts"]["pending_ack"] == 1
        assert text.startswith("status: intake 0 pending, 1 processed, 1 quarantined; trackers 1 total")
        again = (await ok(c, "intake", {}))[1]
        assert again["processed"] == 0, "an envelope is delivered once"
    (task,) = kinds(dc, "tariq", "task")
    assert task["envelope_id"] == env["envelope_id"]
    async with client(dc, AGENT) as c:  # the recipient sees its tracker; the status view is an operator's
        _, mine = await ok(c, "trackers", {})
        assert [t["envelope_id"] for t in mine["trackers"]] == [env["envelope_id"]]
        await refused(c, "trackers", {"view": "status"}, "forbidden")


async def test_a_mailman_pass_over_mcp_repings_an_overdue_ack(dc: Dovecote) -> None:
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    dc.send(verbs.Send(type="task", sender="aya", recipient="tariq", work_item_id="wi-1", subject="late"),
            now=hour_ago)
    async with client(dc) as c:
        text, run = await ok(c, "mailman", {})
        assert run["reconcile"]["repings"] + run["reconcile"]["timeouts"] >= 1
        assert text.startswith("mailman (none): intake: 0 processed")
        await refused(c, "mailman", {"loop": True}, "unknown_field")  # a terminal's dovecote mailman --loop
        await refused(c, "mailman", {"dir": "/tmp"}, "server_file")
        await refused(c, "intake", {"dir": "/tmp"}, "server_file")
    assert kinds(dc, "tariq", "reping") or kinds(dc, "tariq", "ack_timeout")


async def test_presence_beats_are_an_operators_and_presence_anyones(dc: Dovecote) -> None:
    async with client(dc) as c:
        text, beat = await ok(c, "presence_beat", {"agent": "tariq", "session": "s-1"})
        assert beat["appended"] is True and text.startswith("beat tariq at ")
    async with client(dc, AGENT) as c:
        text, seen = await ok(c, "trackers", {"view": "presence"})
        assert [a["agent"] for a in seen["agents"] if a["recently_active"]] == ["tariq"]
        assert text == f"presence: 1 of {len(seen['agents'])} agents recently active"
        before = snapshot(dc.layout.root)
        await refused(c, "presence_beat", {"agent": "tariq"}, "forbidden")
        assert snapshot(dc.layout.root) == before


async def test_the_case_views_and_claims_over_mcp(dc: Dovecote) -> None:
    ids = trilogy(dc)
    fp = "fp:north/false_absence"
    async with client(dc, AGENT) as c:
        text, case = await ok(c, "cases", {"view": "case", "fingerprint": fp})
        assert case["witnesses"] == 3 and text == case["line"]
        _, open_claims = await ok(c, "cases", {"view": "claims"})
        assert open_claims["totals"]["unresolved"] == 3
        await ok(c, "receipt", {"answers": ids, "disposition": "fixed", "ref": "abc123"})
        text, claims = await ok(c, "cases", {"view": "claims"})
        assert claims["totals"] == {"claims": 3, "claimed_right": 3, "claimed_wrong": 0, "unresolved": 0}
        assert text == "claims: 3 claims, 3 claimed_right, 0 claimed_wrong, 0 unresolved"
        await refused(c, "cases", {"view": "claims", "write_labels": True}, "forbidden")
        await refused(c, "cases", {"view": "case"}, "missing_field")
        await refused(c, "cases", {"view": "case", "fingerprint": fp, "box": "home"}, "unknown_field")
        await refused(c, "cases", {"view": "everything"}, "invalid_field")
        await refused(c, "cases", {"view": "case", "fingerprint": "fp:nowhere/crash"}, "unknown_case")
    labels = dc.layout.root / "field-labels.jsonl"
    assert not labels.exists()
    async with client(dc) as c:
        text, wrote = await ok(c, "cases", {"view": "claims", "write_labels": True})
        assert wrote["labels_appended"] == 3 and text.endswith("; 3 labels appended")
    assert len(labels.read_text().splitlines()) == 3


async def test_a_monitor_added_over_mcp_is_listed_and_an_agent_may_not_add_one(dc: Dovecote) -> None:
    async with client(dc, AGENT) as c:
        await refused(c, "monitor_add", {"name": "nightly", "expect": "tool=seek", "every": "1d"}, "forbidden")
    async with client(dc) as c:
        text, added = await ok(c, "monitor_add", {"name": "nightly", "expect": "tool=seek", "every": "1d"})
        assert added["appended"] is True and text == f"monitor nightly: {added['id']}"
        await refused(c, "monitor_add", {"name": "n2", "expect": "tool=seek", "every": "soon"}, "invalid_field")
    async with client(dc, AGENT) as c:
        text, listed = await ok(c, "cases", {"view": "monitors"})
        assert [(m["name"], m["state"]) for m in listed["monitors"]] == [("nightly", "new")]
        assert text == "monitors: 1 (0 up, 0 late, 0 down, 1 new, 0 paused)"


async def test_sentinels_run_an_operators_probe_and_an_agent_may_not_run_them(dc: Dovecote) -> None:
    ids = trilogy(dc)
    dc.receipt(verbs.Receipt(answers=ids, disposition="fixed", sentinel_probe="true", sentinel_expect="exit0"),
               actor="arbiter")
    async with client(dc, AGENT) as c:
        await refused(c, "sentinels", {}, "forbidden")
    async with client(dc) as c:
        text, run = await ok(c, "sentinels", {"timeout": 10})
        assert (run["guarded"], run["green"], run["red"]) == (1, 1, 0) and text == run["line"]


async def test_a_read_only_face_refuses_the_operators_writes_and_answers_the_views(dc: Dovecote) -> None:
    drop(dc, envelope())
    before = snapshot(dc.layout.root)
    async with client(dc, read_only=True) as c:
        for name, args in [("intake", {}), ("mailman", {}), ("presence_beat", {"agent": "tariq"}),
                           ("sentinels", {}), ("monitor_add", {"name": "m", "expect": "tool=x", "every": "1h"}),
                           ("cases", {"view": "claims", "write_labels": True})]:
            await refused(c, name, args, "read_only")
        for view in ("cases", "claims", "monitors"):
            await ok(c, "cases", {"view": view})
        for view in ("trackers", "presence", "status"):
            await ok(c, "trackers", {"view": view})
    assert snapshot(dc.layout.root) == before

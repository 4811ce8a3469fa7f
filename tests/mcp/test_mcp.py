"""The MCP face in process, through the SDK's own ``Client``: tools, refusals, identity, read-only, resources."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from dovecote import verbs
from dovecote.errors import StoreError
from dovecote.handle.api import Dovecote, Principal
from dovecote.mcp.server import build, wire
from dovecote.mcp.tools import TOOLS
from dovecote.model.results import builtins
from helpers import DOVECOTE_BIN, cli_env, snapshot
from mailhelpers import ENTITY, SENDER, mail_home, send
from mcphelpers import LEGACY

pytestmark = pytest.mark.anyio


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return mail_home(tmp_path)
AGENT = Principal(ENTITY, "agent")
OPERATOR_TOOLS = ("report", "sweep", "box", "doctor", "send", "move", "inbox", "show", "search", "wait", "ack",
                  "trackers", "cases", "receipt", "mission_post", "missions", "intake", "mailman", "presence_beat",
                  "hook_event", "sentinels", "monitor_add")


def ledgers(dc: Dovecote) -> dict[str, bytes]:
    """The authority: every ledger and the spool (caches may be written by a read)."""
    spool = dc.layout.root / "spool.jsonl"
    return {**snapshot(dc.layout.root / "boxes"), "spool": spool.read_bytes() if spool.exists() else b""}


def client(dc: Dovecote, principal: Principal = AGENT, **kw: Any) -> Client:
    face = build(dc, principal=principal, read_only=kw.pop("read_only", False))
    face.watcher.poll = 0.02
    return Client(face.server, **kw)


#: Each catalog, by the principal a connection is bound to: an agent, an operator token, the local operator.
CATALOGS = {
    "agent": (AGENT, ["report", "sweep", "box", "doctor", "send", "move", "inbox", "show", "search", "wait", "ack",
                      "trackers", "cases", "receipt", "mission_post", "missions", "lease"]),
    "operator": (Principal("ent_ops", "operator"), [*OPERATOR_TOOLS]),
    "local": (Principal("ent_ops", "operator", local=True), [*OPERATOR_TOOLS, "import_vnext"]),
}
#: Issue 8's budget: every catalog's tools/list under 4,000 tokens (characters / 4 of the JSON sent).
BUDGET = 4000


async def test_tools_list_is_each_roles_catalog_under_the_token_budget(dc: Dovecote) -> None:
    sizes = {}
    for role, (principal, names) in CATALOGS.items():
        async with client(dc, principal) as c:
            listed = (await c.list_tools()).tools
        assert [t.name for t in listed] == names, role
        sizes[role] = len(wire(listed)) / 4  # the answer as sent: compact JSON
        assert sizes[role] < BUDGET, f"{role}'s tools/list is {sizes[role]:.0f} tokens"
        for t in listed:
            assert t.output_schema and t.output_schema["type"] == "object"
            assert t.description and "\n" not in t.description
            assert t.input_schema["type"] == "object" and "$ref" not in json.dumps(t.input_schema)
        for name in ("inbox", "send", "move", "show"):
            assert (next(t for t in listed if t.name == name).output_schema or {})["required"], name
        move = next(t for t in listed if t.name == "move")
        assert move.input_schema["properties"]["kind"]["enum"] == sorted(k.value for k in verbs.MoveKind)
    assert sizes["agent"] < sizes["operator"] < sizes["local"]


async def test_an_agents_catalog_lists_only_what_it_may_use(dc: Dovecote) -> None:
    """No operator tool, no operator view, no operator-only field; an operator's catalog has them."""
    async with client(dc) as c:
        mine = {t.name: t.input_schema for t in (await c.list_tools()).tools}
    async with client(dc, Principal("ent_ops", "operator")) as c:
        ops = {t.name: t.input_schema for t in (await c.list_tools()).tools}
    assert mine["trackers"]["properties"]["view"]["enum"] == ["trackers", "presence"]
    assert ops["trackers"]["properties"]["view"]["enum"] == ["trackers", "presence", "status"]
    assert mine["cases"]["properties"]["view"]["enum"] == ops["cases"]["properties"]["view"]["enum"] == [
        "cases", "case", "claims", "monitors"]
    for name, field in [("send", "sender"), ("report", "agent"), ("receipt", "sentinel_probe"),
                        ("cases", "write_labels")]:
        assert field not in mine[name]["properties"] and field in ops[name]["properties"], (name, field)
    # a field two views share keeps what both verbs say, but not a default only one of them has
    assert "default" not in ops["trackers"]["properties"]["limit"]
    assert mine["trackers"]["properties"]["limit"]["default"] == 1000


async def test_send_inbox_show_move_return_structured_content_and_a_line(dc: Dovecote) -> None:
    mid = send(dc, "hello")
    async with client(dc) as c:
        inbox = await c.call_tool("inbox", {})
        assert not inbox.is_error and inbox.structured_content is not None
        assert inbox.structured_content["entity"] == ENTITY
        assert [i["id"] for i in inbox.structured_content["items"]] == [mid]
        assert inbox.content[0].text.startswith(f"inbox {ENTITY}:") and "\n" not in inbox.content[0].text
        shown = await c.call_tool("show", {"entity_id": ENTITY, "ref": mid})
        assert shown.structured_content is not None and shown.structured_content["body"] == "body of hello"
        moved = await c.call_tool("move", {"kind": "seen", "entity_id": ENTITY, "ref": mid})
        assert moved.structured_content is not None and moved.structured_content["kind"] == "seen"
        sent = await c.call_tool("send", {"recipient": SENDER, "subject": "re", "body": "ok"})
        assert sent.structured_content is not None
        assert sent.structured_content["from"] == ENTITY  # the principal is the actor of the write
    row = builtins(dc.show(verbs.Show(entity_id=SENDER, ref=sent.structured_content["id"])))
    assert row["envelope"]["sender"] == ENTITY


async def test_each_tools_one_line_says_the_numbers_of_its_answer(dc: Dovecote) -> None:
    send(dc, "kingfisher")
    dc.report([{"tool": "seek", "class": "bug", "what": "w", "ts": "2026-07-05T10:00:00Z"}], actor="probe")
    async with client(dc, Principal("ent_ops", "operator")) as c:
        lines = {}
        for name, args in (("sweep", {"distribute": True}), ("box", {"address": "home"}),
                           ("search", {"query": "kingfisher"}), ("inbox", {"entity_id": ENTITY})):
            r = await c.call_tool(name, args)
            assert not r.is_error and r.structured_content is not None, (name, r.content)
            lines[name] = (r.content[0].text, r.structured_content)
    text, d = lines["sweep"]
    assert text == f"sweep: {d['total']} letters, {d['open']} open, 0 unreachable" and d["total"] == 1
    text, d = lines["box"]
    assert text == "box home: 1 letters, 1 open, 1 listed" and d["box"] == "home"
    text, d = lines["search"]
    assert text == "search: 1 matches, 1 shown"
    text, d = lines["inbox"]
    assert text.startswith(f"inbox {ENTITY}: ") and text.endswith(f"cursor {d['cursor']}") and "None" not in text


async def test_fetching_the_inbox_never_marks_anything_seen(dc: Dovecote) -> None:
    mid = send(dc, "unread")
    before = snapshot(dc.layout.root / "boxes")
    async with client(dc) as c:
        for _ in range(2):
            await c.call_tool("inbox", {})
            await c.call_tool("show", {"entity_id": ENTITY, "ref": mid})
            await c.read_resource(f"inbox://{ENTITY}")
    assert snapshot(dc.layout.root / "boxes") == before
    item = builtins(dc.inbox(verbs.Inbox(entity_id=ENTITY)))["items"][0]
    assert item["id"] == mid and item["seen"] is False


@pytest.mark.parametrize(("name", "arguments", "keyword"), [
    ("send", {"recipient": SENDER}, "missing_field"),
    ("send", {"recipient": SENDER, "subject": "s", "colour": "red"}, "unknown_field"),
    ("send", {"recipient": SENDER, "subject": "s", "priority": "asap"}, "invalid_field"),
    ("send", {"recipient": "ent_nobody", "subject": "s"}, "unknown_recipient"),
    ("send", {"recipient": SENDER, "subject": "s", "sender": SENDER}, "forbidden"),
    ("send", {"recipient": SENDER, "subject": "s", "body_file": "/etc/passwd"}, "server_file"),
    ("move", {"kind": "complete", "entity_id": ENTITY, "ref": "MID"}, "illegal_transition"),
    ("move", {"kind": "claim", "entity_id": ENTITY, "ref": "ffffffffffff"}, "unknown_letter"),
    ("move", {"kind": "seen", "entity_id": "../x", "ref": "MID"}, "invalid_name"),
    ("box", {"address": "nowhere:x"}, "invalid_address"),
    ("search", {"query": " "}, "missing_field"),
    ("wait", {"entity_id": ENTITY, "timeout": 301}, "invalid_field"),
    ("nosuch", {}, "invalid_field"),
    # not offered over MCP: the server's tic source is the clock; receipts are the receipt tool's
    ("move", {"kind": "seen", "entity_id": ENTITY, "ref": "MID", "current_tic": 10**6}, "unknown_field"),
    ("report", {"tool": "t", "class": "triage", "what": "w", "answers": ["MID"], "disposition": "fixed"},
     "unknown_field"),
])
async def test_a_refusal_is_an_error_result_starting_with_its_keyword_and_writes_nothing(
    dc: Dovecote, name: str, arguments: dict[str, Any], keyword: str
) -> None:
    mid = send(dc, "x")
    arguments = {k: (mid if v == "MID" else v) for k, v in arguments.items()}
    before = snapshot(dc.layout.root)
    async with client(dc) as c:
        r = await c.call_tool(name, arguments)
    assert r.is_error
    assert r.content[0].text.startswith(f"{keyword}: "), r.content[0].text
    assert "Traceback" not in r.content[0].text
    assert snapshot(dc.layout.root) == before


async def test_an_agent_may_send_anywhere_but_move_and_read_only_its_own_box(dc: Dovecote) -> None:
    theirs = send(dc, "for ops", recipient=SENDER, sender=ENTITY)
    before = snapshot(dc.layout.root / "boxes")
    async with client(dc) as c:
        for name, args in [("move", {"kind": "claim", "entity_id": SENDER, "ref": theirs}),
                           ("show", {"entity_id": SENDER, "ref": theirs}),
                           ("inbox", {"entity_id": SENDER}),
                           ("search", {"query": "ops", "entity_id": SENDER}),
                           ("box", {"address": f"entity:{SENDER}"}),
                           ("wait", {"entity_id": SENDER, "timeout": 0})]:
            r = await c.call_tool(name, args)
            assert r.is_error and r.content[0].text.startswith("forbidden: "), (name, r.content[0].text)
        mine = await c.call_tool("search", {"query": "ops"})  # no entity: the agent's own inbox only
        assert mine.structured_content is not None
        assert theirs not in [m.get("id") for m in mine.structured_content["matches"]]
        with pytest.raises(Exception, match="forbidden"):
            await c.read_resource(f"inbox://{SENDER}")
    assert snapshot(dc.layout.root / "boxes") == before
    async with client(dc, Principal("ent_admin", "operator")) as op:
        r = await op.call_tool("show", {"entity_id": SENDER, "ref": theirs})
        assert not r.is_error and r.structured_content is not None
        listed = await op.list_resources()
        assert {str(x.uri) for x in listed.resources} == {f"inbox://{ENTITY}", f"inbox://{SENDER}"}


async def test_every_tool_that_names_a_box_defaults_it_to_the_connections_own_entity(dc: Dovecote) -> None:
    """show, wait, move and ack without ``entity_id`` act in the caller's own box (as inbox reads it), their
    schemas say so, and naming another's box is still forbidden for an agent."""
    mine = send(dc, "for the builder")
    task = dc.send(verbs.Send(recipient=ENTITY, type="task", work_item_id="wi-9", subject="do it"), actor=SENDER)
    delivery = task.to_dict()["deliveries"][0]["id"]
    async with client(dc) as c:  # an agent bound to ENTITY, as `dovecote mcp --as ent_builder`
        listed = {t.name: t.input_schema for t in (await c.list_tools()).tools}
        for name in ("show", "wait", "move", "ack", "inbox"):
            assert "entity_id" not in listed[name].get("required", []), name
            assert "default" in listed[name]["properties"]["entity_id"]["description"], name
        shown = await c.call_tool("show", {"ref": mine})
        assert not shown.is_error and shown.structured_content is not None
        assert shown.structured_content["entity"] == ENTITY
        waited = await c.call_tool("wait", {"timeout": 0})
        assert not waited.is_error and waited.structured_content["entity"] == ENTITY  # type: ignore[index]
        moved = await c.call_tool("move", {"kind": "seen", "ref": mine})
        assert not moved.is_error and moved.structured_content["to"] == "WAIT"  # type: ignore[index]
        acked = await c.call_tool("ack", {"ref": delivery})
        assert not acked.is_error and acked.structured_content["ack_state"] == "acked"  # type: ignore[index]
        theirs = await c.call_tool("show", {"entity_id": SENDER, "ref": mine})
        assert theirs.is_error and theirs.content[0].text.startswith("forbidden: ")
    history = builtins(dc.show(verbs.Show(entity_id=ENTITY, ref=mine)))["history"]
    assert [h["kind"] for h in history if h["kind"] == "seen"] == ["seen"]


async def test_read_only_refuses_every_writing_tool_and_answers_the_readers(dc: Dovecote) -> None:
    mid = send(dc, "x")
    before = ledgers(dc)
    async with client(dc, read_only=True) as c:
        for name, args in [("send", {"recipient": SENDER, "subject": "s"}),
                           ("move", {"kind": "seen", "entity_id": ENTITY, "ref": mid}),
                           ("report", {"tool": "t", "class": "bug", "what": "w"}),
                           ("sweep", {}),
                           ("ack", {"entity_id": ENTITY, "ref": mid}),
                           ("lease", {"action": "take", "globs": ["src/**"]}),
                           ("lease", {"action": "release"})]:
            r = await c.call_tool(name, args)
            assert r.is_error and r.content[0].text.startswith("read_only: "), name
        assert not (await c.call_tool("sweep", {"distribute": False})).is_error
        assert not (await c.call_tool("inbox", {})).is_error
        assert not (await c.call_tool("doctor", {})).is_error
        assert not (await c.call_tool("trackers", {})).is_error
        assert not (await c.call_tool("lease", {})).is_error  # list, the default action, only reads
    assert ledgers(dc) == before
    writing = {"report", "send", "move", "sweep", "ack", "receipt", "intake", "mailman", "presence_beat",
               "hook_event", "sentinels", "monitor_add", "import_vnext", "claims", "mission_post", "lease_take",
               "lease_renew", "lease_release"}
    for tool in TOOLS.values():
        for view in getattr(tool, "views", (tool,)):
            assert verbs.writes(view.name) == (view.name in writing), view.name


async def test_report_files_as_the_principal(dc: Dovecote) -> None:
    async with client(dc) as c:
        r = await c.call_tool("report", {"tool": "grep", "class": "bug", "what": "lost a line"})
        assert r.structured_content is not None and r.structured_content["letters"][0]["appended"] is True
        spoof = await c.call_tool("report", {"tool": "grep", "class": "bug", "what": "w", "agent": "someone"})
        assert spoof.is_error and spoof.content[0].text.startswith("forbidden: ")
    line = (dc.layout.root / "spool.jsonl").read_text().splitlines()[-1]
    assert json.loads(line)["agent"] == ENTITY


async def test_wait_returns_mail_after_a_cursor(dc: Dovecote) -> None:
    cursor = dc.inbox_cursor(ENTITY)
    mid = send(dc, "later")
    async with client(dc) as c:
        r = await c.call_tool("wait", {"entity_id": ENTITY, "after": cursor, "timeout": 5})
        assert r.structured_content is not None and [i["id"] for i in r.structured_content["items"]] == [mid]
        r = await c.call_tool("wait", {"entity_id": ENTITY, "timeout": 0})
        assert r.structured_content is not None and r.structured_content["timed_out"] is True


async def test_a_listener_hears_the_inbox_grow_by_another_process(dc: Dovecote, tmp_path: Path) -> None:
    uri = f"inbox://{ENTITY}"
    async with client(dc) as c, c.listen(resource_subscriptions=[uri]) as sub:
        await anyio.to_thread.run_sync(lambda: subprocess.run(
            [str(DOVECOTE_BIN), "send", "--recipient", ENTITY, "--sender", SENDER, "--subject", "from a shell"],
            env=cli_env(tmp_path, dc.layout.root), check=True, capture_output=True))
        with anyio.fail_after(10):
            event = await sub.__anext__()
        assert event.uri == uri
        data = json.loads((await c.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
        assert [i["subject"] for i in data["items"]] == ["from a shell"]


@LEGACY
async def test_a_legacy_subscriber_is_told_the_box_grew(dc: Dovecote) -> None:
    got: list[str] = []
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            got.append(str(message.params.uri))
            heard.set()

    uri = f"box://entity:{ENTITY}"
    async with client(dc, mode="legacy", message_handler=on_message) as c:
        await c.subscribe_resource(uri)
        await anyio.to_thread.run_sync(lambda: send(dc, "ping"))
        with anyio.fail_after(10):
            await heard.wait()
        with pytest.raises(Exception, match="forbidden"):
            await c.subscribe_resource(f"inbox://{SENDER}")
    # only that box, at least once: the first send creates the box's file and then writes it, and a poll
    # that falls between the two sees it grow twice (seen under load)
    assert got and set(got) == {uri}


def test_every_tool_is_described_on_the_mcp_page() -> None:
    """The MCP page's own words (its source, before the catalog is generated into it) name every tool and view."""
    section = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "mcp.md").read_text()
    section = section.split("<!-- dovecote:mcp-catalog -->", 1)[0]
    for tool in TOOLS.values():
        for name in (tool.name, *(v.name for v in getattr(tool, "views", ()))):
            assert f"`{name}`" in section, f"MCP tool or view {name} is not described on docs/reference/mcp.md"


@pytest.mark.parametrize(("error", "start"), [
    (StoreError("cannot read boxes/home/letters.jsonl: Input/output error"), "io_error: cannot read"),
    (RuntimeError("secret internals"), "internal_error: an unexpected RuntimeError"),
])
async def test_a_store_failure_or_a_bug_is_an_error_line_never_a_traceback(
    dc: Dovecote, monkeypatch: pytest.MonkeyPatch, error: Exception, start: str
) -> None:
    def fail(*args: Any, **kw: Any) -> Any:
        raise error

    monkeypatch.setattr(dc, "doctor", fail)
    async with client(dc) as c:
        r = await c.call_tool("doctor", {})
    assert r.is_error and r.content[0].text.startswith(start)
    assert "Traceback" not in r.content[0].text and "secret" not in r.content[0].text


async def test_an_agent_sends_a_task_acks_its_own_delivery_and_reads_its_trackers(dc: Dovecote) -> None:
    """Delivery over MCP (issue 9): a task to ops; ops acks it; another agent cannot ack it."""
    ops = Principal(SENDER, "agent")
    async with client(dc) as c:
        sent = await c.call_tool("send", {"recipient": SENDER, "subject": "review", "type": "task",
                                          "work_item_id": "wi-1"})
        assert not sent.is_error and sent.structured_content is not None
        envelope_id = sent.structured_content["envelope_id"]
        assert sent.structured_content["from"] == ENTITY and sent.content[0].text.startswith("sent ")
        theirs = await c.call_tool("ack", {"entity_id": SENDER, "ref": envelope_id})
        assert theirs.is_error and theirs.content[0].text.startswith("forbidden: ")
    async with client(dc, ops) as c:
        acked = await c.call_tool("ack", {"entity_id": SENDER, "ref": envelope_id})
        assert not acked.is_error and acked.structured_content is not None
        assert acked.structured_content["ack_state"] == "acked"
        rows = await c.call_tool("trackers", {})
        assert rows.structured_content is not None
        assert [t["ack_state"] for t in rows.structured_content["trackers"]] == ["acked"]
        again = await c.call_tool("ack", {"entity_id": SENDER, "ref": envelope_id})
        assert again.is_error and again.content[0].text.startswith("already_acked: ")


async def test_an_agent_cannot_post_landed_without_a_persons_receipt_import(dc: Dovecote) -> None:
    """The landed law over MCP as on every face: a letter claiming an import no person made appends nothing."""
    from missionhelpers import for_phase

    probe = {"brain_ref": "probe", "synthetic": True}
    async with client(dc) as c:
        prev = None
        for seq, phase in enumerate(["judging", "executing", "gate", "merge_wait"], 1):
            r = await c.call_tool("mission_post", {"letter": for_phase(phase, seq, prev, **probe)})
            assert not r.is_error, r.content[0].text
            prev = r.structured_content["letter_id"]
        before = ledgers(dc)
        r = await c.call_tool("mission_post", {"letter": for_phase("landed", 5, prev, **probe)})
    assert r.is_error and r.content[0].text.startswith("landed_law: "), r.content[0].text
    assert ledgers(dc) == before

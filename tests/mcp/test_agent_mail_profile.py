"""The agent-mail profile through the MCP SDK's client: `dovecote mcp --profile agent-mail` on stdio and
`/agent-mail/mcp` of a real `dovecote serve`, driven as mcp_agent_mail's clients drive theirs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from dovecote.handle.api import Dovecote
from dovecote.mcp import agentmail
from helpers import DOVECOTE_BIN, cli_env, new_home
from serverhelpers import serving

pytestmark = pytest.mark.anyio

Call = Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]
PROJECT = "/data/projects/backend"
#: The keys of their fetch_inbox rows (notes 2.7), every one of which a row carries here.
INBOX_KEYS = {"id", "project_id", "sender_id", "thread_id", "topic", "subject", "importance", "ack_required",
              "created_ts", "attachments", "from", "kind"}
SEARCH_KEYS = {"id", "subject", "importance", "ack_required", "created_ts", "thread_id", "from"}


def ok(r: types.CallToolResult) -> Any:
    """A dict result: structured, and the same JSON as its one text (their shape)."""
    assert not r.is_error, r.content
    assert r.structured_content is not None
    assert isinstance(r.content[0], types.TextContent) and json.loads(r.content[0].text) == r.structured_content
    return r.structured_content


def rows(r: types.CallToolResult) -> list[dict[str, Any]]:
    """A list result: ``{"result": [...]}`` structured; text the bare array (``content: []`` when empty)."""
    assert not r.is_error, r.content
    assert r.structured_content is not None and set(r.structured_content) == {"result"}
    found: list[dict[str, Any]] = r.structured_content["result"]
    if found:
        assert isinstance(r.content[0], types.TextContent) and json.loads(r.content[0].text) == found
    else:
        assert r.content == []
    return found


def refused(r: types.CallToolResult, tool: str, start: str) -> str:
    assert r.is_error and len(r.content) == 1 and isinstance(r.content[0], types.TextContent)
    text = r.content[0].text
    assert text.startswith(f"Error calling tool '{tool}': {start}"), text
    assert "Traceback" not in text
    return text


async def flow(call: Call) -> None:
    """Their worked example (notes section 4), then the refusals a client meets."""
    project = ok(await call("ensure_project", {"human_key": PROJECT}))
    assert project["slug"] == "data-projects-backend" and project["human_key"] == PROJECT
    assert isinstance(project["id"], int)
    assert ok(await call("ensure_project", {"human_key": PROJECT + "/"}))["id"] == project["id"]  # once
    green = ok(await call("register_agent", {"project_key": PROJECT, "program": "codex-cli", "model": "gpt-5",
                                              "task_description": "auth refactor"}))
    blue = ok(await call("register_agent", {"project_key": "data-projects-backend", "program": "claude-code",
                                             "model": "opus", "name": "BlueLake"}))
    t1, t2 = green["registration_token"], blue["registration_token"]
    assert t1.startswith("dct_") and t2.startswith("dct_") and t1 != t2
    assert green["name"][0].isupper() and green["name"].isalpha() and blue["name"] == "BlueLake"
    assert green["project_id"] == project["id"] and green["task_description"] == "auth refactor"
    assert ok(await call("set_contact_policy", {"project_key": PROJECT, "agent_name": "BlueLake", "policy": "open",
                                                "registration_token": t2})) == {"agent": "BlueLake", "policy": "open"}

    sent = ok(await call("send_message", {
        "project_key": PROJECT, "sender_name": green["name"], "sender_token": t1, "to": ["bluelake"],
        "subject": "[br-123] Start: auth refactor", "body_md": "Taking src/**.", "thread_id": "br-123",
        "ack_required": True}))
    assert sent["count"] == 1 and sent["verified_sender"] is True
    payload = sent["deliveries"][0]["payload"]
    mid = payload["id"]
    assert isinstance(mid, int) and payload["thread_id"] == "br-123" and payload["from"] == green["name"]
    assert sent["deliveries"][0]["project"] == PROJECT

    inbox = rows(await call("fetch_inbox", {"project_key": PROJECT, "agent_name": "BlueLake",
                                            "registration_token": t2, "include_bodies": True}))
    assert [m["id"] for m in inbox] == [mid]
    (row,) = inbox
    assert set(row) >= INBOX_KEYS and row["body_md"] == "Taking src/**."
    assert (row["from"], row["thread_id"], row["ack_required"], row["kind"], row["importance"]) == (
        green["name"], "br-123", True, "to", "normal")
    assert row["sender_id"] == green["id"] and row["created_ts"].endswith("+00:00")

    read = ok(await call("mark_message_read", {"project_key": PROJECT, "agent_name": "BlueLake",
                                               "registration_token": t2, "message_id": mid}))
    assert read["read"] is True and read["message_id"] == mid and read["read_at"]
    again = ok(await call("mark_message_read", {"project_key": PROJECT, "agent_name": "BlueLake",
                                                "registration_token": t2, "message_id": mid}))
    assert again == read  # first write wins
    acked = ok(await call("acknowledge_message", {"project_key": PROJECT, "agent_name": "BlueLake",
                                                  "registration_token": t2, "message_id": mid}))
    assert acked["acknowledged"] is True and acked["acknowledged_at"] and acked["read_at"] == read["read_at"]

    reply = ok(await call("reply_message", {"project_key": PROJECT, "message_id": mid, "sender_name": "BlueLake",
                                            "sender_token": t2, "body_md": "ok"}))
    assert reply["thread_id"] == "br-123" and reply["reply_to"] == mid
    assert reply["subject"] == "Re: [br-123] Start: auth refactor" and reply["to"] == [green["name"]]
    theirs = rows(await call("fetch_inbox", {"project_key": PROJECT, "agent_name": green["name"],
                                             "registration_token": t1}))
    assert [(m["id"], m["thread_id"]) for m in theirs] == [(reply["id"], "br-123")]

    found = await call("search_messages", {"project_key": PROJECT, "query": "refactor", "agent_name": "BlueLake",
                                           "registration_token": t2})
    hits = rows_wrapped(found)
    assert [h["id"] for h in hits] == [mid] and set(hits[0]) >= SEARCH_KEYS and hits[0]["ack_required"] == 1
    who = ok(await call("whois", {"project_key": PROJECT, "agent_name": "bluelake"}))
    assert (who["name"], who["program"], who["model"]) == ("BlueLake", "claude-code", "opus")
    assert "registration_token" not in who and who["recent_commits"] == []

    # -- refusals
    refused(await call("set_contact_policy", {"project_key": PROJECT, "agent_name": "BlueLake",
                                              "policy": "contacts_only", "registration_token": t2}),
            "set_contact_policy", "unsupported: ")
    refused(await call("fetch_inbox", {"project_key": PROJECT, "agent_name": "BlueLake", "registration_token": t1}),
            "fetch_inbox", "forbidden: ")
    refused(await call("send_message", {"project_key": PROJECT, "sender_name": "BlueLake", "sender_token": t1,
                                        "to": [green["name"]], "subject": "s", "body_md": "b"}),
            "send_message", "forbidden: ")
    refused(await call("fetch_inbox", {"project_key": PROJECT, "agent_name": "BlueLake",
                                       "registration_token": "dct_not-a-token"}), "fetch_inbox", "unauthorized: ")
    refused(await call("send_message", {"project_key": PROJECT, "sender_name": "BlueLake", "sender_token": t2,
                                        "to": "Nobody", "subject": "s", "body_md": "b"}),
            "send_message", "1 validation error for call[send_message]\nto\n")
    refused(await call("send_message", {"project_key": PROJECT, "sender_name": "BlueLake", "sender_token": t2,
                                        "to": ["NoSuchAgent"], "subject": "s", "body_md": "b"}),
            "send_message", "unknown_recipient: Unable to send message")
    refused(await call("fetch_inbox", {"project_key": PROJECT, "agent_name": "BlueLake", "registration_token": t2,
                                       "limit": 0}), "fetch_inbox", "Invalid argument value: ")
    refused(await call("ensure_project", {"human_key": "relative/path"}), "ensure_project", "Invalid argument value")
    refused(await call("mark_message_read", {"project_key": PROJECT, "agent_name": "BlueLake",
                                             "registration_token": t2, "message_id": reply["id"]}),
            "mark_message_read", "unknown_letter: Message ")  # the reply is in the other's inbox, not BlueLake's


def rows_wrapped(r: types.CallToolResult) -> list[dict[str, Any]]:
    """search_messages: ``{"result": [...]}`` structured, and its text that same wrapped object (theirs)."""
    assert not r.is_error and r.structured_content is not None
    assert isinstance(r.content[0], types.TextContent) and json.loads(r.content[0].text) == r.structured_content
    found: list[dict[str, Any]] = r.structured_content["result"]
    return found


@pytest.fixture
def home(tmp_path: Path) -> Dovecote:
    return new_home(tmp_path)


async def test_the_profile_over_stdio(home: Dovecote, tmp_path: Path) -> None:
    params = StdioServerParameters(command=str(DOVECOTE_BIN), env=cli_env(tmp_path, home.layout.root),
                                   args=["--home", str(home.layout.root), "mcp", "--profile", "agent-mail"])
    async with Client(params) as c:
        listed = await c.list_tools()
        assert [t.name for t in listed.tools] == list(agentmail.CATALOG)
        await flow(c.call_tool)
        unknown = await c.call_tool("force_release_file_reservation", {})  # not in the profile
        assert unknown.is_error and unknown.content == [types.TextContent(type="text", text=(
            "Unknown tool: force_release_file_reservation"))]
        assert (await c.call_tool("health_check", {})).structured_content == {
            "status": "ok", "environment": "dovecote", "http_host": None, "http_port": None,
            "database_url": f"dovecote:{home.layout.root}"}


@asynccontextmanager
async def profile_client(url: str, token: str | None = None) -> AsyncIterator[Client]:
    """Our SDK's client over streamable HTTP, as theirs connects: no session kept by the server (stateless)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with create_mcp_http_client(headers=headers) as h, Client(streamable_http_client(url, http_client=h)) as c:
        yield c


async def test_the_profile_over_streamable_http_of_a_real_serve(home: Dovecote, tmp_path: Path) -> None:
    with serving(tmp_path, home.layout.root) as server:
        url = server.line("agent-mail")
        assert url == server.url + agentmail.PATH
        async with profile_client(url) as c:  # no token on the connection: loopback, as theirs admits locals
            await flow(c.call_tool)
            health = ok(await c.call_tool("health_check", {}))
            assert health["status"] == "ok" and health["http_port"] == int(server.url.rpartition(":")[2])
        async with httpx2.AsyncClient(timeout=30) as h:  # a bearer token given is checked, as on /mcp
            r = await h.post(url, headers={"Authorization": "Bearer dct_bogus"},
                             json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401 and r.json()["reason"] == "unauthorized"


async def test_a_stateless_call_without_initialize_answers_plain_json(home: Dovecote, tmp_path: Path) -> None:
    """Their clients (SDK 1.25, stateless HTTP) may call a tool with no session: one POST, one JSON answer."""
    with serving(tmp_path, home.layout.root) as server:
        async with httpx2.AsyncClient(timeout=30) as h:
            r = await h.post(server.line("agent-mail"), headers={"Accept": "application/json, text/event-stream"},
                             json={"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                   "params": {"name": "ensure_project", "arguments": {"human_key": PROJECT}}})
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        assert "mcp-session-id" not in r.headers
        body = r.json()
        assert body["id"] == 7 and body["result"]["structuredContent"]["slug"] == "data-projects-backend"


async def two_agents(url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The project and its agents RedFox and GreyWolf, registered by a tokenless (loopback) connection."""
    async with profile_client(url) as c:
        ok(await c.call_tool("ensure_project", {"human_key": PROJECT}))
        return tuple([ok(await c.call_tool("register_agent", {"project_key": PROJECT, "program": "p", "model": "m",
                                                              "name": name})) for name in ("RedFox", "GreyWolf")])


async def test_a_connection_token_is_the_one_rule_too(home: Dovecote, tmp_path: Path) -> None:
    """A connection bearing an agent's token reads only that agent's inbox, with no token argument."""
    with serving(tmp_path, home.layout.root) as server:
        url = server.line("agent-mail")
        a, _ = await two_agents(url)
        async with profile_client(url, a["registration_token"]) as mine:
            assert rows(await mine.call_tool("fetch_inbox", {"project_key": PROJECT, "agent_name": "RedFox"})) == []
            refused(await mine.call_tool("fetch_inbox", {"project_key": PROJECT, "agent_name": "GreyWolf"}),
                    "fetch_inbox", "forbidden: ")
            refused(await mine.call_tool("register_agent", {"project_key": PROJECT, "program": "p", "model": "m",
                                                            "name": "NewOne"}), "register_agent", "forbidden: ")


def test_the_catalog_is_small_and_holds_their_core_tools() -> None:
    assert agentmail.tokens() < 4000
    assert set(agentmail.CATALOG) == {
        "health_check", "ensure_project", "register_agent", "whois", "send_message", "reply_message",
        "fetch_inbox", "mark_message_read", "acknowledge_message", "search_messages", "set_contact_policy",
        "file_reservation_paths", "renew_file_reservations", "release_file_reservations"}


async def test_thirty_sessions_sending_at_once_lose_and_double_nothing(home: Dovecote, tmp_path: Path) -> None:
    sessions, each = 30, 3
    with serving(tmp_path, home.layout.root) as server:
        url = server.line("agent-mail")
        a, b = await two_agents(url)
        acknowledged: list[int] = []

        async def session(n: int) -> None:
            async with profile_client(url) as s:
                for k in range(each):
                    sent = ok(await s.call_tool("send_message", {
                        "project_key": PROJECT, "sender_name": "RedFox", "sender_token": a["registration_token"],
                        "to": ["GreyWolf"], "subject": f"load {n}.{k}", "body_md": f"body {n}.{k}"}))
                    acknowledged.append(sent["deliveries"][0]["payload"]["id"])

        with anyio.fail_after(240):
            async with anyio.create_task_group() as tg:
                for n in range(sessions):
                    tg.start_soon(session, n)
        async with profile_client(url) as c:
            inbox = rows(await c.call_tool("fetch_inbox", {"project_key": PROJECT, "agent_name": "GreyWolf",
                                                          "registration_token": b["registration_token"],
                                                          "limit": 1000}))
    ids = [m["id"] for m in inbox]
    assert len(acknowledged) == sessions * each == len(set(acknowledged))
    assert sorted(ids) == sorted(acknowledged)  # each acknowledged message exactly once, nothing else


async def test_agents_registering_at_once_each_get_their_own_name_and_token(home: Dovecote, tmp_path: Path) -> None:
    with serving(tmp_path, home.layout.root) as server:
        url = server.line("agent-mail")
        async with profile_client(url) as c:
            ok(await c.call_tool("ensure_project", {"human_key": PROJECT}))
        made: list[dict[str, Any]] = []

        async def register() -> None:
            async with profile_client(url) as s:
                made.append(ok(await s.call_tool("register_agent", {"project_key": PROJECT, "program": "p",
                                                                    "model": "m"})))

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for _ in range(10):
                    tg.start_soon(register)
    assert len({m["name"] for m in made}) == len({m["registration_token"] for m in made}) == 10
    home.refresh()
    assert {home.authenticate(m["registration_token"]).entity for m in made} == {
        f"data-projects-backend.{m['name']}" for m in made}

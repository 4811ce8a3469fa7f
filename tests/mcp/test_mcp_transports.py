"""The MCP face over its real transports, through the SDK's client: `dovecote mcp` on stdio and on HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from dovecote.handle.api import Dovecote
from helpers import DOVECOTE_BIN, cli_env, snapshot
from mailhelpers import ENTITY, SENDER, mail_home, send
from mcphelpers import LEGACY, http_client

pytestmark = pytest.mark.anyio


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return mail_home(tmp_path)


def stdio(dc: Dovecote, tmp: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=str(DOVECOTE_BIN), args=["--home", str(dc.layout.root), "mcp", *args],
                                 env=cli_env(tmp, dc.layout.root))


async def test_stdio_binds_the_connection_to_its_entity(dc: Dovecote, tmp_path: Path) -> None:
    mid = send(dc, "over stdio")
    async with Client(stdio(dc, tmp_path, "--as", ENTITY)) as c:
        inbox = await c.call_tool("inbox", {})
        assert inbox.structured_content is not None
        assert [i["id"] for i in inbox.structured_content["items"]] == [mid]
        sent = await c.call_tool("send", {"recipient": SENDER, "subject": "back", "body": "b"})
        assert sent.structured_content is not None and sent.structured_content["from"] == ENTITY
        other = await c.call_tool("inbox", {"entity_id": SENDER})
        assert other.is_error and other.content[0].text.startswith("forbidden: ")


async def test_stdio_read_only_refuses_writes(dc: Dovecote, tmp_path: Path) -> None:
    async with Client(stdio(dc, tmp_path, "--as", ENTITY, "--read-only"), mode="legacy") as c:
        r = await c.call_tool("send", {"recipient": SENDER, "subject": "s"})
        assert r.is_error and r.content[0].text.startswith("read_only: ")


def test_stdio_refuses_an_unknown_entity_or_token_before_serving(dc: Dovecote, tmp_path: Path) -> None:
    for args in (["--as", "ent_nobody"], ["--token", "dct_nonsense"]):
        r = subprocess.run([str(DOVECOTE_BIN), "mcp", *args], env=cli_env(tmp_path, dc.layout.root),
                           capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
        assert r.returncode == 2 and b"Traceback" not in r.stderr
        assert r.stderr.startswith(b"Error: unknown_entity" if args[0] == "--as" else b"Error: unauthorized")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def http_server(dc: Dovecote, tmp_path: Path) -> Iterator[str]:
    """`dovecote mcp --http` on a free port; yields its /mcp URL."""
    port = _free_port()
    proc = subprocess.Popen([str(DOVECOTE_BIN), "mcp", "--http", "--port", str(port)],
                            env=cli_env(tmp_path, dc.layout.root), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


async def test_http_needs_a_token_and_binds_each_request_to_it(dc: Dovecote, http_server: str) -> None:
    agent = dc.token_issue(ENTITY).token
    assert (await _raw_post(http_server, None)).status_code == 401
    mid = send(dc, "over http")
    async with http_client(http_server, agent) as c:
        shown = await c.call_tool("show", {"entity_id": ENTITY, "ref": mid})
        assert shown.structured_content is not None and shown.structured_content["body"] == "body of over http"
        theirs = await c.call_tool("move", {"kind": "seen", "entity_id": SENDER, "ref": mid})
        assert theirs.is_error and theirs.content[0].text.startswith("forbidden: ")
    row = dc.tokens()[0]
    dc.token_revoke(row.id)
    revoked = await _raw_post(http_server, agent)
    assert revoked.status_code == 401 and revoked.json()["reason"] == "unauthorized"


async def _raw_post(url: str, token: str | None) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient() as h:
        return await h.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


@pytest.mark.parametrize("mode", ["auto", pytest.param("legacy", marks=LEGACY)])
async def test_http_subscribers_of_both_eras_hear_a_send_from_another_process(
    dc: Dovecote, http_server: str, tmp_path: Path, mode: str
) -> None:
    token = dc.token_issue(ENTITY).token
    uri = f"inbox://{ENTITY}"

    def send_from_a_shell() -> None:
        subprocess.run([str(DOVECOTE_BIN), "send", "--recipient", ENTITY, "--sender", SENDER, "--subject", "hey"],
                       env=cli_env(tmp_path, dc.layout.root), check=True, capture_output=True)

    if mode == "auto":
        async with http_client(http_server, token) as c, c.listen(resource_subscriptions=[uri]) as sub:
            await anyio.to_thread.run_sync(send_from_a_shell)
            with anyio.fail_after(10):
                assert (await sub.__anext__()).uri == uri
        return
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification) and str(message.params.uri) == uri:
            heard.set()

    async with http_client(http_server, token, mode="legacy", message_handler=on_message) as c:
        await c.subscribe_resource(uri)
        await anyio.to_thread.run_sync(send_from_a_shell)
        with anyio.fail_after(10):
            await heard.wait()


def guide_config_block() -> str:
    """The client configuration the Agents guide prints (its Claude Code section)."""
    from helpers import DOCS, sh_block

    return sh_block(DOCS / "guides" / "agents.md", "## Claude Code: `.mcp.json` and `dovecote hooks install`")


async def test_the_guides_client_config_runs_as_printed(tmp_path: Path) -> None:
    """The config the Agents guide prints, run from a checkout after `make run`, starts working servers."""
    checkout = tmp_path / "checkout"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "dovecote").symlink_to(DOVECOTE_BIN)
    env = cli_env(tmp_path, None)
    subprocess.run([str(DOVECOTE_BIN), "demo", "demo-home"], cwd=checkout, env=env, check=True, capture_output=True)
    printed = subprocess.run(["bash", "-e", "-c", guide_config_block()], cwd=checkout, env={**env, "PWD": str(
        checkout)}, check=True, capture_output=True, text=True).stdout
    servers = json.loads(printed)["mcpServers"]
    assert set(servers) == {"dovecote-builder", "dovecote-ops"}
    for name, entry in servers.items():
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
        async with Client(params) as c:
            inbox = await c.call_tool("inbox", {})
            assert inbox.structured_content is not None, inbox.content
            assert inbox.structured_content["entity"] == "ent_" + name.removeprefix("dovecote-")


async def test_serve_answers_mcp_at_the_printed_endpoint_beside_the_page(tmp_path: Path) -> None:
    from serverhelpers import served_home, serving

    dc = served_home(tmp_path)
    agent = dc.token_issue(ENTITY).token
    mid = send(dc, "through serve")
    with serving(tmp_path, dc.layout.root) as server:
        endpoint = server.line("mcp")
        assert endpoint == server.url + "/mcp"
        assert (await _raw_post(endpoint, None)).status_code == 401  # MCP binds every request to a token
        async with http_client(endpoint, agent) as c:
            shown = await c.call_tool("show", {"entity_id": ENTITY, "ref": mid})
            assert shown.structured_content is not None and shown.structured_content["body"] == "body of through serve"
            listed = await c.list_tools()
            assert {"send", "move", "inbox", "wait"} <= {t.name for t in listed.tools}
        async with httpx2.AsyncClient() as h:  # and the web faces still answer beside it
            assert (await h.get(server.url + "/api/v1/doctor")).json()["mailbox"]["available"] is True
            assert (await h.get(server.line("page"))).status_code == 200


async def test_the_demo_prints_an_mcp_config_that_runs_as_pasted(tmp_path: Path) -> None:
    from dovecote.cli.demo import MCP_CONFIG_HEADER
    from helpers import run_cli

    out = run_cli(tmp_path, "demo", str(tmp_path / "demo"), process=True)
    assert out.returncode == 0, out.stderr.decode()
    text = out.stdout.decode()
    config = json.loads(text[text.index(MCP_CONFIG_HEADER) + len(MCP_CONFIG_HEADER):])
    servers = config["mcpServers"]
    assert {s["args"][-1] for s in servers.values()} == {"ent_builder", "ent_ops"}  # one per demo agent
    builder = next(s for s in servers.values() if s["args"][-1] == "ent_builder")
    params = StdioServerParameters(command=builder["command"], args=builder["args"], env=cli_env(tmp_path, None))
    async with Client(params) as c:
        inbox = await c.call_tool("inbox", {})
        assert inbox.structured_content is not None and inbox.structured_content["entity"] == "ent_builder"


# -- the catalog per role, over the real transports (issues 9 and 10's tools) ------------------------------


async def test_stdio_without_a_token_is_the_local_operator_who_alone_imports_a_vnext_folder(tmp_path: Path) -> None:
    from reference_vnext_status import reference_status
    from vnext_fixture import busy, home_with_agents

    dc = home_with_agents(tmp_path)
    root = tmp_path / "vnext"
    busy(root)
    before = snapshot(root)
    async with Client(stdio(dc, tmp_path)) as c:
        names = [t.name for t in (await c.list_tools()).tools]
        assert names[-1] == "import_vnext" and {"intake", "mailman", "sentinels", "monitor_add"} <= set(names)
        dry = await c.call_tool("import_vnext", {"path": str(root)})
        assert not dry.is_error and dry.structured_content is not None, dry.content
        assert dry.structured_content["tracker_counts"] == reference_status(root)["tracker_counts"]
        assert dry.content[0].text.startswith("would import (dry run) 16 letters")  # type: ignore[union-attr]
        wrote = await c.call_tool("import_vnext", {"path": str(root), "write": True})
        assert wrote.structured_content is not None and wrote.structured_content["letters"]["appended"] == 16
        status = await c.call_tool("trackers", {"view": "status"})
        assert status.structured_content is not None
        assert status.structured_content["tracker_counts"]["total"] >= 4
    assert snapshot(root) == before, "the vNext folder is never modified"
    async with Client(stdio(dc, tmp_path, "--as", "tariq")) as c:
        names = [t.name for t in (await c.list_tools()).tools]
        assert "import_vnext" not in names and "intake" not in names
        r = await c.call_tool("import_vnext", {"path": str(root)})
        assert r.is_error and r.content[0].text.startswith("forbidden: ")  # type: ignore[union-attr]


async def test_http_lists_each_tokens_catalog_and_an_operator_token_names_no_server_folder(
    dc: Dovecote, http_server: str, tmp_path: Path
) -> None:
    from deliveryhelpers import drop, envelope

    env = envelope(**{"from": ENTITY, "to": SENDER})  # the server's roster: mail_home's two entities
    env["ack_policy"]["escalation_target"] = ENTITY
    drop(dc, env)
    catalogs = {}
    for role in ("agent", "operator"):
        async with http_client(http_server, dc.token_issue(SENDER, role).token) as c:
            catalogs[role] = [t.name for t in (await c.list_tools()).tools]
            if role == "agent":
                r = await c.call_tool("intake", {})
                assert r.is_error and r.content[0].text.startswith("forbidden: ")  # type: ignore[union-attr]
                continue
            r = await c.call_tool("import_vnext", {"path": str(tmp_path)})
            assert r.is_error and r.content[0].text.startswith("server_file: ")  # type: ignore[union-attr]
            run = await c.call_tool("intake", {})
            assert run.structured_content is not None and run.structured_content["processed"] == 1
            status = await c.call_tool("trackers", {"view": "status"})
            assert status.structured_content is not None
            assert status.structured_content["intake"]["processed"] == 1
    # the agent's lease tool is its own (the operator's catalog is at its budget; an operator calls it all the same)
    assert set(catalogs["agent"]) - {"lease"} < set(catalogs["operator"]) and "import_vnext" not in catalogs["operator"]
    assert "intake" in catalogs["operator"] and "intake" not in catalogs["agent"]

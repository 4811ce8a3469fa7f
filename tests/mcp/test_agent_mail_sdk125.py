"""mcp_agent_mail's own client library against the profile: the MCP SDK 1.25 its lock file pins, over
streamable HTTP to a real `dovecote serve`.

It installs ``mcp==1.25.0`` from the package registry into a throwaway venv (about 15 s), so it runs with
the long tier (``make stress``), not ``make test``; our own SDK's client covers the profile in
``test_agent_mail_profile.py`` on every run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import new_home
from serverhelpers import serving

pytestmark = pytest.mark.stress

#: Their worked example through the 1.25 client (``streamablehttp_client`` + ``ClientSession``), as JSON.
CLIENT = '''
import asyncio, json, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

async def main(url, project):
    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write) as s:
            await s.initialize()
            async def call(name, args):
                r = await s.call_tool(name, args)
                return {"is_error": r.isError, "structured": r.structuredContent,
                        "text": [c.text for c in r.content]}
            out = {"tools": [t.name for t in (await s.list_tools()).tools]}
            out["project"] = await call("ensure_project", {"human_key": project})
            a = await call("register_agent", {"project_key": project, "program": "codex-cli", "model": "gpt-5"})
            b = await call("register_agent", {"project_key": project, "program": "claude", "model": "opus",
                                              "name": "BlueLake"})
            ta, tb = a["structured"]["registration_token"], b["structured"]["registration_token"]
            out["sent"] = await call("send_message", {"project_key": project, "sender_name": a["structured"]["name"],
                                                      "sender_token": ta, "to": ["BlueLake"], "subject": "hi",
                                                      "body_md": "from 1.25"})
            out["inbox"] = await call("fetch_inbox", {"project_key": project, "agent_name": "BlueLake",
                                                      "registration_token": tb})
            out["refused"] = await call("fetch_inbox", {"project_key": project, "agent_name": "BlueLake",
                                                        "registration_token": ta})
            out["policy"] = await call("set_contact_policy", {"project_key": project, "agent_name": "BlueLake",
                                                              "policy": "open", "registration_token": tb})
            senders = [(await call("register_agent", {"project_key": project, "program": "codex-cli",
                                                      "model": "gpt-5"}))["structured"] for _ in range(SESSIONS)]

    async def session(agent):
        # one session of their load pattern: its own connection, N sends to BlueLake
        ids = []
        async with streamablehttp_client(url) as (read, write, _):
            async with ClientSession(read, write) as s:
                await s.initialize()
                for n in range(SENDS):
                    r = await s.call_tool("send_message", {
                        "project_key": project, "sender_name": agent["name"],
                        "sender_token": agent["registration_token"], "to": ["BlueLake"],
                        "subject": f"load {n}", "body_md": "x"})
                    if not r.isError:
                        ids.append(r.structuredContent["deliveries"][0]["payload"]["id"])
        return ids

    acked = await asyncio.gather(*(session(a) for a in senders))
    out["acked"] = [i for ids in acked for i in ids]
    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write) as s:
            await s.initialize()
            r = await s.call_tool("fetch_inbox", {"project_key": project, "agent_name": "BlueLake",
                                                  "registration_token": tb, "limit": 1000})
            out["after"] = [m["id"] for m in r.structuredContent["result"]]
    print(json.dumps(out))

SESSIONS, SENDS = 30, 3

asyncio.run(main(sys.argv[1], sys.argv[2]))
'''


def test_their_pinned_sdk_client_works_against_the_profile(tmp_path: Path) -> None:
    venv = tmp_path / "sdk125"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "mcp==1.25.0"], check=True, timeout=600,
                   capture_output=True)
    (tmp_path / "client.py").write_text(CLIENT)
    home = new_home(tmp_path)
    with serving(tmp_path, home.layout.root) as server:
        done = subprocess.run([str(venv / "bin" / "python"), str(tmp_path / "client.py"), server.line("agent-mail"),
                               "/data/projects/backend"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "send_message" in out["tools"] and out["project"]["structured"]["slug"] == "data-projects-backend"
    sent = out["sent"]["structured"]["deliveries"][0]["payload"]
    inbox = out["inbox"]["structured"]["result"]
    assert [m["id"] for m in inbox] == [sent["id"]] and inbox[0]["from"] == sent["from"]
    assert json.loads(out["inbox"]["text"][0]) == inbox  # their list shape: the bare array as text
    assert out["refused"]["is_error"] and out["refused"]["text"][0].startswith("Error calling tool 'fetch_inbox': "
                                                                               "forbidden: ")
    # their load pattern through their client: 30 concurrent sessions sending; every acknowledged message arrives once
    assert not out["policy"]["is_error"]
    assert len(out["acked"]) == 30 * 3 and len(set(out["acked"])) == len(out["acked"])
    assert sorted(i for i in out["after"] if i in set(out["acked"])) == sorted(out["acked"])
    assert len(out["after"]) == len(set(out["after"]))

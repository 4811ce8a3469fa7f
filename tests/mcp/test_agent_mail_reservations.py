"""The agent-mail profile's file reservations through the MCP SDK's client (`dovecote mcp --profile agent-mail`
on stdio, `/agent-mail/mcp` of a real `dovecote serve`): reserve, a conflict granted with its conflicts listed,
renew, release, each a lease `dovecote lease list` shows."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client, StdioServerParameters
from test_agent_mail_profile import PROJECT, Call, ok, profile_client, refused

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.mcp import agentmail
from dovecote.ops.agentmail import names
from helpers import DOVECOTE_BIN, cli_env, new_home, run_cli
from serverhelpers import serving

pytestmark = pytest.mark.anyio

SLUG = "data-projects-backend"


def listed(tmp_path: Path, home: Dovecote, *extra: str) -> list[dict[str, Any]]:
    """What `dovecote lease list --json` shows (a real CLI run)."""
    out = run_cli(tmp_path, "lease", "list", "--json", *extra, home=home.layout.root)
    assert out.returncode == 0, out.stderr
    found: list[dict[str, Any]] = orjson.loads(out.stdout)["leases"]
    return found


async def reservations(call: Call, tmp_path: Path, home: Dovecote) -> None:
    """Their reservation flow (notes section 3), two agents, every step checked against the leases."""
    ok(await call("ensure_project", {"human_key": PROJECT}))
    red, grey = [ok(await call("register_agent", {"project_key": PROJECT, "program": "p", "model": "m",
                                                  "name": n})) for n in ("RedFox", "GreyWolf")]
    t1, t2 = red["registration_token"], grey["registration_token"]
    mine = {"project_key": PROJECT, "agent_name": "RedFox", "registration_token": t1}

    got = ok(await call("file_reservation_paths", {**mine, "paths": ["src/**", "./docs/a.md"], "ttl_seconds": 3600,
                                                   "exclusive": True, "reason": "br-123"}))
    assert got["conflicts"] == [] and [g["path_pattern"] for g in got["granted"]] == ["src/**", "docs/a.md"]
    first = got["granted"][0]
    assert isinstance(first["id"], int) and first["exclusive"] is True and first["reason"] == "br-123"
    assert first["expires_ts"].endswith("+00:00")
    shown = listed(tmp_path, home)
    assert {(x["entity"], tuple(x["globs"]), names.int_id(x["id"])) for x in shown} == {
        (f"{SLUG}.RedFox", (g["path_pattern"],), g["id"]) for g in got["granted"]}

    # another agent's exclusive request on a held path: granted, with the conflict named (advisory, as theirs)
    theirs = ok(await call("file_reservation_paths", {"project_key": PROJECT, "agent_name": "GreyWolf",
                                                      "registration_token": t2, "paths": ["src/api/x.py"]}))
    assert len(theirs["granted"]) == 1 and theirs["granted"][0]["path_pattern"] == "src/api/x.py"
    assert theirs["conflicts"] == [{"path": "src/api/x.py", "holders": [
        {"agent": "RedFox", "path_pattern": "src/**", "exclusive": True, "expires_ts": first["expires_ts"]}]}]
    grey_lease = [x for x in listed(tmp_path, home) if x["entity"] == f"{SLUG}.GreyWolf"]
    assert len(grey_lease) == 1 and grey_lease[0]["advisory"] is True

    # asking again for a path one holds renews that lease: same id
    again = ok(await call("file_reservation_paths", {**mine, "paths": ["src/**"], "ttl_seconds": 7200}))
    assert again["granted"][0]["id"] == first["id"] and again["granted"][0]["expires_ts"] > first["expires_ts"]
    assert again["conflicts"] == []  # GreyWolf's lease overlaps, but RedFox's own renewal asks nothing new

    renewed = ok(await call("renew_file_reservations", {**mine, "extend_seconds": 600,
                                                        "file_reservation_ids": [first["id"]]}))
    assert renewed["renewed"] == 1
    (row,) = renewed["file_reservations"]
    assert row["id"] == first["id"] and row["path_pattern"] == "src/**"
    assert row["old_expires_ts"] == again["granted"][0]["expires_ts"] < row["new_expires_ts"]
    all_renewed = ok(await call("renew_file_reservations", mine))
    assert all_renewed["renewed"] == 2

    refused(await call("release_file_reservations", {**mine, "registration_token": t2}),
            "release_file_reservations", "forbidden: ")  # another's token: the one rule
    refused(await call("file_reservation_paths", {**mine, "paths": []}), "file_reservation_paths",
            "Invalid argument value: ")
    refused(await call("renew_file_reservations", {**mine, "paths": []}), "renew_file_reservations",
            "Invalid argument value: ")

    released = ok(await call("release_file_reservations", {**mine, "paths": ["src/**"]}))
    assert released["released"] == 1 and released["released_at"].endswith("+00:00")
    assert ok(await call("release_file_reservations", {**mine, "paths": ["src/**"]}))["released"] == 0
    active = listed(tmp_path, home)
    assert sorted(tuple(x["globs"]) for x in active) == [("docs/a.md",), ("src/api/x.py",)]
    ended = [x for x in listed(tmp_path, home, "--include-ended") if x["globs"] == ["src/**"]]
    assert len(ended) == 1 and ended[0]["state"] == "released"  # a release is a letter: nothing deleted
    assert ok(await call("release_file_reservations", mine))["released"] == 1  # no filter: all of one's own
    home.refresh()
    checked = home.verify()
    assert checked.ok, checked


@pytest.fixture
def home(tmp_path: Path) -> Dovecote:
    return new_home(tmp_path)


async def test_reservations_over_stdio(home: Dovecote, tmp_path: Path) -> None:
    params = StdioServerParameters(command=str(DOVECOTE_BIN), env=cli_env(tmp_path, home.layout.root),
                                   args=["--home", str(home.layout.root), "mcp", "--profile", "agent-mail"])
    async with Client(params) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert tools["file_reservation_paths"].input_schema["properties"]["ttl_seconds"]["default"] == 3600
        assert tools["renew_file_reservations"].input_schema["properties"]["extend_seconds"]["default"] == 1800
        await reservations(c.call_tool, tmp_path, home)


async def test_reservations_over_streamable_http_of_a_real_serve(home: Dovecote, tmp_path: Path) -> None:
    with serving(tmp_path, home.layout.root) as server:
        async with profile_client(server.line("agent-mail")) as c:
            await reservations(c.call_tool, tmp_path, home)


async def test_a_tokenless_reservation_writes_nothing(home: Dovecote, tmp_path: Path) -> None:
    with serving(tmp_path, home.layout.root) as server:
        async with profile_client(server.line("agent-mail")) as c:
            ok(await c.call_tool("ensure_project", {"human_key": PROJECT}))
            ok(await c.call_tool("register_agent", {"project_key": PROJECT, "program": "p", "model": "m",
                                                    "name": "RedFox"}))
            for tool, extra in (("file_reservation_paths", {"paths": ["src/**"]}), ("renew_file_reservations", {}),
                                ("release_file_reservations", {})):
                refused(await c.call_tool(tool, {"project_key": PROJECT, "agent_name": "RedFox", **extra}), tool,
                        "unauthorized: ")
    assert listed(tmp_path, home, "--include-ended") == []


def test_the_reservation_tools_keep_the_catalog_small() -> None:
    assert {"file_reservation_paths", "renew_file_reservations", "release_file_reservations"} <= set(
        agentmail.CATALOG)
    assert agentmail.tokens() < 4000


def test_a_renewal_extends_from_the_old_expiry_by_at_least_a_minute(tmp_path: Path) -> None:
    from test_agent_mail_calls import PROJECT as REPO
    from test_agent_mail_calls import agent, call

    dc = new_home(tmp_path)
    token = agent(dc, "RedFox")["registration_token"]
    mine = {"project_key": REPO, "agent_name": "RedFox", "registration_token": token}
    got = call(dc, "file_reservation_paths", **mine, paths=["src/a.py", "src/b.py"], ttl_seconds=600)
    a, b = (g["id"] for g in got["granted"])
    renewed = call(dc, "renew_file_reservations", **mine, extend_seconds=5, file_reservation_ids=[b])
    (row,) = renewed["file_reservations"]
    old, new = (datetime.fromisoformat(row[k]) for k in ("old_expires_ts", "new_expires_ts"))
    assert row["id"] == b and 60 <= (new - old).total_seconds() <= 62  # from the old expiry, not from now
    assert call(dc, "renew_file_reservations", **mine, paths=["nothing/held"])["renewed"] == 0
    assert call(dc, "release_file_reservations", **mine, file_reservation_ids=[a])["released"] == 1
    assert [x.globs for x in dc.leases().leases] == [["src/b.py"]]
    other = agent(dc, "GreyWolf")["registration_token"]
    with pytest.raises(Refusal) as e:  # another agent's token reserves nothing for RedFox
        call(dc, "file_reservation_paths", **{**mine, "registration_token": other}, paths=["x"])
    assert e.value.reason == "forbidden"


def test_a_ttl_past_the_longest_lease_is_refused_not_a_traceback(tmp_path: Path) -> None:
    from test_agent_mail_calls import PROJECT as REPO
    from test_agent_mail_calls import agent, call

    dc = new_home(tmp_path)
    token = agent(dc, "RedFox")["registration_token"]
    with pytest.raises(Refusal) as e:
        call(dc, "file_reservation_paths", project_key=REPO, agent_name="RedFox", registration_token=token,
             paths=["src"], ttl_seconds=10**15)
    assert e.value.reason == "invalid_field" and dc.leases().leases == []

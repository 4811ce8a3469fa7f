"""The agent-mail profile's calls on a handle, and its faces' edges: who may enrol, what is refused and how it
reads, and that a profile is never mail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote, Principal
from dovecote.mcp import agentmail
from dovecote.mcp.agentmail_tools import CATALOG
from dovecote.mcp.http import agent_mail_app
from dovecote.ops.agentmail import names
from helpers import new_home, run_cli
from serverhelpers import serving

PROJECT = "/srv/repo"
LOCAL = Principal("alice", "operator", local=True)


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return new_home(tmp_path)


def call(dc: Dovecote, tool: str, p: Principal | None = None, **args: Any) -> Any:
    """One call as the face makes it: decoded by the tool's struct, the roster read again, the call."""
    t = CATALOG[tool]
    decoded = agentmail.decode(t, args)
    dc.refresh()
    return t.call(dc, p, decoded)


def reason(dc: Dovecote, tool: str, p: Principal | None = None, **args: Any) -> str:
    with pytest.raises(Refusal) as e:
        call(dc, tool, p, **args)
    return e.value.reason


def agent(dc: Dovecote, name: str | None = None, p: Principal | None = None) -> dict[str, Any]:
    call(dc, "ensure_project", p, human_key=PROJECT)
    extra = {"name": name} if name else {}
    found: dict[str, Any] = call(dc, "register_agent", p, project_key=PROJECT, program="p", model="m", **extra)
    return found


def test_an_agent_is_the_entity_its_project_and_name_make(dc: Dovecote) -> None:
    a = agent(dc, "GreenCastle")
    assert [e.id for e in dc.entities()] == ["srv-repo.GreenCastle"]
    assert a["id"] == names.hashed_int("srv-repo.GreenCastle") and a["project_id"] == names.hashed_int("srv-repo")
    assert dc.authenticate(a["registration_token"]) == Principal("srv-repo.GreenCastle", "agent")


def test_generated_names_are_adjective_noun_and_never_reused(dc: Dovecote) -> None:
    made = {agent(dc)["name"] for _ in range(12)}
    assert len(made) == 12
    assert all(any(n.startswith(a) and n[len(a):] in names.NOUNS for a in names.ADJECTIVES) for n in made)


def test_a_profile_is_never_mail(dc: Dovecote) -> None:
    a = agent(dc, "GreenCastle")
    call(dc, "set_contact_policy", project_key=PROJECT, agent_name="GreenCastle", policy="open",
         registration_token=a["registration_token"])
    inbox = dc.inbox(entity_id="srv-repo.GreenCastle", include_terminal=True)
    assert inbox.items == [] and sum(inbox.counts.values()) == 0
    assert dc.verify().ok  # the caches rebuilt from the ledgers read the same


def test_enrolment_is_the_operators_the_local_users_or_a_tokenless_loopback_callers(dc: Dovecote) -> None:
    a = agent(dc, "GreenCastle")  # tokenless
    agent(dc, "BlueLake", LOCAL)
    mine = dc.authenticate(a["registration_token"])
    assert reason(dc, "register_agent", mine, project_key=PROJECT, program="p", model="m", name="New") == "forbidden"
    assert reason(dc, "ensure_project", mine, human_key="/srv/other") == "forbidden"
    assert call(dc, "ensure_project", mine, human_key=PROJECT)["slug"] == "srv-repo"  # a known one: a read


def test_registering_again_needs_the_agents_own_token(dc: Dovecote) -> None:
    a = agent(dc, "GreenCastle")
    again = {"project_key": PROJECT, "program": "p2", "model": "m2", "name": "greencastle"}
    assert reason(dc, "register_agent", None, **again) == "unauthorized"
    b = agent(dc, "BlueLake")
    assert reason(dc, "register_agent", None, registration_token=b["registration_token"], **again) == "forbidden"
    updated = call(dc, "register_agent", None, registration_token=a["registration_token"], **again)
    assert (updated["name"], updated["program"], updated["registration_token"]) == (
        "GreenCastle", "p2", a["registration_token"])
    assert updated["inception_ts"] == a["inception_ts"] and len(dc.entities()) == 2
    fresh = call(dc, "register_agent", LOCAL, **again)["registration_token"]  # the local operator: a new one
    assert fresh != a["registration_token"] and dc.authenticate(fresh).entity == "srv-repo.GreenCastle"


def test_what_dovecote_does_not_keep_is_refused_not_dropped(dc: Dovecote) -> None:
    a, b = agent(dc, "GreenCastle"), agent(dc, "BlueLake")
    send = {"project_key": PROJECT, "sender_name": "GreenCastle", "sender_token": a["registration_token"],
            "subject": "s", "body_md": "b"}
    assert reason(dc, "send_message", to=["BlueLake"], topic="build", **send) == "unsupported"
    assert reason(dc, "send_message", to=["BlueLake"], attachment_paths=["/etc/passwd"], **send) == "server_file"
    assert reason(dc, "send_message", to=["BlueLake@other"], **send) == "unsupported"
    assert reason(dc, "send_message", to=["BlueLake"], importance="critical", **send) == "invalid_field"
    for policy in ("contacts_only", "block_all"):
        assert reason(dc, "set_contact_policy", project_key=PROJECT, agent_name="BlueLake", policy=policy,
                      registration_token=b["registration_token"]) == "unsupported"
    assert call(dc, "set_contact_policy", project_key=PROJECT, agent_name="BlueLake", policy="whatever",
                registration_token=b["registration_token"])["policy"] == "auto"  # theirs: unknown is auto
    assert dc.inbox(entity_id="srv-repo.BlueLake").items == []  # nothing was sent by a refused call


def test_a_tokenless_write_is_refused_and_names_the_token(dc: Dovecote) -> None:
    agent(dc, "GreenCastle")
    agent(dc, "BlueLake")
    with pytest.raises(Refusal) as e:
        call(dc, "send_message", project_key=PROJECT, sender_name="GreenCastle", to=["BlueLake"], subject="s",
             body_md="b")
    assert e.value.reason == "unauthorized"


def test_fetch_inbox_filters_as_theirs(dc: Dovecote) -> None:
    a, b = agent(dc, "GreenCastle"), agent(dc, "BlueLake")
    for subject, importance in (("one", "normal"), ("two", "urgent"), ("three", "high")):
        call(dc, "send_message", project_key=PROJECT, sender_name="GreenCastle", sender_token=a["registration_token"],
             to=["BlueLake"], cc=[], subject=subject, body_md=subject, importance=importance)
    fetch = {"project_key": PROJECT, "agent_name": "BlueLake", "registration_token": b["registration_token"]}
    every = call(dc, "fetch_inbox", **fetch)
    assert {m["subject"] for m in every} == {"one", "two", "three"} and "body_md" not in every[0]
    assert {m["subject"] for m in call(dc, "fetch_inbox", urgent_only=True, **fetch)} == {"two", "three"}
    assert len(call(dc, "fetch_inbox", limit=1, **fetch)) == 1
    assert call(dc, "fetch_inbox", since_ts="2999-01-01T00:00:00Z", **fetch) == []
    assert call(dc, "fetch_inbox", topic="x", **fetch) == []
    assert reason(dc, "fetch_inbox", since_ts="yesterday-ish", **fetch) == "invalid_field"
    assert call(dc, "search_messages", project_key=PROJECT, query="*", agent_name="BlueLake",
                registration_token=b["registration_token"]) == []


def test_failures_read_as_theirs() -> None:
    bad = agentmail.failure("fetch_inbox", Refusal("invalid_field", "limit must be at least 1"))
    assert bad == ("Error calling tool 'fetch_inbox': Invalid argument value: invalid_field: limit must be at "
                   "least 1. Check that all parameters have valid values.")
    with pytest.raises(agentmail.ArgumentError) as e:
        agentmail.decode(CATALOG["send_message"], {"project_key": "p", "sender_name": "s", "to": "x",
                                                   "subject": "s", "body_md": "b"})
    assert str(e.value).startswith("1 validation error for call[send_message]\nto\n  ")
    empty = agentmail.rendered(CATALOG["fetch_inbox"], [])
    assert empty.content == [] and empty.structured_content == {"result": []}


@pytest.mark.anyio
async def test_a_server_off_loopback_asks_every_request_for_a_token(dc: Dovecote) -> None:
    app = agent_mail_app(dc, tokenless=False)
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as h:
        r = await h.post(agentmail.PATH, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 401 and r.json()["reason"] == "unauthorized"


@pytest.mark.anyio
async def test_a_read_only_serve_does_not_mount_the_profile(dc: Dovecote, tmp_path: Path) -> None:
    with serving(tmp_path, dc.layout.root, "--read-only") as server:
        assert not any(x.strip().startswith("agent-mail:") for x in server.lines)
        async with httpx2.AsyncClient(timeout=30) as h:
            r = await h.post(server.url + agentmail.PATH, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 404


def test_the_cli_refuses_an_unknown_profile_or_the_profile_over_mcp_http(dc: Dovecote, tmp_path: Path) -> None:
    for args in (["--profile", "nope"], ["--profile", "agent-mail", "--http"]):
        out = run_cli(tmp_path, "mcp", *args, home=dc.layout.root)
        assert out.returncode == 2 and out.stderr.startswith(b"Error: invalid_field") and b"Traceback" not in out.stderr



def test_a_generated_name_taken_meanwhile_is_drawn_again(dc: Dovecote, monkeypatch: pytest.MonkeyPatch) -> None:
    call(dc, "ensure_project", human_key=PROJECT)
    real, tried = dc.add_entity, []

    def first_taken(v: Any) -> Any:
        tried.append(v.entity_id)
        if len(tried) == 1:  # another registration took this name between the read and the add
            raise Refusal("duplicate_entity", f"entity {v.entity_id!r} is already in the roster")
        return real(v)

    monkeypatch.setattr(dc, "add_entity", first_taken)
    a = call(dc, "register_agent", project_key=PROJECT, program="p", model="m")
    assert len(tried) == 2 and tried[1] == f"srv-repo.{a['name']}"
    given = {"project_key": PROJECT, "program": "p", "model": "m", "name": "Taken"}
    tried.clear()
    assert reason(dc, "register_agent", **given) == "duplicate_entity"  # a name given is never swapped

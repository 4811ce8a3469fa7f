"""Who may call what, on every face, from tables that fail when a route or a tool is added without its rule.

- Every REST route has an example request here and an ``access`` in the route table; each caller (no token,
  an agent token of the box's entity, an agent token of another entity, an operator token) gets what that
  access promises, on a loopback server and on one open to the network.
- ``--read-only`` refuses a REST route, and an MCP tool, exactly when ``verbs.writes`` says its verb (with
  that input) writes: one deny list, every face.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from starlette.testclient import TestClient

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote, Principal
from dovecote.http import rest
from dovecote.http.app import create_app
from dovecote.mcp.server import Face
from dovecote.mcp.tools import TOOLS, Views
from dovecote.model.results import builtins
from dovecote.model.vocab_delivery import SendType
from dovecote.verbs import Inbox
from helpers import rep
from serverhelpers import ENTITY, SENDER, assert_error_shape, served_home

pytestmark = pytest.mark.files_only

REF = "{ref}"  # the first item of ENTITY's inbox, filled in per home
CASE = "{case}"  # the case of a report with a symptom filed in each home (``home``), and that report's id
REPORT = "{report}"
TASK = "{task}"  # a task delivered to ENTITY (what an ack answers), filled in per home
VNEXT = "{vnext}"  # a vNext mailbox folder on this machine (what import_vnext reads)
MISSION = "{mission}"  # a mission posted in each home (issue 11)
NEW_MISSION = "{new_mission}"  # a mission id no caller has posted yet, filled in per caller

#: Route name -> (path parameters, query, JSON body). A route missing here fails the first test.
EXAMPLES: dict[str, tuple[dict[str, str], dict[str, str], dict[str, Any] | None]] = {
    "boxes": ({}, {}, None),
    "sweep": ({}, {"all": "true"}, None),
    "box": ({"address": f"entity:{ENTITY}"}, {}, None),
    "projects": ({}, {}, None),
    "entities": ({}, {}, None),
    "inbox": ({"entity_id": ENTITY}, {}, None),
    "item": ({"entity_id": ENTITY, "ref": REF}, {}, None),
    "wait": ({"entity_id": ENTITY}, {"timeout": "0"}, None),
    "search": ({}, {"query": "rebuild", "entity_id": ENTITY}, None),
    "doctor": ({}, {}, None),
    "needs": ({}, {}, None),
    "send": ({"recipient": ENTITY}, {}, {"subject": "hello"}),
    "draft": ({"recipient": ENTITY}, {}, {"subject": "a draft"}),
    "outbox_send": ({}, {}, {}),
    "move": ({"entity_id": ENTITY, "ref": REF, "kind": "seen"}, {}, {}),
    "reply": ({"entity_id": ENTITY, "ref": REF}, {}, {"recipient": SENDER, "subject": "re: from the box"}),
    "report": ({}, {}, {"tool": "seek", "class": "bug", "what": "w", "repo": "atlas"}),
    "distribute": ({}, {}, {}),
    "cases": ({}, {"box": "project:atlas"}, None),
    "case": ({"fingerprint": CASE}, {}, None),
    "receipt": ({}, {}, {"answers": [REPORT], "disposition": "moot"}),
    "claims": ({}, {}, None),
    "claims_labels": ({}, {}, {}),
    "sentinels": ({}, {}, {"timeout": 5}),
    "monitors": ({}, {}, None),
    "monitor_add": ({}, {}, {"name": "nightly", "expect": "tool=seek", "every": "1d"}),
    "hook_event": ({}, {}, {"event": "post-tool", "payload": {"session_id": "s1", "tool_name": "mcp__x"}}),
    # -- delivery (issue 9)
    "send_all": ({}, {}, {"to_all": True, "type": "task", "work_item_id": "wi-1", "subject": "to everyone"}),
    "ack": ({"entity_id": ENTITY}, {}, {"ref": TASK}),
    "trackers": ({}, {"entity_id": ENTITY}, None),
    "status": ({}, {}, None),
    "presence": ({}, {}, None),
    "presence_beat": ({}, {}, {"agent": ENTITY}),
    "intake": ({}, {}, {}),
    "mailman": ({}, {}, {}),
    # -- missions (issue 11); the human gestures are no route
    "missions": ({}, {"project": "atlas"}, None),
    "mission": ({"mission_id": MISSION}, {}, None),
    "mission_post": ({}, {}, {"letter": {
        "schema": "dovecote-mission-v1", "mission_id": NEW_MISSION, "mission_seq": 1, "block_id": "sb_x",
        "brain_ref": "atlas", "seat": "hand", "capability": "build-runner", "phase": "judging", "synthetic": True,
        "started_at": "2026-07-09T00:00:00Z", "updated_at": "2026-07-09T00:00:00Z"}}),
    "blocks": ({}, {}, None),
    "block_add": ({}, {}, {"block_id": "sb_beta", "project": "atlas"}),
    "block_bump": ({"block_id": "sb_alpha"}, {}, {"project": "atlas"}),
    # advisory file leases: each caller takes, renews and releases ENTITY's (the operator's for it too)
    "leases": ({}, {}, None),
    "lease_take": ({"entity_id": ENTITY}, {}, {"globs": ["src/**"]}),
    "lease_renew": ({"entity_id": ENTITY}, {}, {}),
    "lease_release": ({"entity_id": ENTITY}, {}, {}),
}

#: What each access promises each caller: a 2xx, or the refusal keyword.
PROMISES: dict[str, dict[str, str]] = {
    "open": {"none": "ok", "own": "ok", "other": "ok", "operator": "ok"},
    "own": {"none": "ok", "own": "ok", "other": "forbidden", "operator": "ok"},
    "token": {"none": "unauthorized", "own": "ok", "other": "ok", "operator": "ok"},
    "own_token": {"none": "unauthorized", "own": "ok", "other": "forbidden", "operator": "ok"},
    "recipient": {"none": "unauthorized", "own": "ok", "other": "forbidden", "operator": "not_recipient"},
    "operator_read": {"none": "ok", "own": "forbidden", "other": "forbidden", "operator": "ok"},
    "operator": {"none": "unauthorized", "own": "forbidden", "other": "forbidden", "operator": "ok"},
}


def home(tmp_path: Path) -> tuple[Dovecote, dict[str, str]]:
    """``served_home`` with one report that has a symptom (so a case), and the values of the placeholders."""
    dc = served_home(tmp_path)
    ((report, _),) = dc.report([rep("empty answer over data that exists", repo="atlas", tool="north",
                                    klass="honesty")])
    ref = builtins(dc.inbox(Inbox(entity_id=ENTITY)))["items"][0]["id"]
    task = dc.send(verbs.Send(recipient=ENTITY, type=SendType.task, work_item_id="wi-1", subject="do it"),
                   actor=SENDER)
    dc.block_add(verbs.BlockAdd(block_id="sb_alpha", project="atlas"))
    posted = builtins(dc.mission_post(verbs.MissionPost(
        letter=_fill(EXAMPLES["mission_post"][2], {NEW_MISSION: MISSION_ID})["letter"]), actor=SENDER))
    return dc, {REF: ref, CASE: builtins(dc.cases())["cases"][0]["fingerprint"], REPORT: report,
                TASK: task.to_dict()["deliveries"][0]["id"], MISSION: posted["mission_id"]}


MISSION_ID = "msn_00000000000a"
#: Each caller posts its own new mission (two callers posting the same seq 1 would be stale_head).
NEW_MISSIONS = {"none": "msn_00000000000b", "own": "msn_00000000000c", "other": "msn_00000000000d",
                "operator": "msn_00000000000e", "local": "msn_00000000000f"}


def _fill(value: Any, fills: dict[str, str]) -> Any:
    """An example with its placeholders filled in."""
    if isinstance(value, str):
        return fills.get(value, value)
    if isinstance(value, (list, tuple)):
        return type(value)(_fill(x, fills) for x in value)
    if isinstance(value, dict):
        return {k: _fill(x, fills) for k, x in value.items()}
    return value


def test_every_route_has_an_example_and_an_access_rule() -> None:
    assert set(EXAMPLES) == {r.name for r in rest.ROUTES}, "a route without a row here has no checked rule"
    assert {r.access for r in rest.ROUTES} <= set(PROMISES) == set(rest.ACCESS)


def _request(client: TestClient, route: rest.Route, fills: dict[str, str], headers: dict[str, str]) -> Any:
    path_params, query, body = _fill(EXAMPLES[route.name], fills)
    path = "/api/v1" + route.template.format(**path_params)
    if route.method == "POST":
        return client.post(path, params=query, json=body, headers=headers)
    return client.get(path, params=query, headers=headers)


def _callers(dc: Dovecote) -> dict[str, dict[str, str]]:
    def bearer(entity: str, role: str = "agent") -> dict[str, str]:
        return {"Authorization": f"Bearer {dc.token_issue(entity, role).token}"}

    return {"none": {}, "own": bearer(ENTITY), "other": bearer(SENDER), "operator": bearer(SENDER, "operator")}


@pytest.mark.parametrize("remote", [False, True], ids=["loopback", "remote"])
@pytest.mark.parametrize("route", rest.ROUTES, ids=lambda r: r.name)
def test_each_caller_gets_what_the_routes_access_promises(tmp_path: Path, route: rest.Route, remote: bool) -> None:
    dc, fills = home(tmp_path)
    with TestClient(create_app(dc, remote=remote)) as client:
        for caller, headers in _callers(dc).items():
            want = "unauthorized" if remote and caller == "none" else PROMISES[route.access][caller]
            r = _request(client, route, {**fills, NEW_MISSION: NEW_MISSIONS[caller]}, headers)
            if want == "ok":
                assert r.status_code == route.status, (caller, r.text)
            else:
                assert_error_shape(r, 401 if want == "unauthorized" else 403, want)


def _input(route: rest.Route, fills: dict[str, str]) -> Any:
    """The route's example as its typed input, as the route decodes it."""
    fields, query, body = _fill(EXAMPLES[route.name], fills)
    if route.method == "POST":
        given = body or {}
        return verbs.decode(route.params, {**given, **fields})  # type: ignore[type-var]
    return msgspec.convert({**fields, **query}, route.params, strict=False)


@pytest.mark.parametrize("route", rest.ROUTES, ids=lambda r: r.name)
def test_read_only_refuses_a_route_exactly_when_its_verb_writes(tmp_path: Path, route: rest.Route) -> None:
    dc, fills = home(tmp_path)
    operator = _callers(dc)["operator"]
    with TestClient(create_app(dc, read_only=True)) as client:
        r = _request(client, route, fills, operator)
        if verbs.writes(route.verb, _input(route, fills)):
            assert_error_shape(r, 403, "read_only")
        else:
            assert r.status_code == route.status, r.text


#: Tool name -> example arguments (several for a tool that writes only with some of them, or has views), each
#: with the access it promises every MCP caller (``TOOL_PROMISES``). A tool missing here fails the first test.
TOOL_EXAMPLES: dict[str, list[tuple[dict[str, Any], str]]] = {
    "report": [({"tool": "seek", "class": "bug", "what": "w", "repo": "atlas"}, "token")],
    "sweep": [({"distribute": False}, "open"), ({"distribute": True}, "token")],
    "box": [({"address": "home"}, "open"), ({"address": f"entity:{ENTITY}"}, "own")],
    "doctor": [({}, "open")],
    "send": [({"recipient": ENTITY, "subject": "s"}, "token")],
    "move": [({"kind": "seen", "entity_id": ENTITY, "ref": REF}, "own")],
    "inbox": [({"entity_id": ENTITY}, "own")],
    "show": [({"entity_id": ENTITY, "ref": REF}, "own")],
    "search": [({"query": "rebuild"}, "open"), ({"query": "rebuild", "entity_id": ENTITY}, "own")],
    "wait": [({"entity_id": ENTITY, "timeout": 0}, "own")],
    "ack": [({"entity_id": ENTITY, "ref": TASK}, "recipient")],
    "trackers": [({}, "open"), ({"entity_id": ENTITY}, "own"), ({"view": "presence"}, "open"),
                 ({"view": "status"}, "operator")],
    "cases": [({}, "open"), ({"view": "case", "fingerprint": CASE}, "open"), ({"view": "claims"}, "open"),
              ({"view": "claims", "write_labels": True}, "operator"), ({"view": "monitors"}, "open")],
    "receipt": [({"answers": [REPORT], "disposition": "moot"}, "token")],
    "intake": [({}, "operator")],
    "mailman": [({}, "operator")],
    "presence_beat": [({"agent": ENTITY}, "operator")],
    "sentinels": [({"timeout": 5}, "operator")],
    "monitor_add": [({"name": "nightly", "expect": "tool=seek", "every": "1d"}, "operator")],
    "hook_event": [({"event": "stop", "payload": {"session_id": "s1"}}, "operator")],
    "import_vnext": [({"path": VNEXT}, "local"), ({"path": VNEXT, "write": True}, "local")],
    # missions (issue 11): each caller posts a mission of its own (NEW_MISSION), the reads are views
    "mission_post": [({"letter": EXAMPLES["mission_post"][2]["letter"]}, "token")],
    "missions": [({}, "open"), ({"view": "mission", "mission_id": MISSION}, "open"), ({"view": "blocks"}, "open")],
    "lease": [({}, "open"), ({"action": "take", "entity_id": ENTITY, "globs": ["src/**"]}, "own"),
              ({"action": "renew", "entity_id": ENTITY}, "own"), ({"action": "release", "entity_id": ENTITY}, "own")],
}

#: What each access promises each MCP caller: REST's promise (the one rule), less the tokenless caller (every
#: connection has a principal: stdio binds one, HTTP needs a token), plus the local operator (``dovecote mcp``
#: with no token: the person at this machine), who is an operator, and alone may name a folder on it.
TOOL_PROMISES: dict[str, dict[str, str]] = {
    **{access: {**{c: w for c, w in PROMISES[access].items() if c != "none"}, "local": PROMISES[access]["operator"]}
       for access in ("open", "token", "own", "recipient", "operator")},
    "local": {"own": "forbidden", "other": "forbidden", "operator": "server_file", "local": "ok"},
}
MCP_CALLERS = {"own": Principal(ENTITY, "agent"), "other": Principal(SENDER, "agent"),
               "operator": Principal(SENDER, "operator"), "local": Principal(SENDER, "operator", local=True)}


def test_every_mcp_tool_has_an_example_and_each_view_one() -> None:
    assert set(TOOL_EXAMPLES) == set(TOOLS)
    for name, tool in TOOLS.items():
        if isinstance(tool, Views):
            walked = {args.get(tool.key, tool.label(tool.views[0])) for args, _ in TOOL_EXAMPLES[name]}
            assert walked == {tool.label(t) for t in tool.views}, name
    assert {access for rows in TOOL_EXAMPLES.values() for _, access in rows} <= set(TOOL_PROMISES)


def _mcp_home(tmp_path: Path) -> tuple[Dovecote, dict[str, str]]:
    """``home`` plus an empty vNext mailbox folder (``import_vnext`` reads it)."""
    dc, fills = home(tmp_path)
    vnext = tmp_path / "vnext"
    (vnext / "intake" / "pending").mkdir(parents=True)
    return dc, {**fills, VNEXT: str(vnext)}


def _tool_call(face: Face, name: str, principal: Principal, args: dict[str, Any]) -> Any:
    async def call() -> Any:
        return await face.call(TOOLS[name], principal, args)

    return anyio.run(call)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_each_mcp_caller_gets_what_the_tools_access_promises(tmp_path: Path, name: str) -> None:
    """Every tool (each view, each writing variant) under every caller: ok, or the promised refusal."""
    dc, fills = _mcp_home(tmp_path)
    face = Face(dc)
    for example, access in TOOL_EXAMPLES[name]:
        for caller, principal in MCP_CALLERS.items():
            args = _fill(example, {**fills, NEW_MISSION: NEW_MISSIONS[caller]})
            want = TOOL_PROMISES[access][caller]
            if want == "ok":
                assert isinstance(_tool_call(face, name, principal, args), dict), (caller, args)
            else:
                with pytest.raises(Refusal) as refused:
                    _tool_call(face, name, principal, args)
                assert refused.value.reason == want, (caller, args, refused.value.message())


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_read_only_refuses_an_mcp_tool_exactly_when_its_verb_writes(tmp_path: Path, name: str) -> None:
    dc, fills = _mcp_home(tmp_path)
    face = Face(dc, read_only=True)
    for example, _ in TOOL_EXAMPLES[name]:
        args = _fill(example, {**fills, NEW_MISSION: NEW_MISSIONS["local"]})
        tool, rest = TOOLS[name].pick(args)
        if verbs.writes(tool.name, verbs.decode(tool.verb, rest)):
            with pytest.raises(Refusal) as refused:
                _tool_call(face, name, MCP_CALLERS["local"], args)
            assert refused.value.reason == "read_only"
        else:
            assert isinstance(_tool_call(face, name, MCP_CALLERS["local"], args), dict)


def test_token_and_hook_verbs_are_on_no_remote_face() -> None:
    """Whoever holds a token must not mint, list or revoke tokens, nor write files in a project."""
    operator_work = {"token_issue", "token_list", "token_revoke", "hooks_install"}
    assert operator_work <= set(verbs.VERBS)
    tools = {v.name for t in TOOLS.values() for v in (t.views if isinstance(t, Views) else (t,))}
    assert not operator_work & ({r.verb for r in rest.ROUTES} | tools)


def test_the_move_route_takes_every_move_kind_and_only_those() -> None:
    from dovecote.http.openapi import document

    op = document()["paths"]["/api/v1/entities/{entity_id}/items/{ref}/{kind}"]["post"]
    (kind,) = [p for p in op["parameters"] if p["name"] == "kind"]
    assert kind["in"] == "path" and sorted(kind["schema"]["enum"]) == sorted(k.value for k in verbs.MoveKind)

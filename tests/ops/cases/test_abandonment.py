"""Abandonment: a watched tool failed, nothing watched followed, the session stopped: one letter."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from dovecote.model.results import builtins
from dovecote.model.vocab import ENGINE_AGENT
from dovecote.verbs import EntityAdd
from helpers import cli_env, new_home, run_cli

pytestmark = pytest.mark.files_only

SECRET = "the user's private words"


def call(tool: str, *, failed: bool, session: str = "s1", **more: Any) -> bytes:
    payload = {"session_id": session, "tool_name": tool, "tool_input": {"query": SECRET, "limit": 3},
               "hook_event_name": "PostToolUseFailure" if failed else "PostToolUse",
               "tool_response": {"text": SECRET}, "cwd": "/nowhere", **more}
    return orjson.dumps(payload)


def stop(session: str = "s1") -> bytes:
    return orjson.dumps({"session_id": session, "hook_event_name": "Stop", "stop_hook_active": False,
                         "transcript_path": "/tmp/transcript.jsonl"})


def letters(home: Path) -> list[dict[str, Any]]:
    path = home / "boxes" / "home" / "letters.jsonl"
    return [orjson.loads(x) for x in path.read_bytes().splitlines()] if path.exists() else []


def hook(tmp: Path, home: Path, kind: str, stdin: bytes, *args: str) -> None:
    r = run_cli(tmp, "hook", kind, *args, home=home, stdin=stdin)
    assert r.returncode == 0  # a hook never fails the agent's session


def test_an_error_then_silence_then_stop_mints_one_letter_per_session(tmp_path: Path) -> None:
    home = new_home(tmp_path).layout.root
    hook(tmp_path, home, "post-tool", call("mcp__north__seek", failed=False))
    hook(tmp_path, home, "post-tool", call("mcp__north__seek", failed=True))
    hook(tmp_path, home, "post-tool", call("Bash", failed=False))  # not watched: it is no "further use"
    for _ in range(2):
        hook(tmp_path, home, "stop", stop())
    (letter,) = [d for d in letters(home) if d.get("agent") == ENGINE_AGENT]
    assert letter["class"] == "honesty" and letter["session"] == "s1" and letter["tool"] == "mcp__north__seek"
    assert letter["snippet"] == "mcp__north__seek(limit, query)"
    assert SECRET not in orjson.dumps(letter).decode(), "never any conversation text"
    assert SECRET not in (home / "sessions.jsonl").read_text()


def test_the_same_calls_without_a_stop_mint_nothing(tmp_path: Path) -> None:
    home = new_home(tmp_path).layout.root
    hook(tmp_path, home, "post-tool", call("mcp__north__seek", failed=True))
    assert letters(home) == []


def test_a_watched_call_after_the_error_means_no_abandonment(tmp_path: Path) -> None:
    home = new_home(tmp_path).layout.root
    hook(tmp_path, home, "post-tool", call("mcp__north__seek", failed=True))
    hook(tmp_path, home, "post-tool", call("mcp__north__recall", failed=False))
    hook(tmp_path, home, "stop", stop())
    assert letters(home) == []


def test_sessions_are_apart_and_watch_prefixes_choose_the_tools(tmp_path: Path) -> None:
    home = new_home(tmp_path).layout.root
    hook(tmp_path, home, "post-tool", call("north_cli", failed=True, session="a"))  # not an MCP tool: unwatched
    hook(tmp_path, home, "post-tool", call("north_cli", failed=True, session="b"), "--watch", "north_")
    hook(tmp_path, home, "post-tool", call("mcp__x", failed=False, session="b"))
    hook(tmp_path, home, "post-tool", call("mcp__y", failed=True, session="c",
                                           hook_event_name="PostToolUse", tool_response={"is_error": True}))
    for s in ("a", "b", "c"):
        hook(tmp_path, home, "stop", stop(s))
    assert [d["session"] for d in letters(home) if d.get("agent") == ENGINE_AGENT] == ["c"]


def test_the_abandonment_letter_is_a_witness_of_a_case(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    home = dc.layout.root
    for s in ("s1", "s2"):
        hook(tmp_path, home, "post-tool", call("mcp__north__seek (v2)", failed=True, session=s))
        hook(tmp_path, home, "stop", stop(s))
    assert builtins(dc.cases())["recurrence"] == {"fp:mcp__north__seek/crash": 2}


def test_hooks_install_wires_post_tool_and_stop_in_one_configuration(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    from dovecote.verbs import EntityAdd

    dc.add_entity(EntityAdd(entity_id="ent_a"))
    project = tmp_path / "proj"
    project.mkdir()
    r = run_cli(tmp_path, "hooks", "install", "--agent", "claude-code", "--entity", "ent_a", "--project-dir",
                str(project), home=dc.layout.root)
    assert r.returncode == 0, r.stderr
    hooks = orjson.loads((project / ".claude" / "settings.json").read_bytes())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop"}
    commands = [h["command"] for e in hooks.values() for g in e for h in g["hooks"]]
    assert sum("hook stop" in c for c in commands) == 1, "one stop hook does mail and abandonment"
    assert sum("hook post-tool" in c for c in commands) == 2
    # the installed commands, run as the agent runs them (from the project, its own environment): the failure
    # and the stop of one session mint its abandonment letter, with mail hooks in the same file
    by_event = {e: g[0]["hooks"][0]["command"] for e, g in hooks.items()}
    for event, stdin in (("PostToolUse", call("mcp__north__seek", failed=False)),
                         ("PostToolUseFailure", call("mcp__north__seek", failed=True)), ("Stop", stop())):
        r = subprocess.run(shlex.split(by_event[event]), input=stdin, cwd=project, env=cli_env(tmp_path, None),
                           capture_output=True, check=False, timeout=60)
        assert r.returncode == 0 and b"dovecote hook:" not in r.stderr, (event, r.stderr)
    (letter,) = [d for d in letters(dc.layout.root) if d.get("agent") == ENGINE_AGENT]
    assert letter["session"] == "s1" and letter["tool"] == "mcp__north__seek"


def test_an_operator_relays_the_hooks_over_rest_and_mcp_with_the_same_result(tmp_path: Path) -> None:
    """The hooks on the other faces (``hook_event``): an agent's hook events relayed by an operator
    token mint the same one letter per session, and an agent token may not relay them."""
    import anyio
    from mcp import Client
    from starlette.testclient import TestClient

    from dovecote.http.app import create_app
    from dovecote.mcp.server import build
    from dovecote.model.credentials import Principal
    from dovecote.verbs import TokenIssue, TokenRole

    dc = new_home(tmp_path)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    ops = dc.token_issue(TokenIssue(entity_id="ent_a", role=TokenRole.operator)).token
    agent = dc.token_issue(TokenIssue(entity_id="ent_a")).token
    client = TestClient(create_app(dc))
    url = "/api/v1/hooks/events"

    def relay(token: str, event: str, payload: bytes) -> Any:
        return client.post(url, json={"event": event, "payload": orjson.loads(payload)},
                           headers={"Authorization": f"Bearer {token}"})

    refused = relay(agent, "post-tool", call("mcp__north__seek", failed=True))
    assert refused.status_code == 403 and refused.json()["reason"] == "forbidden"
    assert not (dc.layout.root / "sessions.jsonl").exists()  # refused: nothing recorded
    assert relay(ops, "post-tool", call("mcp__north__seek", failed=True)).json()["watched"] is True
    assert relay(ops, "post-tool", call("Bash", failed=True)).json()["watched"] is False
    first = relay(ops, "stop", stop()).json()["letter"]
    assert isinstance(first, str) and relay(ops, "stop", stop()).json()["letter"] == first  # once per session
    bad = relay(ops, "begin", stop())
    assert bad.status_code == 400 and bad.json()["reason"] == "invalid_field"

    async def over_mcp() -> tuple[Any, Any]:
        async with Client(build(dc, principal=Principal("ent_a", "operator")).server) as c:
            recorded = await c.call_tool("hook_event", {
                "event": "post-tool", "payload": orjson.loads(call("mcp__north__seek", failed=True, session="s2"))})
            stopped = await c.call_tool("hook_event", {"event": "stop", "payload": {"session_id": "s2"}})
        assert not recorded.is_error and not stopped.is_error, (recorded, stopped)
        return recorded.structured_content, stopped.structured_content

    recorded, stopped = anyio.run(over_mcp)
    assert recorded["watched"] is True and isinstance(stopped["letter"], str) and stopped["letter"] != first
    minted = [d for d in letters(dc.layout.root) if d.get("agent") == ENGINE_AGENT]
    assert sorted(d["session"] for d in minted) == ["s1", "s2"]


@pytest.mark.parametrize("event", [["PostToolUseFailure"], {"x": 1}, 7, None])
def test_an_event_name_that_is_no_text_is_no_failure_and_never_raises(event: object) -> None:
    """Found by the deep fuzz: a list as ``hook_event_name`` raised ``unhashable type`` in the hook."""
    from dovecote.ops.cases.abandonment import failed

    assert failed({"hook_event_name": event, "tool_name": "mcp__x__y"}) is False

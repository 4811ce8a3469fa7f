"""The Claude Code plugin and the marketplace the repository is: their files have the documented shapes, the
hooks are the ones ``dovecote hooks install`` writes, and every command the plugin names exists in the CLI
and runs, as Claude Code would run it, in a demo home: each hook with a sample payload on stdin, the MCP
server through the MCP SDK's client, and the ``/inbox`` command's shell line.

Claude Code's documented shapes, as checked here: ``.claude-plugin/marketplace.json`` has a kebab-case
``name``, an ``owner`` with a ``name`` and ``plugins``, each with a kebab-case ``name`` and a ``source``
(``./`` relative to the marketplace root); a plugin's ``.claude-plugin/plugin.json`` has its ``name`` and
holds nothing else of the plugin (components sit at the plugin root: ``commands/``, ``hooks/hooks.json``,
``.mcp.json``); ``hooks.json`` is event -> matcher groups -> ``{"type": "command", "command", "timeout"}``;
``.mcp.json`` servers take ``command`` and ``args``, where Claude Code expands ``${VAR}`` and
``${VAR:-default}`` (an unset variable without a default stays as written); a command is Markdown with
frontmatter, and a ``!`command` `` line runs in a shell before the prompt, if ``allowed-tools`` allows it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer.main
from mcp import Client, StdioServerParameters
from typer.core import TyperGroup

from dovecote._version import __version__
from dovecote.cli.app import app
from dovecote.ops.agents.hooks_config import EVENTS, TIMEOUT, commands, merged
from helpers import DOVECOTE_BIN, cli_env

ROOT = Path(__file__).resolve().parents[2]
MARKETPLACE = ROOT / ".claude-plugin" / "marketplace.json"
PLUGIN = ROOT / "plugins" / "dovecote"
KEBAB = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
#: The hook events Claude Code documents (the plugin may use only these).
HOOK_EVENTS = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "Notification", "UserPromptSubmit", "Stop",
               "SubagentStop", "PreCompact", "SessionStart", "SessionEnd", "PermissionRequest"}
#: The frontmatter keys a command file may carry.
COMMAND_KEYS = {"description", "allowed-tools", "argument-hint", "model", "disable-model-invocation"}
ENTITY = "ent_builder"


def _json(path: Path) -> dict[str, Any]:
    value = json.loads(path.read_text())
    assert isinstance(value, dict), path
    return value


def expand(text: str, env: dict[str, str]) -> str:
    """``${VAR}`` and ``${VAR:-default}`` as Claude Code expands them in ``.mcp.json`` (unset: left as written)."""
    def one(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(3)
        return env[name] if name in env else default if default is not None else m.group(0)

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}", one, text)


def frontmatter(path: Path) -> tuple[dict[str, str], str]:
    """A command file's frontmatter (flat ``key: value`` lines) and its body."""
    text = path.read_text()
    assert text.startswith("---\n"), f"{path.name} has no frontmatter"
    head, _, body = text[4:].partition("\n---\n")
    meta = dict(line.split(": ", 1) for line in head.splitlines() if line.strip())
    return meta, body


def shell_lines(body: str) -> list[str]:
    """The ``!`command` `` lines of a command file: what Claude Code runs before it reads the prompt."""
    return re.findall(r"^!`([^`]+)`$", body, re.M)


def _click_command(argv: list[str]) -> tuple[Any, list[str]]:
    """The CLI command ``argv`` (after ``dovecote``) names, and the options it passes; AssertionError if none."""
    cmd: Any = typer.main.get_command(app)
    words = list(argv)
    while words and isinstance(cmd, TyperGroup) and not words[0].startswith("-"):
        sub = cmd.commands.get(words[0])
        assert sub is not None, f"dovecote has no command {' '.join(argv)!r}"
        cmd, words = sub, words[1:]
    assert not isinstance(cmd, TyperGroup), f"{' '.join(argv)!r} names a group, not a command"
    return cmd, [w for w in words if w.startswith("-")]


def assert_in_cli(line: str) -> None:
    """``line`` runs ``dovecote`` with a command and options the CLI has."""
    argv = shlex.split(line)
    assert argv[0] == "dovecote", line
    cmd, flags = _click_command(argv[1:])
    known = {o for p in cmd.params for o in p.opts}
    assert set(flags) <= known, f"{line}: {set(flags) - known} are not options of it"


def _env(tmp: Path, home: Path, **extra: str) -> dict[str, str]:
    """What Claude Code's shell gives a hook: this dovecote first on PATH, the home, the entity."""
    return cli_env(tmp, home, PATH=f"{DOVECOTE_BIN.parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
                   **extra)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    made = subprocess.run([str(DOVECOTE_BIN), "demo", str(tmp_path / "demo")], env=cli_env(tmp_path, None),
                          capture_output=True, timeout=120, check=False)
    assert made.returncode == 0, made.stderr
    return tmp_path / "demo" / ".dovecote"


def test_the_marketplace_lists_the_plugin_at_its_source() -> None:
    market = _json(MARKETPLACE)
    assert KEBAB.fullmatch(market["name"]), market["name"]
    assert isinstance(market["owner"], dict) and market["owner"]["name"]
    entries = market["plugins"]
    assert isinstance(entries, list) and [e["name"] for e in entries] == ["dovecote"]
    (entry,) = entries
    assert entry["source"] == "./plugins/dovecote" and (ROOT / entry["source"]).resolve() == PLUGIN
    assert entry["version"] == market["metadata"]["version"] == __version__
    assert entry["description"] and entry["license"] == "MIT"


def test_the_plugin_manifest_has_the_documented_shape_and_this_version() -> None:
    manifest = _json(PLUGIN / ".claude-plugin" / "plugin.json")
    assert manifest["name"] == "dovecote" and KEBAB.fullmatch(manifest["name"])
    assert manifest["version"] == __version__, "plugin.json's version is the package's (src/dovecote/_version.py)"
    assert manifest["description"] and manifest["author"]["name"] and manifest["license"] == "MIT"
    assert all(isinstance(k, str) for k in manifest["keywords"])
    assert sorted(p.name for p in (PLUGIN / ".claude-plugin").iterdir()) == ["plugin.json"]  # nothing else there
    for key in ("commands", "hooks", "mcpServers", "agents", "skills"):  # the default places, nothing redirected
        assert key not in manifest, key
    assert sorted(p.name for p in PLUGIN.iterdir()) == [".claude-plugin", ".mcp.json", "commands", "hooks"]
    for md in (PLUGIN / "commands").iterdir():
        assert md.suffix == ".md" and KEBAB.fullmatch(md.stem), md.name


def test_the_plugin_hooks_are_the_ones_hooks_install_writes() -> None:
    """One set of hooks: hooks_config's events, commands and timeout, naming no entity (the hook reads
    ``$DOVECOTE_ENTITY`` when it runs); a change there fails here until hooks/hooks.json follows it."""
    hooks = _json(PLUGIN / "hooks" / "hooks.json")
    assert set(hooks) == {"description", "hooks"} and hooks["description"]
    expected = merged({}, commands("dovecote", None))["hooks"]
    assert hooks["hooks"] == expected, "hooks/hooks.json is stale: write merged({}, commands('dovecote', None))\n" \
        + json.dumps(expected, indent=2)
    assert set(hooks["hooks"]) == {event for event, _ in EVENTS} and set(hooks["hooks"]) <= HOOK_EVENTS
    for event, groups in hooks["hooks"].items():
        for group in groups:
            assert set(group) <= {"matcher", "hooks"}, event
            for handler in group["hooks"]:
                assert handler == {"type": "command", "command": handler["command"], "timeout": TIMEOUT}
                assert_in_cli(handler["command"])


def test_the_mcp_server_is_dovecote_mcp_bound_to_the_entity_in_the_environment() -> None:
    servers = _json(PLUGIN / ".mcp.json")["mcpServers"]
    assert list(servers) == ["dovecote"]
    server = servers["dovecote"]
    assert server == {"command": "dovecote", "args": ["mcp", "--as", "${DOVECOTE_ENTITY}"]}
    assert_in_cli(shlex.join([server["command"], *server["args"]]))


def test_the_inbox_command_runs_dovecote_inbox_and_is_allowed_to() -> None:
    meta, body = frontmatter(PLUGIN / "commands" / "inbox.md")
    assert set(meta) <= COMMAND_KEYS and meta["description"], meta
    lines = shell_lines(body)
    assert lines == ["dovecote inbox"], lines
    allowed = re.findall(r"Bash\(([^)]*):\*\)", meta["allowed-tools"])
    for line in lines:
        assert any(line == p or line.startswith(p + " ") for p in allowed), (line, meta["allowed-tools"])
        assert_in_cli(line)


def _hook(line: str, payload: dict[str, Any], tmp: Path, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", line], input=json.dumps(payload), env=_env(tmp, home, **env), cwd=tmp,
                          capture_output=True, text=True, timeout=60, check=False)


def test_each_hook_runs_with_a_sample_payload_in_a_demo_home(home: Path, tmp_path: Path) -> None:
    hooks = _json(PLUGIN / "hooks" / "hooks.json")["hooks"]
    line = {event: groups[0]["hooks"][0]["command"] for event, groups in hooks.items()}
    base = {"session_id": "sess-1", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path)}
    env = {"DOVECOTE_ENTITY": ENTITY}

    start = _hook(line["SessionStart"], {**base, "hook_event_name": "SessionStart", "source": "startup"},
                  tmp_path, home, **env)
    assert start.returncode == 0 and start.stderr == "", start.stderr
    assert start.stdout.startswith(f"[INBOX: {ENTITY}] 1 new, 1 active, 1 deferred."), start.stdout  # plain text
    prompt = _hook(line["UserPromptSubmit"], {**base, "hook_event_name": "UserPromptSubmit", "prompt": "go on"},
                   tmp_path, home, **env)
    assert (prompt.returncode, prompt.stdout, prompt.stderr) == (0, "", "")  # nothing new since the start
    tool = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    for event, extra in (("PostToolUse", {"tool_response": {"stdout": ""}}), ("PostToolUseFailure",
                                                                               {"error": "exit 1"})):
        done = _hook(line[event], {**base, "hook_event_name": event, **tool, **extra}, tmp_path, home, **env)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), event

    sent = subprocess.run([str(DOVECOTE_BIN), "send", "--from", "ent_ops", "--to", ENTITY, "--subject", "disk full",
                           "--priority", "urgent"], env=cli_env(tmp_path, home), capture_output=True, timeout=60)
    assert sent.returncode == 0, sent.stderr
    stop = _hook(line["Stop"], {**base, "hook_event_name": "Stop", "stop_hook_active": False}, tmp_path, home, **env)
    assert stop.returncode == 0, stop.stderr
    decision = json.loads(stop.stdout)
    assert decision["decision"] == "block" and "disk full" in decision["reason"], decision
    again = _hook(line["Stop"], {**base, "hook_event_name": "Stop", "stop_hook_active": True}, tmp_path, home, **env)
    assert (again.returncode, again.stdout) == (0, "")  # the stop is blocked once, then allowed


def test_a_hook_without_an_entity_fails_open(home: Path, tmp_path: Path) -> None:
    """The demo home has several entities: with DOVECOTE_ENTITY unset the hook cannot know whose mail, says so on
    stderr, prints nothing that could be taken for a decision, and lets the session go on (exit 0)."""
    line = _json(PLUGIN / "hooks" / "hooks.json")["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    r = _hook(line, {"session_id": "s", "hook_event_name": "SessionStart"}, tmp_path, home)
    assert (r.returncode, r.stdout) == (0, "") and "DOVECOTE_ENTITY" in r.stderr, r.stderr


def test_the_inbox_command_line_prints_the_audit(home: Path, tmp_path: Path) -> None:
    (line,) = shell_lines(frontmatter(PLUGIN / "commands" / "inbox.md")[1])
    r = subprocess.run(["sh", "-c", line], env=_env(tmp_path, home, DOVECOTE_ENTITY=ENTITY), cwd=tmp_path,
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"INBOX: {ENTITY} — ") and "Inbound:" in r.stdout and "Deferred:" in r.stdout


@pytest.mark.anyio
async def test_the_mcp_server_starts_as_claude_code_starts_it(home: Path, tmp_path: Path) -> None:
    server = _json(PLUGIN / ".mcp.json")["mcpServers"]["dovecote"]
    env = _env(tmp_path, home, DOVECOTE_ENTITY=ENTITY)
    params = StdioServerParameters(command=server["command"], args=[expand(a, env) for a in server["args"]],
                                   env=env, cwd=tmp_path)
    async with Client(params) as c:
        assert {"inbox", "send", "show", "move"} <= {t.name for t in (await c.list_tools()).tools}
        inbox = await c.call_tool("inbox", {})
        assert not inbox.is_error and inbox.structured_content is not None
        assert inbox.structured_content["entity"] == ENTITY
        other = await c.call_tool("inbox", {"entity_id": "ent_ops"})
        assert other.is_error  # bound to the entity: its own box only


def test_the_mcp_server_without_the_entity_says_which_variable(home: Path, tmp_path: Path) -> None:
    """Claude Code leaves an unset ``${DOVECOTE_ENTITY}`` as written: the server refuses it by name, exit 2."""
    server = _json(PLUGIN / ".mcp.json")["mcpServers"]["dovecote"]
    env = _env(tmp_path, home)
    argv = [server["command"], *(expand(a, env) for a in server["args"])]
    r = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       timeout=60, check=False)
    assert r.returncode == 2 and "unknown_entity" in r.stderr and "${DOVECOTE_ENTITY}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr

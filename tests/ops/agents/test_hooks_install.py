"""``hooks install``: the documented config shape, idempotent, backed up, a dry run writes nothing."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from dovecote.handle.api import Dovecote
from dovecote.ops.agents.hooks_config import EVENTS, is_ours, merged
from dovecote.verbs import EntityAdd
from helpers import DOCS, DOVECOTE_BIN, cli_env, cli_json, run_cli, sh_block, snapshot, tour_block
from mailhelpers import ENTITY, mail_home, send

OURS = {event: f"/x/dovecote --home /h hook {kind} --entity {ENTITY}" for event, kind in EVENTS}


def _project(tmp: Path) -> tuple[Dovecote, Path]:
    """A mail home and an empty project folder beside it."""
    dc = mail_home(tmp)
    project = tmp / "proj"
    project.mkdir()
    return dc, project


def _install(tmp: Path, home: Path, project: Path, *more: str) -> Any:
    return cli_json(tmp, "hooks", "install", "--agent", "claude-code", "--entity", ENTITY,
                    "--project-dir", str(project), "--json", *more, home=home)


def test_claude_code_gets_the_three_hooks_and_they_run_as_written(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    send(dc, "hello agent", priority="high")
    project = tmp_path / "proj"
    project.mkdir()
    out = _install(tmp_path, dc.layout.root, project)
    path = project / ".claude" / "settings.json"
    assert out["path"] == str(path) and out["changed"] and out["backup"] is None
    settings = json.loads(path.read_text())
    assert list(settings["hooks"]) == ["SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop"]
    for event, kind in EVENTS:
        (group,) = settings["hooks"][event]
        (handler,) = group["hooks"]
        assert handler["type"] == "command" and handler["timeout"] == 10
        assert handler["command"].endswith(f"hook {kind} --entity {ENTITY}")
    # the agent runs the command from the project with its own environment: no DOVECOTE_HOME needed
    command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    env = cli_env(tmp_path, None)
    r = subprocess.run(shlex.split(command), input=b'{"session_id": "s"}', cwd=project, env=env,
                       capture_output=True, check=False)
    assert r.returncode == 0 and "[HIGH] hello agent" in r.stdout.decode(), r.stderr


def test_a_second_install_changes_nothing(tmp_path: Path) -> None:
    dc, project = _project(tmp_path)
    _install(tmp_path, dc.layout.root, project)
    before = snapshot(project)
    again = _install(tmp_path, dc.layout.root, project)
    assert again["changed"] is False and again["diff"] == "" and again["backup"] is None
    assert snapshot(project) == before
    text = run_cli(tmp_path, "hooks", "install", "--agent", "claude-code", "--entity", ENTITY,
                   "--project-dir", str(project), home=dc.layout.root)
    assert text.stdout.decode().endswith("already installed, nothing changed\n")


def test_other_settings_are_kept_and_the_old_file_is_backed_up(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    mine = {"model": "opus", "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}],
    }}
    path = project / ".claude" / "settings.json"
    original = (json.dumps(mine) + "\n").encode()
    path.write_bytes(original)
    out = _install(tmp_path, dc.layout.root, project)
    assert re.fullmatch(re.escape(str(path)) + r"\.bak-\d{8}T\d{6}Z", out["backup"])
    assert Path(out["backup"]).read_bytes() == original
    settings = json.loads(path.read_text())
    assert settings["model"] == "opus" and settings["hooks"]["PreToolUse"] == mine["hooks"]["PreToolUse"]
    stops = [h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"]]
    assert stops[0] == "notify-send done" and stops[1].endswith(f"hook stop --entity {ENTITY}") and len(stops) == 2
    # installing for another entity replaces ours in place, never adds a second
    dc.add_entity(EntityAdd(entity_id="ent_two"))
    cli_json(tmp_path, "hooks", "install", "--agent", "claude-code", "--entity", "ent_two",
             "--project-dir", str(project), "--json", home=dc.layout.root)
    stops = [h["command"] for g in json.loads(path.read_text())["hooks"]["Stop"] for h in g["hooks"]]
    assert len(stops) == 2 and stops[1].endswith("hook stop --entity ent_two")
    assert len(list((project / ".claude").glob("settings.json.bak-*"))) == 2  # no backup overwritten


def test_a_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    dc, project = _project(tmp_path)
    r = run_cli(tmp_path, "hooks", "install", "--agent", "claude-code", "--entity", ENTITY,
                "--project-dir", str(project), "--dry-run", home=dc.layout.root)
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    assert text.startswith("--- /dev/null\n+++ ") and '+  "hooks": {' in text and "dry run, nothing written" in text
    assert snapshot(project) == {}


def test_codex_gets_its_hooks_file_and_a_note(tmp_path: Path) -> None:
    dc, project = _project(tmp_path)
    out = cli_json(tmp_path, "hooks", "install", "--agent", "codex", "--entity", ENTITY,
                   "--project-dir", str(project), "--json", home=dc.layout.root)
    path = project / ".codex" / "hooks.json"
    assert out["path"] == str(path) and "codex_hooks = true" in out["notes"][0]
    hooks = json.loads(path.read_text())["hooks"]
    assert list(hooks) == ["SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop"]
    command = hooks["SessionStart"][0]["hooks"][0]["command"]
    assert command.endswith(f"hook session-start --entity {ENTITY} --agent codex")
    assert not (project / ".codex" / "config.toml").exists()
    r = subprocess.run(shlex.split(command), input=b'{"session_id": "s"}', cwd=project, env=cli_env(tmp_path, None),
                       capture_output=True, check=False)
    assert orjson.loads(r.stdout)["hookSpecificOutput"]["additionalContext"] == f"[INBOX: {ENTITY}] Empty.\n"


def test_bad_input_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.json"
    path.write_text("{broken")
    for args, reason in (
        (("--agent", "claude-code", "--entity", ENTITY), b"invalid_json"),
        (("--agent", "cursor", "--entity", ENTITY), b"invalid_field"),
        (("--agent", "claude-code", "--entity", "ent_nobody"), b"unknown_entity"),
    ):
        r = run_cli(tmp_path, "hooks", "install", *args, "--project-dir", str(project), home=dc.layout.root)
        assert r.returncode == 2 and reason in r.stderr and b"Traceback" not in r.stderr
    path.write_text('{"hooks": []}')
    r = run_cli(tmp_path, "hooks", "install", "--agent", "claude-code", "--entity", ENTITY,
                "--project-dir", str(project), home=dc.layout.root)
    assert r.returncode == 2 and b"invalid_field" in r.stderr
    assert path.read_text() == '{"hooks": []}' and sorted(os.listdir(path.parent)) == ["settings.json"]


handler = st.one_of(
    st.builds(lambda c: {"type": "command", "command": c}, st.sampled_from(["lint.sh", "say hi", *OURS.values()])),
    st.just("not a handler"),
)
groups = st.lists(st.one_of(st.builds(lambda hs: {"hooks": hs}, st.lists(handler, max_size=3)), st.just({})),
                  max_size=3)
settings_st = st.builds(lambda d: {"hooks": d}, st.dictionaries(st.sampled_from([e for e, _ in EVENTS] + ["Other"]),
                                                                  groups, max_size=4))


@given(settings_st)
def test_merging_is_idempotent_and_keeps_every_foreign_handler(existing: dict[str, Any]) -> None:
    once = merged(existing, OURS)
    assert merged(once, OURS) == once
    for event, groups_ in once["hooks"].items():
        handlers = [h for g in groups_ if isinstance(g, dict) for h in g.get("hooks", [])]
        ours = [h for h in handlers if isinstance(h, dict) and is_ours(h.get("command"))]
        assert len(ours) == (1 if event in OURS else 0) or event == "Other"
        before = [h for g in existing["hooks"].get(event, []) if isinstance(g, dict) for h in g.get("hooks", [])]
        foreign = [h for h in before if not (isinstance(h, dict) and is_ours(h.get("command")))]
        assert [h for h in handlers if not (isinstance(h, dict) and is_ours(h.get("command")))] == foreign
    assert orjson.dumps(existing)  # never mutated into something unserializable


def test_the_agents_guide_waking_block_runs_as_printed(tmp_path: Path) -> None:
    """The Agents guide's block, run after the tour it says to run first (Getting started's)."""
    work = tmp_path / "work"
    work.mkdir()
    env = cli_env(tmp_path, None)
    env["PATH"] = f"{DOVECOTE_BIN.parent}{os.pathsep}{env['PATH']}"
    script = tour_block(DOCS / "getting-started.md") + sh_block(DOCS / "guides" / "agents.md", "## Waking agents")
    r = subprocess.run(["bash", "-e", "-u", "-o", "pipefail", "-c", script], cwd=work, env=env,
                       capture_output=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    out = r.stdout.decode()
    assert "dct_" in out and "no new mail within 1s" in out and "[INBOX: ent_builder]" in out
    assert (work / ".claude" / "settings.json").is_file()

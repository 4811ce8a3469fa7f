"""``hooks install``: write an agent's hook configuration to call ``dovecote hook``.

Both agents read the same documented shape, event -> matcher groups -> handlers::

    {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "...", "timeout": 10}]}], ...}}

Claude Code reads it from ``<project>/.claude/settings.json`` (next to every
other setting, which is kept as it is), Codex from ``<project>/.codex/hooks.json``
(its hooks engine; older Codex releases turn it on with ``[features]
codex_hooks = true`` in ``config.toml``, which this does not edit). The three
events are SessionStart, UserPromptSubmit, PostToolUse and PostToolUseFailure
(abandonment's record of each tool call) and Stop (mail and abandonment, one hook).

Installing is idempotent: a handler whose command runs ``dovecote ... hook
<kind>`` is ours and is replaced in place, anything else is left alone, and a
file that would not change is not written. A file that changes is first copied
to ``<name>.bak-<UTC time>``; ``dry_run`` only returns the unified diff.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote.errors import Refusal, StoreError
from dovecote.ledger import jsonl as ledger
from dovecote.ops.warm.inbox import entity_address

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: agent -> (folder, file) under the project directory.
AGENTS: dict[str, tuple[str, str]] = {"claude-code": (".claude", "settings.json"), "codex": (".codex", "hooks.json")}
#: (agent event, ``dovecote hook`` kind), in the order they fire.
EVENTS = (
    ("SessionStart", "session-start"), ("UserPromptSubmit", "prompt"),
    # abandonment: every tool call's outcome, success and failure; the Stop hook does both jobs
    ("PostToolUse", "post-tool"), ("PostToolUseFailure", "post-tool"),
    ("Stop", "stop"),
)
#: Seconds the agent gives a hook before cancelling it (the hook answers in well under one).
TIMEOUT = 10
NOTES = {
    "codex": "Codex releases that do not run hooks by default need `[features] codex_hooks = true` in "
             ".codex/config.toml (not written here).",
}
_OURS = re.compile(r"\bhook (session-start|prompt|stop|post-tool)\b")


def is_ours(command: object) -> bool:
    """A handler command this installs (any home, entity or path to dovecote)."""
    return isinstance(command, str) and "dovecote" in command and _OURS.search(command) is not None


def hook_command(prefix: str, kind: str, entity: str | None, agent: str = "claude-code") -> str:
    """The command a handler runs; Codex's names itself, so its output is Codex's JSON form.

    With no ``entity`` the command names none: the hook reads ``$DOVECOTE_ENTITY`` (else the only entity)
    when it runs, which is how the Claude Code plugin, installed once for every project, is told whose mail.
    """
    who = f" --entity {shlex.quote(entity)}" if entity is not None else ""
    tail = " --agent codex" if agent == "codex" else ""
    return f"{prefix} hook {kind}{who}{tail}"


def commands(prefix: str, entity: str | None, agent: str = "claude-code") -> dict[str, str]:
    """Agent event -> the command its handler runs: what ``install`` writes into a project's settings, and
    (``merged({}, commands("dovecote", None))``) what the Claude Code plugin's ``hooks/hooks.json`` holds."""
    return {event: hook_command(prefix, kind, entity, agent) for event, kind in EVENTS}


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise Refusal("invalid_field", f"{where} is not a list; fix it by hand (nothing was written)")
    return value


def merged(existing: dict[str, Any], commands: dict[str, str]) -> dict[str, Any]:
    """``existing`` settings with one handler of ours per event (``commands``: event -> command).

    Pure. Our first handler of an event is replaced where it stands, later
    copies are dropped (with a group they alone filled), other handlers stay.
    """
    out = copy.deepcopy(existing)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise Refusal("invalid_field", "\"hooks\" is not an object; fix it by hand (nothing was written)")
    for event, command in commands.items():
        groups = _list(hooks.setdefault(event, []), f"hooks.{event}")
        handler = {"type": "command", "command": command, "timeout": TIMEOUT}
        placed = False
        kept: list[Any] = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept.append(group)
                continue
            mine = [isinstance(h, dict) and is_ours(h.get("command")) for h in handlers]
            rest = []
            for h, is_mine in zip(handlers, mine, strict=True):
                if not is_mine:
                    rest.append(h)
                elif not placed:
                    rest.append(handler)
                    placed = True
            if rest or not any(mine):
                kept.append({**group, "hooks": rest})
        if not placed:
            kept.append({"hooks": [handler]})
        hooks[event] = kept
    return out


@dataclass(frozen=True, slots=True)
class Installed:
    """What an install did (or, with ``dry_run``, would do)."""

    agent: str
    path: str
    changed: bool
    dry_run: bool
    diff: str
    backup: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "path": self.path, "changed": self.changed, "dry_run": self.dry_run,
                "backup": self.backup, "diff": self.diff, "notes": self.notes}


def _read(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "", {}
    except (OSError, UnicodeDecodeError) as e:
        raise StoreError(f"cannot read {path}: {e}") from e
    if not text.strip():
        return text, {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise Refusal("invalid_json", f"{path} is not valid JSON ({e}); fix it by hand") from None
    if not isinstance(value, dict):
        raise Refusal("invalid_json", f"{path} is not a JSON object; fix it by hand")
    return text, value


def backup_path(path: Path, stamp: str) -> Path:
    """Where a file an install replaces is kept: beside it, named by the time (and a count for a second install in
    that second), never over an earlier backup. The lease guard's install keeps a hook the same way."""
    candidate = path.with_name(f"{path.name}.bak-{stamp}")
    n = 1
    while candidate.exists():  # two installs in one second: never overwrite the first backup
        candidate = path.with_name(f"{path.name}.bak-{stamp}-{n}")
        n += 1
    return candidate


def _refuse_links(path: Path) -> None:
    """Refuse (``unsafe_path``) a ``.claude``/``settings.json`` that is a link, or a folder that is a file.

    A cloned repository can carry ``.claude -> ~/.ssh`` or ``settings.json -> ~/.bashrc``: following
    it would read a file outside the project into the backup and the diff, and write the backup (and,
    through a linked folder, the settings) out there. The link is the person's to remove.
    """
    for p in (path.parent, path):
        if p.is_symlink():
            raise Refusal("unsafe_path", f"{p} is a symbolic link; hooks install never reads or writes through one"
                          " (remove it, or copy its target in its place)")
    if path.parent.exists() and not path.parent.is_dir():
        raise Refusal("unsafe_path", f"{path.parent} is a file where hooks install needs a folder")


def install(
    ctx: Context, agent: str, entity_id: str, project_dir: Path, prefix: str, *, dry_run: bool = False
) -> Installed:
    """Write (or with ``dry_run`` only diff) ``agent``'s hooks calling ``<prefix> hook <kind> --entity E``."""
    if agent not in AGENTS:
        raise Refusal("invalid_field", f"--agent must be one of {', '.join(AGENTS)}, not {agent!r}")
    entity_address(ctx, entity_id)
    if not project_dir.is_dir():
        raise Refusal("invalid_field", f"--project-dir {str(project_dir)!r} is not a directory")
    folder, name = AGENTS[agent]
    path = project_dir.resolve() / folder / name  # where it truly writes: the path it prints has no ``..`` left
    _refuse_links(path)
    old_text, old = _read(path)
    new = merged(old, commands(prefix, entity_id, agent))
    notes = [NOTES[agent]] if agent in NOTES else []
    if new == old:
        return Installed(agent, str(path), False, dry_run, "", notes=notes)
    new_text = json.dumps(new, indent=2, ensure_ascii=False) + "\n"
    diff = "".join(difflib.unified_diff(
        old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
        fromfile=f"{path} (before)" if old_text else "/dev/null", tofile=str(path),
    ))
    if dry_run:
        return Installed(agent, str(path), True, True, diff, notes=notes)
    backup = None
    try:
        if path.exists():
            target = backup_path(path, ctx.now().strftime("%Y%m%dT%H%M%SZ"))
            ledger.write_atomic(target, path.read_bytes())
            backup = str(target)
        ledger.write_atomic(path, new_text.encode("utf-8"))
    except OSError as e:
        raise StoreError(f"cannot write {path}: {e.strerror or e}") from e
    return Installed(agent, str(path), True, False, diff, backup, notes)

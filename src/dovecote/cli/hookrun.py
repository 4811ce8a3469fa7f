"""``dovecote hook session-start|prompt|stop``: what an agent's hook configuration runs.

Two promises shape this module:

* **Fail open.** A hook runs inside someone's agent session; a dovecote
  problem (no home, a bad payload, an unknown entity, a full disk, a bug) must
  never break that session. Whatever happens the process exits 0, prints
  nothing that could be mistaken for a decision, says what went wrong on one
  line of stderr, and appends the same line to ``<home>/cache/hooks.log`` when
  it can.
* **Fast.** It answers within a cold Python start and one inbox read:
  ``cli/entry.py`` routes here before Typer or Rich are imported, and this
  module imports only the handle.

The payload is the JSON the agent sends on stdin (Claude Code and Codex send
``session_id``, ``cwd``, ``hook_event_name``, and ``stop_hook_active`` at a
stop). The entity is ``--entity E``, else ``$DOVECOTE_ENTITY``, else the only
entity in the roster.

What goes on stdout is in the agent's documented form (``--agent``): Claude
Code adds a SessionStart or UserPromptSubmit hook's plain stdout to the
context, so the text is printed as it is. Codex validates hook output as JSON
strictly, so for ``--agent codex`` the text travels as
``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}``
and "nothing to say" (or a failure) is ``{}``. A Stop block is
``{"decision": "block", "reason": ...}`` for both.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

USAGE = ("usage: dovecote [--home H] hook session-start|prompt|stop|post-tool [--entity E] [--agent claude-code|codex]"
         " [--watch PREFIX,...] < payload")
AGENTS = ("claude-code", "codex")
#: hook kind -> the agent's event name (what Codex wants in ``hookSpecificOutput``).
EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "stop": "Stop", "post-tool": "PostToolUse"}
#: Payloads larger than this are not read whole (no agent sends anything near it).
MAX_PAYLOAD = 4 * 1024 * 1024


def parse_args(args: list[str]) -> tuple[str, dict[str, str]]:
    """(kind, {"entity": ..., "agent": ...}) from ``hook`` arguments; ValueError with the usage otherwise."""
    if not args:
        raise ValueError(USAGE)
    kind, rest, opts = args[0], args[1:], {}
    while rest:
        flag = rest.pop(0)
        name, eq, value = flag.partition("=")
        if name in ("--entity", "--agent", "--watch") and (eq or rest):
            opts[name[2:]] = value if eq else rest.pop(0)
        else:
            raise ValueError(f"unexpected argument {flag!r}; {USAGE}")
    if opts.get("agent", AGENTS[0]) not in AGENTS:
        raise ValueError(f"--agent must be one of {', '.join(AGENTS)}; {USAGE}")
    return kind, opts


def agent_of(args: list[str]) -> str:
    """The ``--agent`` named in ``args``, even when the rest of them cannot be parsed."""
    for i, a in enumerate(args):
        value = a.partition("=")[2] if a.startswith("--agent=") else (
            args[i + 1] if a == "--agent" and i + 1 < len(args) else None)
        if value in AGENTS:
            return value
    return AGENTS[0]


def wire(kind: str, text: str, agent: str) -> str:
    """``text`` (what the hook says) in the form ``agent`` reads from a hook's stdout."""
    if agent != "codex":
        return text
    if kind == "stop" or not text:
        return text or "{}\n"
    import orjson

    event = EVENTS.get(kind, kind)
    return orjson.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}).decode() + "\n"


def read_payload(data: bytes) -> dict[str, Any]:
    """The agent's JSON object; an empty stdin is an empty payload (a hook run by hand)."""
    import orjson

    if not data.strip():
        return {}
    value = orjson.loads(data)
    if not isinstance(value, dict):
        raise ValueError("the hook payload on stdin is not a JSON object")
    return value


def _log(home: str | None, line: str) -> None:
    """Append the failure to ``cache/hooks.log`` (best effort: the log is a cache too)."""
    try:
        from dovecote.handle.api import open_home
        from dovecote.util import fileops

        layout = open_home(home).layout
        folder = layout.cache_dir()
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = fileops.open_fd(os.path.join(folder, "hooks.log"), flags, 0o600)
        try:
            fileops.write_all(fd, (line + "\n").encode("utf-8", "backslashreplace"))
        finally:
            fileops.close(fd)
    except Exception:  # failing open includes failing to log
        pass


def answer(home: str | None, args: list[str], stdin: bytes) -> str:
    """What the hook prints; raises on any problem (``main`` turns that into an open failure)."""
    from dovecote.handle.api import Actor, open_home

    kind, opts = parse_args(args)
    payload = read_payload(stdin)
    if kind == "post-tool":  # abandonment's record: no entity, no inbox, prints nothing
        watch = opts["watch"].split(",") if "watch" in opts else []
        open_home(home).hook_post_tool(payload, watch)
        return wire(kind, "", opts.get("agent", AGENTS[0]))
    who = opts.get("entity") or os.environ.get("DOVECOTE_ENTITY") or None
    dc = open_home(home, actor=Actor(entity=who))
    if kind == "stop":  # abandonment first: one stop hook does both, and this part needs no entity
        dc.hook_stop_abandonment(payload)
    target = who or dc.default_entity()
    said = dc.hook(kind, target, payload).stdout
    dc.keep_roster()  # the next hook, a new process too, reads it without tomllib
    return wire(kind, said, opts.get("agent", AGENTS[0]))


def main(home: str | None, args: list[str]) -> None:
    """Run one hook and exit 0, whatever happens (see the module docstring)."""
    try:
        data = sys.stdin.buffer.read(MAX_PAYLOAD) if not sys.stdin.isatty() else b""
        out = answer(home, args, data)
    except BaseException as e:  # fail open: KeyboardInterrupt and SystemExit too
        from dovecote.errors import Refusal
        from dovecote.model.textsafe import one_line

        why = e.message() if isinstance(e, Refusal) else f"{type(e).__name__}: {e}"
        line = f"dovecote hook: {one_line(' '.join(why.split()), 500)} (the agent session goes on)"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except Exception:  # a closed stderr must not fail the hook either
            pass
        _log(home, f"{stamp} {' '.join(args[:1])} {line}")
        out = wire("", "", agent_of(args))  # nothing, in the agent's own spelling of nothing
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except Exception:  # the agent closed the pipe: nothing left to tell it
        pass
    sys.exit(0)

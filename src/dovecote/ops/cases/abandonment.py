"""Abandonment (R11 organ 5): a watched tool failed, nothing watched followed, the session stopped.

The only honest witness is the agent's own hooks: ``hook post-tool`` records
each call to a watched tool (a tool-name prefix from ``--watch``; every MCP
tool, ``mcp__``, by default) in an assistive ledger, ``sessions.jsonl`` in the
home: session id, tool, whether it failed, and the call's shape (the tool's
name and the names of its arguments, never their values and never any
conversation text). At ``hook stop``, if the session's last recorded call
failed, one honesty letter is minted for that session (deduplicated by session
id under the box lock), naming the tool and the shape. No stop, no letter:
silence alone never accuses (CASE-INV-5).

The ledger is assistive, like notify letters: it is no delivery truth and no
case artifact; only the minted letter is, and it is an engine letter like the
others (``ops.cases.engine``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from dovecote.errors import Refusal
from dovecote.ledger import append as ledger_append
from dovecote.ledger import jsonl as ledger
from dovecote.model.addresses import HOME
from dovecote.model.results import Result
from dovecote.ops.cases import engine
from dovecote.roster.routing import route

if TYPE_CHECKING:
    from dovecote.ops.context import Context

SESSIONS_FILE = "sessions.jsonl"
_PREFIX = re.compile(r"[A-Za-z0-9_-]{1,128}")
#: Watched when the hook names no prefix: every MCP tool.
DEFAULT_WATCH = ("mcp__",)
#: The event Claude Code sends for a tool call that failed (PostToolUse is a success).
FAILURE_EVENTS = frozenset({"PostToolUseFailure"})


class HookRelayed(Result, frozen=True):
    """A relayed hook event: a post-tool call (whether it was a watched tool's), or a stop (the letter it
    minted for the session, if any)."""

    event: str
    watched: bool | None
    letter: str | None


def _session(payload: Mapping[str, Any]) -> str | None:
    sid = payload.get("session_id")
    return sid if isinstance(sid, str) and sid else None


def failed(payload: Mapping[str, Any]) -> bool:
    """Whether the call failed, from the fields agents send (never from the answer's text)."""
    event = payload.get("hook_event_name")  # any JSON value: a list or an object is no event name
    if (isinstance(event, str) and event in FAILURE_EVENTS) or payload.get("is_error") is True:
        return True
    if payload.get("error") not in (None, "", False):
        return True
    resp = payload.get("tool_response")
    return isinstance(resp, dict) and (resp.get("is_error") is True or resp.get("isError") is True
                                       or resp.get("error") not in (None, "", False))


def shape(tool: str, payload: Mapping[str, Any]) -> str:
    """``tool(arg, names)``: the argument names only, sorted."""
    args = payload.get("tool_input")
    names = sorted(str(k) for k in args) if isinstance(args, dict) else []
    return f"{tool}({', '.join(names)})"


def check_watch(watch: Sequence[str]) -> None:
    """Prefixes are tool-name text: letters, digits, ``_`` and ``-``, 1 to 128 of them."""
    for prefix in watch:
        if not _PREFIX.fullmatch(prefix):
            raise Refusal("invalid_field", f"--watch takes tool-name prefixes ([A-Za-z0-9_-], 1-128), not {prefix!r}")


def record(ctx: Context, payload: Mapping[str, Any], watch: Sequence[str] = DEFAULT_WATCH) -> bool:
    """Append the call to the assistive ledger if its tool is watched; whether it was."""
    check_watch(watch)
    tool, sid = payload.get("tool_name"), _session(payload)
    if not isinstance(tool, str) or sid is None:  # a hook wired to the wrong event, or run by hand
        raise Refusal("missing_field", "a post-tool payload needs session_id and tool_name")
    if not any(tool.startswith(p) for p in watch or DEFAULT_WATCH):
        return False
    event = {"ts": ctx.now().isoformat(), "session": sid, "tool": tool, "failed": failed(payload),
             "shape": shape(tool, payload)}
    if isinstance(payload.get("cwd"), str):
        event["cwd"] = payload["cwd"]
    ledger_append.append(ledger.LedgerReader(ctx.layout.root / SESSIONS_FILE), [orjson.dumps(event)])
    return True


def last_call(ctx: Context, sid: str) -> dict[str, Any] | None:
    """The session's last recorded watched call (ledger order), or None."""
    r = ledger.LedgerReader(ctx.layout.root / SESSIONS_FILE)
    r.refresh()
    last = None
    for lt in r.letters:
        d = lt.data()
        if d.get("session") == sid:
            last = d
    return last


def at_stop(ctx: Context, payload: Mapping[str, Any]) -> tuple[str, bool] | None:
    """At a stop: mint the session's abandonment letter when its last watched call failed."""
    sid = _session(payload)
    call = last_call(ctx, sid) if sid else None
    if sid is None or call is None or call.get("failed") is not True:
        return None
    tool = str(call["tool"])
    cwd = call.get("cwd") if isinstance(call.get("cwd"), str) else payload.get("cwd")
    where = route(None, cwd, ctx.index).address if isinstance(cwd, str) else None
    obj = {
        "ts": call["ts"][:19] + "Z" if isinstance(call.get("ts"), str) else None,
        "class": "honesty", "tool": tool, "symptom": "crash", "session": sid,
        "what": f"abandonment: the last call to {tool} failed and no watched call followed before the stop",
        "snippet": str(call.get("shape")),
    }
    return engine.mint(ctx, where or HOME, {k: v for k, v in obj.items() if v is not None},
                       engine.same("abandonment", session=sid))

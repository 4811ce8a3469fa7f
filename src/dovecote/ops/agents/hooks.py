"""Agent hooks: what to print at session start, at each prompt and at stop.

An agent (Claude Code, Codex) runs ``dovecote hook <kind>`` at those three
points and sends a JSON payload on stdin (``session_id``, ``cwd``,
``hook_event_name``, and for a stop ``stop_hook_active``). The decision is a
pure function (``decide``) of the inbox view, what was already surfaced to
that session, and the hook kind:

* ``session-start`` prints the injection block and marks every open item as
  told to the session;
* ``prompt`` prints only the WAIT items the session has not been told of
  (nothing when nothing is new) and marks them told;
* ``stop`` blocks once (``{"decision": "block", "reason": ...}``) when high
  or urgent WAIT items arrived that the session was not told of, naming their
  subjects, and marks them told, so the next stop is allowed: it never blocks
  twice for the same items, and never while ``stop_hook_active`` (the agent is
  already continuing because of a stop hook), so it cannot loop.

What was told is a ``surfaced`` letter in the entity's own box (see
``derive.inbox.surfaced``), written under the box lock after deciding again on what
the lock holds, so two hooks racing never announce one item twice. A block is
printed only once its record is durable: a record that failed to write would
make the next stop block again. The stop hook gets the whole payload, so
DESIGN 5's abandonment rule (an error, then no further use, then stop) can be
added to ``run_hook`` without changing any agent's configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec
import orjson

from dovecote.derive.inbox.surfaced import surfaced_letter, surfaced_to
from dovecote.errors import Refusal
from dovecote.model.letters import canonical_line, format_ts
from dovecote.ops.mail.inbox import read_inbox, read_injection_items
from dovecote.ops.mail.inbox import told as told_to
from dovecote.ops.mail.injection import URGENT, inbox_injection, new_mail_block, stop_reason
from dovecote.ops.warm.inbox import entity_address

if TYPE_CHECKING:
    from dovecote.ops.context import Context

KINDS = ("session-start", "prompt", "stop")
#: The session a payload without ``session_id`` is counted under.
NO_SESSION = "-"


class HookAnswer(msgspec.Struct, frozen=True):
    """A hook's answer: exactly what to print on stdout, what to record as told, and whether it blocks."""

    kind: str
    stdout: str = ""
    announce: tuple[str, ...] = ()
    block: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "stdout": self.stdout, "announce": list(self.announce), "block": self.block}


def session_of(payload: Mapping[str, Any]) -> str:
    sid = payload.get("session_id")
    return sid if isinstance(sid, str) and sid else NO_SESSION


def decide(kind: str, view: dict[str, Any], told: set[str], *, stop_hook_active: bool = False) -> HookAnswer:
    """What a hook of ``kind`` says, given the inbox ``view`` and the ids already ``told`` to the session."""
    if kind not in KINDS:
        raise Refusal("invalid_field", f"hook kind must be one of {', '.join(KINDS)}, not {kind!r}")
    items: list[dict[str, Any]] = view.get("items", [])
    if kind == "session-start":
        return HookAnswer(kind, inbox_injection(view), tuple(i["id"] for i in items if i["id"] not in told))
    new = [i for i in items if i["state"] == "WAIT" and i["id"] not in told]
    if kind == "prompt":
        if not new:
            return HookAnswer(kind)
        return HookAnswer(kind, new_mail_block(view["entity"], new), tuple(i["id"] for i in new))
    urgent = [i for i in new if i["priority"] in URGENT]
    if stop_hook_active or not urgent:
        return HookAnswer(kind)
    block = {"decision": "block", "reason": stop_reason(view["entity"], urgent)}
    return HookAnswer(kind, orjson.dumps(block).decode() + "\n", tuple(i["id"] for i in urgent), block=True)


def _decide(kind: str, seen: dict[str, Any] | tuple[str, list[str]], told: set[str], active: bool) -> HookAnswer:
    """``decide`` on the view, or, for session-start, on its (block, item ids): the same answer."""
    if isinstance(seen, tuple):
        text, ids = seen
        return HookAnswer(kind, text, tuple(i for i in ids if i not in told))
    return decide(kind, seen, told, stop_hook_active=active)


def run_hook(ctx: Context, kind: str, entity_id: str, payload: Mapping[str, Any]) -> HookAnswer:
    """Decide, record what is announced (under the box lock, deciding again there), and answer."""
    if kind not in KINDS:
        raise Refusal("invalid_field", f"hook kind must be one of {', '.join(KINDS)}, not {kind!r}")
    addr = entity_address(ctx, entity_id)
    session = session_of(payload)
    active = payload.get("stop_hook_active") is True
    # session-start prints the block alone: read it as ``inbox --format injection`` does, no rows built
    seen = read_injection_items(ctx, entity_id) if kind == "session-start" else read_inbox(ctx, entity_id)[0].to_dict()
    told = told_to(ctx, entity_id, session)  # from the fold: the whole box is read only to append
    answer = _decide(kind, seen, told, active)
    if not answer.announce:
        return answer
    with ctx.store.guarded(addr) as guard:
        told = surfaced_to(guard.letters, session)
        answer = _decide(kind, seen, told, active)
        if answer.announce:
            record = surfaced_letter(entity_id, session, kind, answer.announce, format_ts(ctx.now()))
            guard.append([canonical_line(record)])
    return answer

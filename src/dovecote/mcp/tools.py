"""The MCP tools: one declarative table over the typed verbs (``dovecote.verbs.VERBS``).

Law: a tool is a verb. Its input schema is ``verbs.schema`` of the verb, its
input is decoded by ``verbs.decode`` (so a bad argument is the same refusal as
on the CLI), and its call is the verb's call in ``remote.CALLS``, the one REST
makes too: what a tool may touch is decided there, before the handle is called,
by the principal the connection is bound to (``forbidden`` for another entity's
box), and the one deny list ``verbs.writes`` refuses a write on a read-only
face (``read_only``).

Which verbs are tools: the ones an agent uses on its own mail and reports.
Roster edits, verify, view, import, organize, draft, outbox and stale-check are
operator work at a terminal (they change the roster or files on the machine,
or survey every entity), so they are not in an agent's catalog; a smaller
catalog is also what keeps ``tools/list`` under its token budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dovecote import remote, verbs
from dovecote.api import Dovecote, Principal
from dovecote.mcp import schemas
from dovecote.remote import refuse_if_read_only

__all__ = ["TOOLS", "Tool", "refuse_if_read_only"]

Call = Callable[[Dovecote, Principal, Any], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool: its verb (input), description (one line), call, one-line text, and output schema."""

    name: str
    verb: type[verbs.Verb]
    description: str
    call: Call
    text: Callable[[dict[str, Any]], str]
    output: dict[str, Any]
    #: Fields of the verb this face does not offer (not in the schema; the call refuses them).
    omit: tuple[str, ...] = ()

    def input_schema(self) -> dict[str, Any]:
        return schemas.inline(verbs.schema(self.verb), self.omit)


def _n(d: dict[str, Any], key: str) -> int:
    value = d.get(key)
    return len(value) if isinstance(value, list) else 0


def _inbox_text(d: dict[str, Any]) -> str:
    counts = d.get("counts", {})
    shown = ", ".join(f"{k} {v}" for k, v in counts.items() if isinstance(v, int) and v) or "empty"
    return f"inbox {d['entity']}: {shown}; {_n(d, 'items')} items listed; cursor {d['cursor']}"


def _sweep_text(d: dict[str, Any]) -> str:
    return f"sweep: {d['total']} letters, {d['open']} open, {_n(d, 'unreachable')} unreachable"


TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("report", verbs.Report, "File a field report into the spool.", remote.report,
         lambda d: f"filed {', '.join(x['id'] for x in d['letters'])}", schemas.REPORT),
    Tool("sweep", verbs.Sweep, "Fates across the spool and every reachable box.", remote.sweep, _sweep_text,
         schemas.OBJECT),
    Tool("box", verbs.Box, "Read one box (home, project:NAME, entity:ID).", remote.box,
         lambda d: f"box {d['box']}: {d['total']} letters, {d['open']} open, {_n(d, 'letters')} listed",
         schemas.OBJECT),
    Tool("doctor", verbs.Doctor, "Health counts of the mailbox.", remote.doctor, lambda d: "doctor: counts only",
         schemas.OBJECT),
    Tool("send", verbs.Message, "Send a message to an entity; durable when this returns.", remote.send,
         lambda d: f"sent {d['id']} to {d['to']} (thread {d['thread_id']})", schemas.DELIVERY,
         omit=("body_file", "artifact_paths")),
    Tool("move", verbs.Move, "Lifecycle move on an item in your inbox, as compare-and-swap.", remote.move,
         lambda d: f"{d['kind']} {d['item']}: {d['from']} -> {d['to']}", schemas.TRANSITION),
    Tool("inbox", verbs.Inbox, "Your inbox: counts, flags, open items (marks nothing seen).", remote.inbox, _inbox_text,
         schemas.INBOX),
    Tool("show", verbs.Show, "One item whole: envelope, body, thread, history.", remote.show,
         lambda d: f"{d['item'].get('state')} {d['item'].get('id')}: {d['envelope'].get('subject')}", schemas.SHOW),
    Tool("search", verbs.Search, "Full-text search of mail, newest first.", remote.search,
         lambda d: f"search: {d['count']} matches, {_n(d, 'matches')} shown", schemas.OBJECT),
    Tool("wait", verbs.Wait, "Block until new mail arrives after a cursor.", remote.wait,
         lambda d: f"wait {d['entity']}: {len(d['items'])} new, cursor {d['cursor']}"
         + (" (timed out)" if d["timed_out"] else ""), schemas.WAIT),
)}


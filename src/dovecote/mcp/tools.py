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
from dovecote.errors import Refusal
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
    #: Fields of the verb this face does not offer besides ``NOT_OFFERED`` (not in the schema; ``refuse_omitted``).
    omit: tuple[str, ...] = ()

    def omitted(self) -> tuple[str, ...]:
        """Every field of the verb this tool leaves out."""
        return self.omit + tuple(f for f in NOT_OFFERED if f in self.verb.__struct_fields__)

    def input_schema(self) -> dict[str, Any]:
        return schemas.inline(verbs.schema(self.verb), self.omitted())

    def refuse_omitted(self, arguments: dict[str, Any]) -> None:
        """An argument this tool does not offer is ``unknown_field``, as any field not in its schema is; the
        server's files are ``remote``'s to refuse (``server_file``, said the same on every face)."""
        for name in self.omitted():
            if name in arguments and name not in remote.SERVER_FILES:
                raise Refusal("unknown_field", f"{self.name} does not take {name} over MCP")


#: Verb fields no tool offers: the server's tic source is the clock of record (an agent does not set it).
NOT_OFFERED = ("current_tic",)
#: The receipt fields of ``report``: the ``receipt`` tool files receipts (one tool per job, a smaller catalog).
RECEIPT_FIELDS = ("answers", "disposition", "fingerprint", "case_id", "sentinel")


def _sent_text(d: dict[str, Any]) -> str:
    if d.get("count", 1) == 1:
        return f"sent {d['id']} to {d['to']} (thread {d['thread_id']})"
    return f"sent {d['type']} {d['envelope_id'] or ''} to {d['count']} recipients".replace("  ", " ")


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
         lambda d: f"filed {', '.join(x['id'] for x in d['letters'])}", schemas.REPORT, omit=RECEIPT_FIELDS),
    Tool("sweep", verbs.Sweep, "Fates across the spool and every reachable box.", remote.sweep, _sweep_text,
         schemas.OBJECT),
    Tool("box", verbs.Box, "Read one box (home, project:NAME, entity:ID).", remote.box,
         lambda d: f"box {d['box']}: {d['total']} letters, {d['open']} open, {_n(d, 'letters')} listed",
         schemas.OBJECT),
    Tool("doctor", verbs.Doctor, "Health counts of the mailbox.", remote.doctor, lambda d: "doctor: counts only",
         schemas.OBJECT),
    Tool("send", verbs.Send, "Send a message, task or response (or to_all); durable when this returns.", remote.send,
         _sent_text, schemas.SENT, omit=remote.MESSAGE_FILES),
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
    # -- delivery (issue 9): an agent acks and reads its trackers; intake, the mailman and status are operator work
    Tool("ack", verbs.Ack, "Ack a task or response delivered to you, once (accepted or rejected).", remote.ack,
         lambda d: f"{d['status']} {d['delivery_id']}" + (" (late)" if d["late"] else ""), schemas.ACKED),
    Tool("trackers", verbs.Trackers, "Delivery, ack and notify state of your deliveries.", remote.trackers,
         lambda d: f"trackers: {d['returned']} of {d['total']}", schemas.TRACKERS),
    Tool("cases", verbs.Cases, "Cases: letters grouped by fingerprint, with receipt and label.", remote.cases,
         lambda d: f"cases: {d['count']} cases, {d['kindless']} kindless letters", schemas.CASES),
    Tool("receipt", verbs.Receipt, "File a triage receipt: closes the letters it answers, names their case.",
         remote.receipt, lambda d: f"receipt {d['id']} in {d['box']}, case {d['fingerprint'] or 'none'}",
         schemas.RECEIPT),
    # -- missions (issue 11): archive and receipt import are human gestures, never tools
    Tool("mission_post", verbs.MissionPost, "Post a mission's next letter (CAS on its head).", remote.mission_post,
         lambda d: f"{'deduped' if d['deduped'] else 'posted'} {d['letter_id']}: seq {d['mission_seq']} {d['phase']}",
         schemas.OBJECT),
    Tool("missions", verbs.Missions, "Mission heads, counts by phase, landing count.", remote.missions,
         lambda d: f"missions: {d['count']}, {d['landing']} waiting to land", schemas.OBJECT),
    Tool("mission", verbs.Mission, "One mission's chain, root to head.", remote.mission,
         lambda d: f"{d['mission_id']}: {d['phase']} at seq {d['mission_seq']}", schemas.OBJECT),
    Tool("blocks", verbs.Blocks, "Blocks with versions; each project's skeleton id.", remote.blocks,
         lambda d: f"blocks: {d['count']}", schemas.OBJECT),
)}


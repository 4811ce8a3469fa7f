"""The MCP tools: one declarative table over the typed verbs (``dovecote.verbs.VERBS``).

Law: a tool is a verb. Its input schema is ``verbs.schema`` of the verb, its
input is decoded by ``verbs.decode`` (so a bad argument is the same refusal as
on the CLI), and its call is one method of the handle. What a tool may touch is
decided here, before the call, by the principal the connection is bound to:
``api.Dovecote.authorize`` for another entity's box (``forbidden``), and the
one deny list ``verbs.writes`` for a read-only face (``read_only``).

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

from dovecote import verbs
from dovecote.api import Actor, Dovecote, Principal
from dovecote.errors import Refusal
from dovecote.mcp import schemas

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


def actor_of(p: Principal) -> Actor:
    """The actor of every write over a connection: the principal's entity."""
    return Actor(agent=p.entity, entity=p.entity)


def _own(p: Principal, verb: str, entity: str) -> None:
    Dovecote.authorize(p, verb, entity)


def _as_self(p: Principal, field: str, given: str | None) -> None:
    """An agent writes as itself: naming another author or sender is ``forbidden``."""
    if given is not None and given != p.entity and p.role != "operator":
        raise Refusal("forbidden", f"{p.entity} may not write as {given!r} ({field})")


def _report(dc: Dovecote, p: Principal, v: verbs.Report) -> dict[str, Any]:
    _as_self(p, "agent", v.agent)
    filed = dc.report(v, actor=actor_of(p))
    return {"letters": [{"id": lid, "appended": new} for lid, new in filed]}


def _sweep(dc: Dovecote, p: Principal, v: verbs.Sweep) -> dict[str, Any]:
    return dc.sweep(v).to_dict()


def _box(dc: Dovecote, p: Principal, v: verbs.Box) -> dict[str, Any]:
    if v.address.startswith("entity:"):  # an entity's box holds message bodies
        _own(p, "show", v.address.partition(":")[2])
    return dc.box(v).to_dict()


def _doctor(dc: Dovecote, p: Principal, v: verbs.Doctor) -> dict[str, Any]:
    return dc.doctor(v)


def _send(dc: Dovecote, p: Principal, v: verbs.Message) -> dict[str, Any]:
    _as_self(p, "sender", v.sender)
    if v.body_file is not None or v.artifact_paths:
        raise Refusal("invalid_field", "body_file and artifact_paths name files on the server; give body instead")
    return dc.send(v, actor=actor_of(p)).to_dict()


def _move(dc: Dovecote, p: Principal, v: verbs.Move) -> dict[str, Any]:
    _own(p, v.kind.value, v.entity_id)
    return dc.move(v, actor=actor_of(p)).to_dict()


def _inbox(dc: Dovecote, p: Principal, v: verbs.Inbox) -> dict[str, Any]:
    """The inbox as it is; reading it never marks anything seen (seen is the explicit move)."""
    entity = v.entity_id or p.entity
    _own(p, "inbox", entity)
    return dc.inbox(verbs.Inbox(entity_id=entity, current_tic=v.current_tic, direction=v.direction,
                                include_terminal=v.include_terminal))


def _show(dc: Dovecote, p: Principal, v: verbs.Show) -> dict[str, Any]:
    _own(p, "show", v.entity_id)
    return dc.show(v)


def _search(dc: Dovecote, p: Principal, v: verbs.Search) -> dict[str, Any]:
    entity = v.entity_id if v.entity_id is not None or p.role == "operator" else p.entity
    if entity is not None:
        _own(p, "search", entity)
    return dc.search(verbs.Search(query=v.query, entity_id=entity, include_terminal=v.include_terminal,
                                  limit=v.limit))


def _wait(dc: Dovecote, p: Principal, v: verbs.Wait) -> dict[str, Any]:
    _own(p, "wait", v.entity_id)
    return dc.wait(v).to_dict()


# -- case intelligence (issue 10): reading the cases and filing a receipt are an agent's;
# running sentinels (commands on this machine), monitors and claims are operator work.


def _cases(dc: Dovecote, p: Principal, v: verbs.Cases) -> dict[str, Any]:
    return dc.cases(v)


def _receipt(dc: Dovecote, p: Principal, v: verbs.Receipt) -> dict[str, Any]:
    if v.sentinel_probe is not None and p.role != "operator":  # a probe is a command this machine will run
        raise Refusal("forbidden", f"{p.entity} may not set a sentinel probe (an operator's, at a terminal)")
    return dc.receipt(v, actor=actor_of(p))


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
    Tool("report", verbs.Report, "File a field report into the spool.", _report,
         lambda d: f"filed {', '.join(x['id'] for x in d['letters'])}", schemas.REPORT),
    Tool("sweep", verbs.Sweep, "Fates across the spool and every reachable box.", _sweep, _sweep_text,
         schemas.OBJECT),
    Tool("box", verbs.Box, "Read one box (home, project:NAME, entity:ID).", _box,
         lambda d: f"box {d['box']}: {d['total']} letters, {d['open']} open, {_n(d, 'letters')} listed",
         schemas.OBJECT),
    Tool("doctor", verbs.Doctor, "Health counts of the mailbox.", _doctor, lambda d: "doctor: counts only",
         schemas.OBJECT),
    Tool("send", verbs.Message, "Send a message to an entity; durable when this returns.", _send,
         lambda d: f"sent {d['id']} to {d['to']} (thread {d['thread_id']})", schemas.DELIVERY,
         omit=("body_file", "artifact_paths")),
    Tool("move", verbs.Move, "Lifecycle move on an item in your inbox, as compare-and-swap.", _move,
         lambda d: f"{d['kind']} {d['item']}: {d['from']} -> {d['to']}", schemas.TRANSITION),
    Tool("inbox", verbs.Inbox, "Your inbox: counts, flags, open items (marks nothing seen).", _inbox, _inbox_text,
         schemas.INBOX),
    Tool("show", verbs.Show, "One item whole: envelope, body, thread, history.", _show,
         lambda d: f"{d['item'].get('state')} {d['item'].get('id')}: {d['envelope'].get('subject')}", schemas.SHOW),
    Tool("search", verbs.Search, "Full-text search of mail, newest first.", _search,
         lambda d: f"search: {d['count']} matches, {_n(d, 'matches')} shown", schemas.OBJECT),
    Tool("wait", verbs.Wait, "Block until new mail arrives after a cursor.", _wait,
         lambda d: f"wait {d['entity']}: {len(d['items'])} new, cursor {d['cursor']}"
         + (" (timed out)" if d["timed_out"] else ""), schemas.WAIT),
    Tool("cases", verbs.Cases, "Cases: letters grouped by fingerprint, with receipt and label.", _cases,
         lambda d: f"cases: {d['count']} cases, {d['kindless']} kindless letters", schemas.CASES),
    Tool("receipt", verbs.Receipt, "File a triage receipt: closes the letters it answers, names their case.",
         _receipt, lambda d: f"receipt {d['id']} in {d['box']}, case {d['fingerprint'] or 'none'}", schemas.RECEIPT),
)}


def refuse_if_read_only(name: str, v: verbs.Verb, read_only: bool) -> None:
    """The one deny list (``verbs.writes``), applied to a tool call on a read-only face."""
    if read_only and verbs.writes(name, v):
        raise Refusal("read_only", f"{name} writes, and this server was started read-only")

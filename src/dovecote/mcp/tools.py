"""The MCP tools: one declarative table over the typed verbs (``dovecote.verbs.VERBS``).

Law: a tool is a verb. Its input schema is ``verbs.schema`` of the verb, its
input is decoded by ``verbs.decode`` (so a bad argument is the same refusal as
on the CLI), and its call is the verb's call in ``remote.CALLS``, the one REST
makes too: what a tool may touch is decided there, before the handle is called,
by the principal the connection is bound to (``forbidden`` for another entity's
box or for an agent doing operator work), and the one deny list ``verbs.writes``
refuses a write on a read-only face (``read_only``).

The catalog is kept small (its budget: ``tools/list`` under 4,000 tokens,
characters / 4, with room left for the mission tools) in two ways:

- **A catalog per role.** ``tools/list`` lists what the connection's principal
  may call (``catalog``): an agent's catalog has no operator work (intake, the
  mailman, presence beats, sentinels, monitor add, the status view) and no
  operator-only field (a send's sender, a report's author, a receipt's probe,
  writing claim labels); an operator's adds those; the local operator's (stdio
  with no token, the person at this machine) adds ``import_vnext``, the one
  tool that names a folder on the server. This is a listing, not a gate: a call
  to a tool or field outside the caller's catalog still goes to ``remote``,
  which refuses it (``forbidden``, ``server_file``) exactly as REST does.
  Listing what a principal cannot use would only spend the agent's context.
- **One tool over several read views** (``Views``), as ``move`` takes a kind:
  ``cases`` reads cases, one case, claims or monitors; ``trackers`` reads
  trackers, presence or (an operator's) the status view. Each view is its own
  verb: the tool's schema is the union of the views' verb schemas plus
  ``view``, and a call is decoded by the chosen view's verb alone (a field of
  another view is ``unknown_field``). Writes are never views, with one
  exception: ``lease`` picks its verb by ``action`` (list, take, renew,
  release), as one tool rather than four. Its actions are verbs all the same: the
  picked verb's name is what ``read_only`` and ``forbidden`` judge, per verb.

Whose box: a tool whose verb names one (``entity_id``: show, wait, move, ack;
inbox already reads the caller's own) defaults it to the connection's own
entity, and its schema says so; naming another's box stays ``remote``'s to
allow or refuse.

Which verbs are tools: the ones an agent uses on its own mail and reports, and
the operator's delivery and case work. Roster edits, verify, view, the inbox-tree
import, organize, draft, outbox and stale-check are operator work at a terminal
(they change the roster or files on the machine), so they are not tools.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import msgspec

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle import remote
from dovecote.handle.api import (
    Acked,
    Beat,
    BlockListing,
    BoxAnswer,
    Case,
    Cases,
    Claims,
    Delivery,
    Doctor,
    Dovecote,
    HookRelayed,
    InboxView,
    IntakeAnswer,
    MissionChain,
    MissionListing,
    MissionPosted,
    MonitorAdded,
    Monitors,
    PassAnswer,
    Presence,
    Principal,
    ReceiptFiled,
    ReportsFiled,
    SearchResult,
    SentAnswer,
    Sentinels,
    Shown,
    Status,
    SweepAnswer,
    Trackers,
    Transition,
    VnextImported,
    WaitResult,
)
from dovecote.handle.remote import refuse_if_read_only
from dovecote.handle.remote_leases import LeaseListing, LeasesChanged, LeaseTaken
from dovecote.mcp import schemas

__all__ = ["ROLES", "TOOLS", "Tool", "Views", "catalog", "refuse_if_read_only", "role_of"]

Call = Callable[[Dovecote, Principal, Any], Any]

#: The catalogs, each a superset of the one before (but ``lease``, an agent's): an agent's, an operator's, the local
#: operator's.
ROLES = ("agent", "operator", "local")
EVERYONE, OPERATORS, LOCAL, AGENTS = frozenset(ROLES), frozenset(ROLES[1:]), frozenset(ROLES[2:]), frozenset(ROLES[:1])


def role_of(p: Principal) -> str:
    """The catalog a principal sees."""
    return "local" if p.local else "operator" if p.role == "operator" else "agent"


@cache
def _requires_own(verb: type[verbs.Verb]) -> bool:
    return OWN in schemas.inline(verbs.schema(verb)).get("required", ())


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool: its verb (input), description (one line), call, one-line text, and result types (the output
    schema is generated from them: ``output``)."""

    name: str
    verb: type[verbs.Verb]
    description: str
    call: Call
    text: Callable[[dict[str, Any]], str]
    #: The typed answers its call gives (one of them per call), from which its output schema is generated.
    results: tuple[type[msgspec.Struct], ...]
    #: Fields of the verb this face does not offer besides ``NOT_OFFERED`` (not in the schema; ``refuse_omitted``).
    omit: tuple[str, ...] = ()
    #: The catalogs that list it.
    roles: frozenset[str] = EVERYONE
    #: Fields only an operator may use: not in an agent's schema (``remote`` refuses an agent that sends them).
    operator_fields: tuple[str, ...] = ()

    @property
    def output(self) -> dict[str, Any]:
        """The output schema: what every one of ``results`` always carries (``schemas.output``)."""
        return schemas.output(*self.results)

    def omitted(self) -> tuple[str, ...]:
        """Every field of the verb this tool leaves out."""
        return self.omit + tuple(f for f in NOT_OFFERED if f in self.verb.__struct_fields__)

    def describe(self, role: str = "local") -> str:
        """The one line ``tools/list`` shows."""
        return self.description

    def input_schema(self, role: str = "local") -> dict[str, Any]:
        hidden = self.operator_fields if role == "agent" else ()
        out = schemas.inline(verbs.schema(self.verb), self.omitted() + hidden)
        if self.owns():  # not required: left out, it is the connection's own entity (``own_entity``)
            out["required"] = [f for f in out["required"] if f != OWN]
            if not out["required"]:
                del out["required"]
            field = out["properties"][OWN]
            field["description"] = field.get("description", "").rstrip(".") + OWN_DEFAULT
        return out

    def owns(self) -> bool:
        """Whether the verb must name whose box it touches (``OWN``): a tool defaults it to the caller's own."""
        return _requires_own(self.verb)

    def own_entity(self, principal: Principal, arguments: dict[str, Any]) -> dict[str, Any]:
        """``arguments`` with ``OWN`` the principal's entity when left out (an agent's own box, as ``inbox``
        reads); a box named is still the one rule's to allow (``remote``: ``forbidden`` for an agent's
        naming another's)."""
        if self.owns() and arguments.get(OWN) is None:
            return {**arguments, OWN: principal.entity}
        return arguments

    def refuse_omitted(self, arguments: Mapping[str, Any]) -> None:
        """An argument this tool does not offer is ``unknown_field``, as any field not in its schema is; the
        server's files are ``remote``'s to refuse (``server_file``, said the same on every face)."""
        for name in self.omitted():
            if name in arguments and name not in remote.SERVER_FILES:
                raise Refusal("unknown_field", f"{self.name} does not take {name} over MCP")

    def pick(self, arguments: Mapping[str, Any]) -> tuple[Tool, dict[str, Any]]:
        """The tool a call runs, and its arguments: this one, as given."""
        return self, dict(arguments)


@dataclass(frozen=True, slots=True)
class Views:
    """One tool over several read verbs, chosen by the ``view`` argument (the first view is the default).

    Each view's ``description`` is the phrase that names it in the tool's one line, after ``lead``.
    """

    name: str
    lead: str
    views: tuple[Tool, ...]
    #: The argument that chooses, and what it calls each view (default: its tool's name), in ``views``' order.
    key: str = "view"
    labels: tuple[str, ...] = ()

    def label(self, t: Tool) -> str:
        return self.labels[self.views.index(t)] if self.labels else t.name

    def describe(self, role: str = "local") -> str:
        """``lead``, then each view ``role`` may read with its phrase."""
        shown = (f"{self.label(t)} ({t.description})" for t in self.views if role in t.roles)
        return f"{self.lead}: " + "; ".join(shown) + "."

    @property
    def output(self) -> dict[str, Any]:
        """What every view's answer always carries: each view answers its own verb's result."""
        return schemas.output(*(kind for t in self.views for kind in t.results))

    @property
    def roles(self) -> frozenset[str]:
        return frozenset().union(*(t.roles for t in self.views))

    def input_schema(self, role: str = "local") -> dict[str, Any]:
        """``view`` (the views this role may read) and the union of their verbs' fields.

        A field two views share keeps what their schemas agree on (a default they differ on is left to
        each verb). No field is required here: the chosen view's verb refuses a missing one.
        """
        shown = [t for t in self.views if role in t.roles]
        props: dict[str, Any] = {self.key: {"enum": [self.label(t) for t in shown], "default": self.label(shown[0])}}
        for t in shown:
            for key, s in t.input_schema(role)["properties"].items():
                props[key] = {k: v for k, v in props[key].items() if s.get(k) == v} if key in props else s
        return {"type": "object", "properties": props}

    def pick(self, arguments: Mapping[str, Any]) -> tuple[Tool, dict[str, Any]]:
        """The view a call reads, and the arguments its verb decodes (``invalid_field`` for no such view)."""
        rest = dict(arguments)
        view = rest.pop(self.key, self.label(self.views[0]))
        for t in self.views:
            if self.label(t) == view:
                return t, rest
        raise Refusal("invalid_field", f"{self.name}: {self.key} must be one of "
                                       f"{', '.join(map(self.label, self.views))}, not {view!r}")


#: The field naming whose box a call touches; a tool whose verb requires it takes it as optional and defaults it
#: to the connection's own entity (``Tool.own_entity``), what its schema says (``OWN_DEFAULT``).
OWN = "entity_id"
OWN_DEFAULT = " (default: yours)."
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


def _counts(d: Mapping[str, Any], *keys: str) -> str:
    return ", ".join(f"{d[k]} {k}" for k in keys)


def _status_text(d: dict[str, Any]) -> str:
    return (f"status: intake {_counts(d['intake'], 'pending', 'processed', 'quarantined')}; trackers "
            f"{_counts(d['tracker_counts'], 'total', 'pending_ack', 'timed_out', 'escalated')}; "
            f"{d['overdue_total']} overdue")


def _intake_text(d: dict[str, Any]) -> str:
    return f"intake: {_counts(d, 'processed', 'quarantined', 'left_pending', 'letters_appended')}"


def _mailman_text(d: dict[str, Any]) -> str:
    return (f"mailman ({d['notify_mode']}): {_intake_text(d['intake'])}; "
            f"{_counts(d['reconcile'], 'open_checked', 'repings', 'timeouts', 'escalations')}")


def _import_text(d: dict[str, Any]) -> str:
    letters = d["letters"]
    done = f"imported {letters['appended']} of" if d["write"] else "would import (dry run)"
    return (f"{done} {letters['planned']} letters from {d['path']}; {d['tracker_counts']['total']} trackers, "
            f"{d['malformed_count']} malformed files")


TOOLS: dict[str, Tool | Views] = {t.name: t for t in (
    Tool("report", verbs.Report, "File a field report into the spool.", remote.report,
         lambda d: f"filed {', '.join(x['id'] for x in d['letters'])}", (ReportsFiled,),
         omit=RECEIPT_FIELDS, operator_fields=("agent",)),
    Tool("sweep", verbs.Sweep, "Fates across the spool and every reachable box.", remote.sweep, _sweep_text,
         (SweepAnswer,)),
    Tool("box", verbs.Box, "Read one box.", remote.box,
         lambda d: f"box {d['box']}: {d['total']} letters, {d['open']} open, {_n(d, 'letters')} listed",
         (BoxAnswer,)),
    Tool("doctor", verbs.Doctor, "Health counts of the mailbox.", remote.doctor, lambda d: "doctor: counts only",
         (Doctor,)),
    Tool("send", verbs.Send, "Send a message, task or response; durable when this returns.", remote.send,
         _sent_text, (Delivery, SentAnswer), omit=remote.MESSAGE_FILES, operator_fields=("sender",)),
    Tool("move", verbs.Move, "A lifecycle move on an item in your inbox (compare-and-swap).", remote.move,
         lambda d: f"{d['kind']} {d['item']}: {d['from']} -> {d['to']}", (Transition,)),
    Tool("inbox", verbs.Inbox, "Your inbox: counts, flags, open items (marks nothing seen).", remote.inbox, _inbox_text,
         (InboxView,)),
    Tool("show", verbs.Show, "One item whole: envelope, body, thread, history.", remote.show,
         lambda d: f"{d['item'].get('state')} {d['item'].get('id')}: {d['envelope'].get('subject')} "
                   f"(from: {d['envelope'].get('sender')})", (Shown,)),
    Tool("search", verbs.Search, "Full-text search of mail, newest first.", remote.search,
         lambda d: f"search: {d['count']} matches, {_n(d, 'matches')} shown", (SearchResult,)),
    Tool("wait", verbs.Wait, "Block until new mail arrives after a cursor.", remote.wait,
         lambda d: f"wait {d['entity']}: {len(d['items'])} new, cursor {d['cursor']}"
         + (" (timed out)" if d["timed_out"] else ""), (WaitResult,)),
    # -- delivery: an agent acks and reads its trackers and presence; the rest is an operator's
    Tool("ack", verbs.Ack, "Ack a task or response delivered to you, once (accepted or rejected).", remote.ack,
         lambda d: f"{d['status']} {d['delivery_id']}" + (" (late)" if d["late"] else ""), (Acked,)),
    Views("trackers", "Delivery reads", (
        Tool("trackers", verbs.Trackers, "your deliveries' states", remote.trackers,
             lambda d: f"trackers: {d['returned']} of {d['total']}", (Trackers,)),
        Tool("presence", verbs.Presence, "active agents", remote.presence,
             lambda d: f"presence: {d['recently_active']} of {_n(d, 'agents')} agents recently active",
             (Presence,)),
        Tool("status", verbs.Status, "counts, overdue acks", remote.status,
             _status_text, (Status,), roles=OPERATORS),
    )),
    # -- case intelligence
    Views("cases", "Case reads", (
        Tool("cases", verbs.Cases, "by fingerprint", remote.cases,
             lambda d: f"cases: {d['count']} cases, {d['kindless']} kindless letters", (Cases,)),
        Tool("case", verbs.Case, "one", remote.case, lambda d: str(d["line"]), (Case,)),
        Tool("claims", verbs.Claims, "claims vs measures", remote.claims,
             lambda d: f"claims: {_counts(d['totals'], 'claims', 'claimed_right', 'claimed_wrong', 'unresolved')}"
             + (f"; {d['labels_appended']} labels appended" if d["labels_appended"] else ""), (Claims,),
             operator_fields=("write_labels",)),
        Tool("monitors", verbs.Monitors, "dead-man's switches", remote.monitors,
             lambda d: f"monitors: {d['count']} ({_counts(d, 'up', 'late', 'down', 'new', 'paused')})", (Monitors,)),
    )),
    Tool("receipt", verbs.Receipt, "File a triage receipt: closes the letters it answers, names their case.",
         remote.receipt, lambda d: f"receipt {d['id']} in {d['box']}, case {d['fingerprint'] or 'none'}",
         (ReceiptFiled,), operator_fields=("sentinel_probe", "sentinel_expect")),
    # -- missions: archive and receipt import are human gestures, never tools
    Tool("mission_post", verbs.MissionPost, "Post a mission's next letter (CAS on its head).", remote.mission_post,
         lambda d: f"{'deduped' if d['deduped'] else 'posted'} {d['letter_id']}: seq {d['mission_seq']} {d['phase']}",
         (MissionPosted,)),
    Views("missions", "Mission reads", (
        Tool("missions", verbs.Missions, "heads by phase", remote.missions,
             lambda d: f"missions: {d['count']}, {d['landing']} waiting to land", (MissionListing,)),
        Tool("mission", verbs.Mission, "one chain", remote.mission,
             lambda d: f"{d['mission_id']}: {d['phase']} at seq {d['mission_seq']}", (MissionChain,)),
        Tool("blocks", verbs.Blocks, "versions, skeletons", remote.blocks,
             lambda d: f"blocks: {d['count']}", (BlockListing,)),
    )),
    # -- advisory file leases: one tool, the verb chosen by action; listed for agents (an operator's catalog is at
    # its budget: an operator calls it all the same, or takes a lease for anyone at a terminal or over REST)
    Views("lease", "Path leases by action", (
        Tool("leases", verbs.Leases, "who holds what until when", remote.CALLS["leases"],
             lambda d: f"leases: {d['count']}", (LeaseListing,), roles=AGENTS),
        Tool("lease_take", verbs.LeaseTake, "lease_conflict if held", remote.CALLS["lease_take"],
             lambda d: f"lease {d['lease']['id']} until {d['lease']['expires']}", (LeaseTaken,), roles=AGENTS),
        Tool("lease_renew", verbs.LeaseRenew, "yours", remote.CALLS["lease_renew"],
             lambda d: f"renewed {d['count']}", (LeasesChanged,), roles=AGENTS),
        Tool("lease_release", verbs.LeaseRelease, "yours", remote.CALLS["lease_release"],
             lambda d: f"released {d['count']}", (LeasesChanged,), roles=AGENTS),
    ), key="action", labels=("list", "take", "renew", "release")),
    # -- operator work: not in an agent's catalog
    Tool("intake", verbs.Intake, "Deliver the intake's pending envelopes, once per recipient.",
         remote.intake, _intake_text, (IntakeAnswer,), omit=("dir",), roles=OPERATORS),
    Tool("mailman", verbs.Mailman, "One mailman pass: intake, then repings, timeouts, escalations due.",
         remote.mailman, _mailman_text, (PassAnswer,), omit=("dir", "loop", "interval"), roles=OPERATORS),
    Tool("presence_beat", verbs.PresenceBeat, "Record an agent's session as alive.",
         remote.presence_beat, lambda d: f"beat {d['agent']} at {d['ts']}", (Beat,), roles=OPERATORS),
    Tool("hook_event", verbs.HookEvent, "Relay an agent's hook (abandonment).",
         remote.hook_event, lambda d: f"{d['event']}: " + (d["letter"] or ("watched" if d["watched"] else "nothing")),
         (HookRelayed,), roles=OPERATORS),
    Tool("sentinels", verbs.Sentinels, "Run each fixed receipt's probe; a red one mints a regression letter.",
         remote.sentinels, lambda d: str(d["line"]), (Sentinels,), roles=OPERATORS),
    Tool("monitor_add", verbs.MonitorAdd, "Add or redefine a dead-man's switch.", remote.monitor_add,
         lambda d: f"monitor {d['name']}: {d['id']}" + ("" if d["appended"] else " (unchanged)"), (MonitorAdded,),
         roles=OPERATORS),
    Tool("import_vnext", verbs.ImportVnext, "Read a vNext mailbox folder on this machine; write imports it.",
         remote.import_vnext, _import_text, (VnextImported,), roles=LOCAL),
)}


def catalog(role: str) -> list[Tool | Views]:
    """The tools ``role``'s ``tools/list`` lists, in table order."""
    return [t for t in TOOLS.values() if role in t.roles]

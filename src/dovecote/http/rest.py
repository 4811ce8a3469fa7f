"""REST under ``/api/v1``: one declarative table of routes over the typed verbs.

Law: a route is a row of ``ROUTES``: its method and path, the verb it is
(``verb``, a name in ``verbs.VERBS``), the type of its input (the verb's own
Struct wherever a verb exists, so the OpenAPI, MCP and the CLI cannot
disagree), the type of its answer, who may call it (``access``) and its call.
Everything else is generated from the table: the Starlette routes, the input
validation (``inputs``) and the OpenAPI document (``openapi.py``).

A request goes: its input is parsed (a GET's query, a POST's JSON body with the
path's fields put in); a read-only server refuses it iff ``verbs.writes`` says
the verb with that input writes (the same function MCP asks); the call runs on
the handle in a worker thread with the request's principal (``remote.CALLS``:
the one authorization rule MCP applies too) and its JSON is the answer.

Who (``access``, checked by the calls themselves, listed for the docs):

- ``open``: anyone the server admits (on loopback, with or without a token).
- ``own``: a read of an entity's mail; an agent token reaches only its own box.
- ``token``: a write; it needs a token, whose entity is the write's actor.
- ``own_token``: a move; a token, and an agent's only in its own box.
- ``operator``: operator work (running sentinel probes, adding monitors, writing labels; intake, a mailman
  pass, a presence beat): an operator token.
- ``recipient``: an ack; a token of the delivery's recipient (``forbidden`` for another agent's box,
  ``not_recipient`` for an operator's: it acks only its own deliveries).
- ``operator_read``: a read of every agent's delivery (the status view); an operator token or no token (loopback).

Every GET is safe: ``/sweep`` reads without distributing the spool (that is
``POST /distribute``). ``GET /entities/{entity_id}/wait`` is a long poll
(``longpoll``): it holds no worker while it waits.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route as StarletteRoute

from dovecote import verbs
from dovecote.handle import remote
from dovecote.handle.api import (
    Acked,
    Beat,
    BlockChange,
    BlockListing,
    BoxAnswer,
    Case,
    Cases,
    Claims,
    Delivery,
    DistributionAnswer,
    Doctor,
    Dovecote,
    EntityRow,
    HookRelayed,
    InboxView,
    IntakeAnswer,
    MissionChain,
    MissionListing,
    MissionPosted,
    MonitorAdded,
    Monitors,
    Needs,
    OutboxSent,
    PassAnswer,
    Presence,
    Principal,
    ProjectRow,
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
    WaitResult,
)
from dovecote.handle.remote_leases import LeaseListing, LeasesChanged, LeaseTaken
from dovecote.http import longpoll, needs, rest_reply
from dovecote.http.inputs import json_response, parse, parse_body
from dovecote.verbs import SPOOL  # the ``box`` filter's name for letters in no box yet

__all__ = ["ACCESS", "FATES", "PRINCIPAL", "ROUTES", "SPOOL", "Boxes", "ClaimsLabels", "ClaimsParams", "NoParams",
           "Params", "Route", "SweepParams", "boxes", "json_response", "parse", "principal", "routes", "sweep"]

#: Where the app's guard leaves the principal of a request's bearer token (``scope["state"]``).
PRINCIPAL = "dovecote.principal"
#: The fates as the triage filter lists them: the open ones first (``vocab.FATES`` is precedence order).
FATES: tuple[str, ...] = tuple(f.value for f in reversed(verbs.Fate))
#: Who may call a route (see the module docstring).
ACCESS = {
    "open": "anyone the server admits",
    "own": "an agent token: its own box only; an operator token or no token (loopback): any",
    "token": "a token; its entity is the actor",
    "own_token": "a token; an agent's only in its own box",
    "operator": "an operator token",
    "recipient": "a token of the recipient itself (an operator acks only its own deliveries)",
    "operator_read": "an operator token, or no token (loopback); an agent token is forbidden",
}


class Params(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of a route's parameters where no verb fits: a parameter the route does not declare is refused."""


class NoParams(Params):
    pass


class SweepParams(Params):
    """The sweep's read with the triage filters (the verb has none; a GET never distributes)."""

    distribute: ClassVar[bool] = False  # what ``verbs.writes("sweep", ...)`` asks of a sweep's input
    fate: verbs.Fate | None = None
    box: Annotated[
        verbs.limits.Id | None, msgspec.Meta(description=f"a box address, or {SPOOL} (letters in no box yet)")
    ] = None
    klass: Annotated[verbs.limits.Id | None, msgspec.Meta(description="a report class, e.g. bug")] = msgspec.field(
        default=None, name="class")
    all: bool = False


class BoxSummary(msgspec.Struct):
    """One box's counts, as ``dovecote box`` has them without the letters."""

    box: str
    reachable: bool
    exists: bool
    known: bool
    held: int
    total: int
    open: int
    counts: dict[str, int]
    receipts: int


class Boxes(msgspec.Struct):
    boxes: list[BoxSummary]


class SweepFilter(msgspec.Struct, frozen=True):
    """The filters a ``GET /sweep`` applied (``all``: every letter, the closed ones too)."""

    fate: str | None
    box: str | None
    klass: str | None = msgspec.field(name="class")
    all: bool


class FilteredSweep(SweepAnswer, frozen=True):
    """``GET /sweep``'s answer: the sweep's JSON, its letters narrowed, and the filter that narrowed them."""

    filter: SweepFilter


#: A send answers a message's ``Delivery``, or (a task, a response, a broadcast) a ``Sent``'s JSON.
SENT = (Delivery, SentAnswer)


def box_summary(dc: Dovecote, address: str) -> dict[str, Any]:
    """A box's counts (``BoxSummary``): one read of the box, its letters left out."""
    d = dc.box(verbs.Box(address=address)).to_dict()
    d.pop("letters")
    d.pop("malformed")
    d.pop("by_kind")
    return {"reachable": dc.reachable(address), **d}


def boxes(dc: Dovecote, _: Any) -> dict[str, Any]:
    """Every box the roster names: home, each project, each entity."""
    names = [str(a) for a in dc.report_boxes()] + [f"entity:{e.id}" for e in dc.entities()]
    return {"boxes": [box_summary(dc, n) for n in names]}


def sweep(dc: Dovecote, p: SweepParams) -> dict[str, Any]:
    """The sweep (no distribution), its letters narrowed to one fate, box and/or class."""
    include_all = p.all or p.fate in (verbs.Fate.fired_clay, verbs.Fate.external)
    out = dc.sweep(verbs.Sweep(distribute=False, include_all=include_all)).to_dict()
    want = {"fate": p.fate, "box": None if p.box == SPOOL else p.box, "class": p.klass}
    given = {k: v for k, v in want.items() if v is not None or (k == "box" and p.box == SPOOL)}
    if given:
        out["letters"] = [row for row in out["letters"] if all(row.get(k) == v for k, v in given.items())]
    out["filter"] = {"fate": p.fate, "box": p.box, "class": p.klass, "all": include_all}
    return out


class ClaimsParams(Params):
    """The claims read: counts only (a GET never writes; ``POST /claims/labels`` appends the labels)."""

    write_labels: ClassVar[bool] = False  # what ``verbs.writes("claims", ...)`` asks of the input


class ClaimsLabels(verbs.Verb, frozen=True):
    """Append the resolved claims to field-labels.jsonl (deduplicated), and answer the counts (a body: none)."""

    write_labels: ClassVar[bool] = True


Call = Callable[[Dovecote, "Principal | None", Any], Any]


@dataclass(frozen=True, slots=True)
class Route:
    """One REST route: ``call`` is the one handle call it makes with the principal and its parsed input."""

    method: str
    path: str
    name: str
    summary: str
    verb: str
    params: type[msgspec.Struct]
    #: the answer's type, or a tuple of the types it may be (the OpenAPI's ``anyOf``)
    response: Any
    access: str
    call: Call
    status: int = 200

    @property
    def template(self) -> str:
        """The path as OpenAPI writes it: ``{name}`` without Starlette's convertor (``{name:path}``)."""
        return re.sub(r"{(\w+):\w+}", r"{\1}", self.path)

    @property
    def body(self) -> bool:
        """Whether the input is a JSON body (a POST) rather than the query."""
        return self.method == "POST"


def _read(fn: Callable[[Dovecote, Any], Any]) -> Call:
    """A call open to anyone: the principal does not narrow it."""
    return lambda dc, p, v: fn(dc, v)


def _remote(name: str) -> Call:
    return remote.CALLS[name]


def _claims(dc: Dovecote, p: Principal | None, v: ClaimsParams | ClaimsLabels) -> Any:
    return remote.claims(dc, p, verbs.Claims(write_labels=v.write_labels))


ENTITY = "/entities/{entity_id}"
ITEM = ENTITY + "/items/{ref}"

#: Delivery: tasks and responses, acks, trackers, presence, status, intake and the mailman.
DELIVERY: tuple[Route, ...] = (
    Route("POST", "/messages", "send_all", "Send to every registered entity but the sender (to_all), or to the "
          "body's recipient", "send", verbs.Send, SENT, "token", _remote("send"), status=201),
    Route("POST", ENTITY + "/acks", "ack", "Ack a task or response delivered to this entity, once", "ack", verbs.Ack,
          Acked, "recipient", _remote("ack"), status=201),
    Route("GET", "/trackers", "trackers", "Delivery, ack and notify state of each delivery (an agent's own)",
          "trackers", verbs.Trackers, Trackers, "own", _remote("trackers")),
    Route("GET", "/status", "status", "The delivery view: intake, tracker counts, overdue acks, escalations",
          "status", verbs.Status, Status, "operator_read", _remote("status")),
    Route("GET", "/presence", "presence", "Each agent recently active or not (never online)", "presence",
          verbs.Presence, Presence, "open", _remote("presence")),
    Route("POST", "/presence/beats", "presence_beat", "Record that an agent's session is alive", "presence_beat",
          verbs.PresenceBeat, Beat, "operator", _remote("presence_beat"), status=201),
    Route("POST", "/intake", "intake", "Deliver every envelope in the home's intake pending/, once per recipient",
          "intake", verbs.Intake, IntakeAnswer, "operator", _remote("intake")),
    Route("POST", "/mailman", "mailman", "One mailman pass: intake, then repings, timeouts and escalations due",
          "mailman", verbs.Mailman, PassAnswer, "operator", _remote("mailman")),
)

#: Missions: blocks and mission letters. The two human gestures (archive, receipt import) are no
#: route here: they are the Human View's, through the signed-in person's session (``pages_missions``).
MISSIONS: tuple[Route, ...] = (
    Route("GET", "/missions", "missions", "One head per mission, counts by phase, the landing count", "missions",
          verbs.Missions, MissionListing, "open", _remote("missions")),
    Route("GET", "/missions/{mission_id}", "mission", "One mission's whole chain, root to head", "mission",
          verbs.Mission, MissionChain, "open", _remote("mission")),
    Route("POST", "/missions", "mission_post", "Post the next letter of a mission (compare-and-swap on its head)",
          "mission_post", verbs.MissionPost, MissionPosted, "token", _remote("mission_post"), status=201),
    Route("GET", "/blocks", "blocks", "Every block with its versions, and each project's skeleton id", "blocks",
          verbs.Blocks, BlockListing, "open", _remote("blocks")),
    Route("POST", "/blocks", "block_add", "Add a block to a project", "block_add", verbs.BlockAdd, BlockChange,
          "operator", _remote("block_add"), status=201),
    Route("POST", "/blocks/{block_id}/bumps", "block_bump", "Move a block's boundary one version on", "block_bump",
          verbs.BlockBump, BlockChange, "operator", _remote("block_bump"), status=201),
)

#: Advisory file leases: an agent takes, renews and releases its own (an operator anyone's); the listing is open.
LEASES: tuple[Route, ...] = (
    Route("GET", "/leases", "leases", "Who holds which paths until when (active leases, or every one)", "leases",
          verbs.Leases, LeaseListing, "open", _remote("leases")),
    Route("POST", ENTITY + "/leases", "lease_take", "Take a lease on path globs (refused lease_conflict on an "
          "overlapping one, unless advisory)", "lease_take", verbs.LeaseTake, LeaseTaken, "own_token",
          _remote("lease_take"), status=201),
    Route("POST", ENTITY + "/leases/renewals", "lease_renew", "Extend this entity's active leases", "lease_renew",
          verbs.LeaseRenew, LeasesChanged, "own_token", _remote("lease_renew")),
    Route("POST", ENTITY + "/leases/releases", "lease_release", "Release this entity's active leases",
          "lease_release", verbs.LeaseRelease, LeasesChanged, "own_token", _remote("lease_release")),
)

ROUTES: tuple[Route, ...] = (
    Route("GET", "/boxes", "boxes", "Every box with its counts (open, fates, held)", "box", NoParams, Boxes,
          "open", _read(boxes)),
    Route("GET", "/sweep", "sweep", "Fates across the spool and every reachable box (no distribution)", "sweep",
          SweepParams, FilteredSweep, "open", _read(sweep)),
    Route("GET", "/boxes/{address}", "box", "One box read alone", "box", verbs.Box, BoxAnswer, "own",
          _remote("box")),
    Route("GET", "/projects", "projects", "The roster's projects and where their boxes are", "project_list",
          verbs.ProjectList, list[ProjectRow], "open", _read(lambda dc, v: dc.projects(v))),
    Route("GET", "/entities", "entities", "The roster's entities", "entity_list", verbs.EntityList,
          list[EntityRow], "open", _read(lambda dc, v: dc.entities(v))),
    Route("GET", ENTITY + "/inbox", "inbox", "The audit of one entity's inbox", "inbox", verbs.Inbox,
          InboxView, "own", _remote("inbox")),
    Route("GET", ITEM, "item", "One inbound item whole: envelope, body, thread, history", "show", verbs.Show,
          Shown, "own", _remote("show")),
    Route("GET", ENTITY + "/wait", "wait", "Long poll: new mail after a cursor, or the timeout (as `dovecote wait`)",
          "wait", verbs.Wait, WaitResult, "own", _remote("wait")),
    Route("GET", "/search", "search", "Full text over entity mail, newest first", "search", verbs.Search,
          SearchResult, "own", _remote("search")),
    Route("GET", "/needs", "needs", "What waits on a person, oldest first, each with the action that clears it",
          "inbox", needs.NeedsParams, Needs, "open", needs.needs),
    Route("GET", "/doctor", "doctor", "Counts only; fails open", "doctor", verbs.Doctor, Doctor, "open",
          _remote("doctor")),
    Route("POST", "/entities/{recipient}/messages", "send", "Send a message, task or response; durable when this "
          "answers", "send", verbs.Send, SENT, "token", _remote("send"), status=201),
    Route("POST", "/entities/{recipient}/drafts", "draft", "Keep a draft in the sender's outbox", "draft",
          verbs.Message, Delivery, "token", _remote("draft"), status=201),
    Route("POST", "/outbox", "outbox_send", "Deliver pending drafts (an agent's own)", "outbox_send",
          verbs.OutboxSend, OutboxSent, "token", _remote("outbox_send")),
    Route("POST", ITEM + "/replies", "reply", "Reply to an item (a message, or a task with its ack policy) in its "
          "thread", "send", rest_reply.Reply, SENT, "own_token", rest_reply.reply, status=201),
    Route("POST", ITEM + "/{kind}", "move", "A lifecycle move on an item, as compare-and-swap", "move", verbs.Move,
          Transition, "own_token", _remote("move")),
    Route("POST", "/reports", "report", "File one field report into the spool", "report", verbs.Report,
          ReportsFiled, "token", _remote("report"), status=201),
    Route("POST", "/distribute", "distribute", "File every spool letter into its box", "distribute",
          verbs.Distribute, DistributionAnswer, "token", _remote("distribute")),
    # -- case intelligence: reading cases, claims and monitors is anyone's, a receipt an agent's
    # (without a sentinel probe, as on MCP); probes, monitors and labels are operator work.
    Route("GET", "/cases", "cases", "Every case, with recurrence and kindless counts", "cases", verbs.Cases,
          Cases, "open", _remote("cases")),
    Route("GET", "/cases/{fingerprint:path}", "case", "One case whole, by fingerprint or case id", "case",
          verbs.Case, Case, "open", _remote("case")),
    Route("POST", "/receipts", "receipt", "File a triage receipt: it closes the letters it answers", "receipt",
          verbs.Receipt, ReceiptFiled, "token", _remote("receipt"), status=201),
    Route("GET", "/claims", "claims", "Claim vs measure per fingerprint (counts only)", "claims", ClaimsParams,
          Claims, "open", _claims),
    Route("POST", "/claims/labels", "claims_labels", "Append the resolved claims to field-labels.jsonl",
          "claims", ClaimsLabels, Claims, "operator", _claims),
    Route("POST", "/sentinels", "sentinels", "Run every fixed receipt's probe; a red one mints a regression",
          "sentinels", verbs.Sentinels, Sentinels, "operator", _remote("sentinels")),
    Route("GET", "/monitors", "monitors", "Every monitor and its state", "monitors", verbs.Monitors,
          Monitors, "open", _remote("monitors")),
    Route("POST", "/monitors", "monitor_add", "Add (or redefine) a dead-man's switch monitor", "monitor_add",
          verbs.MonitorAdd, MonitorAdded, "operator", _remote("monitor_add"), status=201),
    Route("POST", "/hooks/events", "hook_event", "Relay a coding agent's post-tool or stop hook (abandonment)",
          "hook_event", verbs.HookEvent, HookRelayed, "operator", _remote("hook_event")),
    *DELIVERY,
    *MISSIONS,
    *LEASES,
)


def principal(request: Request) -> Principal | None:
    """The principal of the request's bearer token (the app's guard put it there), or None."""
    found = request.scope.get("state", {}).get(PRINCIPAL)
    return found if isinstance(found, Principal) else None


Run = Callable[..., Awaitable[Any]]


def routes(run: Run, *, read_only: bool = False, stamp: Run | None = None) -> list[StarletteRoute]:
    """The Starlette routes of ``ROUTES``; ``run(fn, *args)`` calls the handle off the event loop,
    ``stamp(address)`` marks a box without taking the handle's worker (the long poll's watch)."""

    def endpoint(route: Route) -> Callable[[Request], Awaitable[Response]]:
        async def answer(request: Request) -> Response:
            who = principal(request)
            if route.body:  # a write: refused before its body is read when the server or the caller cannot write
                remote.refuse_if_read_only(route.verb, None, read_only)
                remote.writer(who, route.verb)
                value = await parse_body(route.params, request)  # type: ignore[arg-type]
            else:
                value = parse(route.params, request)
                remote.refuse_if_read_only(route.verb, value, read_only)
            if route.name == "wait" and stamp is not None:
                return json_response(await longpoll.wait(run, stamp, route.call, who, value))
            return json_response(await run(route.call, who, value), route.status)

        answer.__name__ = route.name
        return answer

    return [StarletteRoute(r.path, endpoint(r), methods=[r.method], name=r.name) for r in ROUTES]

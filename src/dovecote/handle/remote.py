"""What a remote caller may do: the one call of each verb for a principal, shared by MCP, REST, the pages
and the event stream.

Law: a remote face (MCP tools, REST routes) decodes a verb, asks
``refuse_if_read_only`` (the one deny list, ``verbs.writes``), and makes the
verb's call from ``CALLS`` with the principal its request carries. Each call
applies the one authorization rule first (``tokens.authorize`` through
``Dovecote.authorize``: an agent sends to anyone but reads and moves only its
own box's items; an operator reads everything) and binds the principal's entity
as the actor of every write, so the faces cannot disagree on who may do
what: the Human View's pages read an entity's mail through these calls with
the request's principal (``may`` lists the inboxes a page may show), and the
event stream's place is ``watch``'s (an agent's stream: its own box alone).

``principal`` is None only for a request with no token on a loopback server
(the person at this machine reading with curl or the page) or with the login
link's session (the person at the screen): it reads everything and writes nothing
(``unauthorized``): a write always has a token's entity behind it. A remote caller never names a file on the server
(``server_file``): ``body_file`` and ``artifact_paths`` would let it read any
file the server can, and ``dir`` (intake's and the mailman's folder) any
folder; they take the home's intake folder. The one caller who names a folder
is the local operator (``Principal.local``: ``dovecote mcp`` on stdio with no
token, the person at this machine), and only to import a vNext mailbox
(``import_vnext``; an operator token is ``server_file``).

Delivery's operator work (intake, a mailman pass, a presence beat, the status
view of every agent's deliveries) is an operator's (``operator``): an agent
token is ``forbidden``; a local reader (no token, loopback) reads the status
as it reads everything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dovecote import verbs
from dovecote.handle import remote_leases
from dovecote.handle.api import Actor, Dovecote, Principal, Watch

if TYPE_CHECKING:
    from dovecote.ops.admin.doctor import Doctor
    from dovecote.ops.cases.abandonment import HookRelayed
    from dovecote.ops.cases.cases import Case, Cases, Claims, ReceiptFiled
    from dovecote.ops.cases.monitors import MonitorAdded, Monitors
    from dovecote.ops.cases.sentinels import Sentinels
    from dovecote.ops.delivery.acks import Acked
    from dovecote.ops.delivery.import_vnext import VnextImported
    from dovecote.ops.delivery.presence import Beat, Presence
    from dovecote.ops.delivery.status import Status
    from dovecote.ops.delivery.trackers import Trackers
    from dovecote.ops.mail.inbox import InboxView
    from dovecote.ops.mail.outbox import OutboxSent
    from dovecote.ops.mail.send import Delivery
    from dovecote.ops.mail.show import Shown
    from dovecote.ops.mail.transitions import Transition
    from dovecote.ops.mail.wait import WaitResult
    from dovecote.ops.missions.blocks import BlockChange, BlockListing
    from dovecote.ops.missions.post import MissionChain, MissionListing, MissionPosted
    from dovecote.ops.reports.report import ReportsFiled
    from dovecote.ops.search.query import SearchResult
from dovecote.errors import Refusal
from dovecote.handle.api import DistributionAnswer, IntakeAnswer, PassAnswer, SentAnswer
from dovecote.model.results import Result, typed

Call = Callable[[Dovecote, "Principal | None", Any], Any]


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization`` header (None: no header); anything but ``Bearer <token>`` is refused.

    Both HTTP faces (MCP's middleware and the REST guard) read the header here, then ask
    ``Dovecote.authenticate``: one rule for who a request is.
    """
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Refusal("unauthorized", "send Authorization: Bearer <token> (dovecote token issue)")
    return token.strip()


def refuse_if_read_only(name: str, v: verbs.Verb | None, read_only: bool) -> None:
    """The one deny list (``verbs.writes``), applied to a call on a read-only face."""
    if read_only and verbs.writes(name, v):
        raise Refusal("read_only", f"{name} writes, and this server was started read-only")


def actor_of(p: Principal) -> Actor:
    """The actor of every write over a connection: the principal's entity, with its role (a message's trust cap)."""
    return Actor(agent=p.entity, entity=p.entity, role=p.role)


def writer(p: Principal | None, verb: str) -> Principal:
    """The principal a write acts as; a write without a token is ``unauthorized``."""
    if p is None:
        raise Refusal("unauthorized", f"{verb} writes: send Authorization: Bearer <token> (dovecote token issue)")
    return p


def own(p: Principal | None, verb: str, entity: str) -> None:
    """``verb`` in ``entity``'s box is the principal's to do (no principal: a local read, allowed)."""
    if p is not None:
        Dovecote.authorize(p, verb, entity)


def may(p: Principal | None, verb: str, entity: str) -> bool:
    """Whether ``own`` allows ``verb`` in ``entity``'s box (a page lists only the inboxes its reader may open)."""
    try:
        own(p, verb, entity)
    except Refusal:
        return False
    return True


def as_self(p: Principal, field: str, given: str | None) -> None:
    """An agent writes as itself: naming another author or sender is ``forbidden``."""
    if given is not None and given != p.entity and p.role != "operator":
        raise Refusal("forbidden", f"{p.entity} may not write as {given!r} ({field})")


#: The fields of a verb that name files or folders on the server (a message's, intake's and the mailman's).
MESSAGE_FILES = ("body_file", "artifact_paths")
SERVER_FILES = (*MESSAGE_FILES, "dir")


def reading_scope(p: Principal | None, given: str | None) -> str | None:
    """Whose items a read covers: the entity asked for; else, for an agent, its own box (an operator or a
    local reader: every box, None)."""
    return given if given is not None or p is None or p.role == "operator" else p.entity


def author(p: Principal | None, verb: str, v: verbs.Message) -> Principal:
    """The principal a message is written by: a token's entity, as itself, naming no server file."""
    w = writer(p, verb)
    as_self(w, "sender", v.sender)
    refuse_server_files(v)
    return w


def refuse_server_files(v: verbs.Verb) -> None:
    """A remote caller names no file on the server (see the module docstring)."""
    named = [f for f in SERVER_FILES if getattr(v, f, None)]
    if named:
        raise Refusal("server_file", f"{' and '.join(named)} would read files on the server; a remote caller "
                                     "sends the body itself")


def report(dc: Dovecote, p: Principal | None, v: verbs.Report) -> ReportsFiled:
    from dovecote.handle.api import ReportsFiled

    w = writer(p, "report")
    as_self(w, "agent", v.agent)
    return ReportsFiled.of(dc.report(v, actor=actor_of(w)))


def distribute(dc: Dovecote, p: Principal | None, v: verbs.Distribute) -> DistributionAnswer:
    writer(p, "distribute")
    return typed(DistributionAnswer, dc.distribute(v).to_dict())


def sweep(dc: Dovecote, p: Principal | None, v: verbs.Sweep) -> dict[str, Any]:
    if v.distribute:
        writer(p, "sweep --distribute")
    return dc.sweep(v).to_dict()


def box(dc: Dovecote, p: Principal | None, v: verbs.Box) -> dict[str, Any]:
    if v.address.startswith("entity:"):  # an entity's box holds message bodies
        own(p, "show", v.address.partition(":")[2])
    return dc.box(v).to_dict()


def doctor(dc: Dovecote, p: Principal | None, v: verbs.Doctor) -> Doctor:
    return dc.doctor(v)


def send(dc: Dovecote, p: Principal | None, v: verbs.Message) -> Delivery | SentAnswer:
    """A message (``Delivery``), or (``verbs.Send``) a task or response, to one recipient or to all."""
    sent = dc.send(v, actor=actor_of(author(p, "send", v)))
    return sent if isinstance(sent, Result) else typed(SentAnswer, sent.to_dict())  # a Delivery is typed already


def ack(dc: Dovecote, p: Principal | None, v: verbs.Ack) -> Acked:
    """Only the recipient acks: the principal's own deliveries (``forbidden`` for another box)."""
    w = writer(p, "ack")
    own(w, "ack", v.entity_id)
    return dc.ack(v, actor=actor_of(w))


def trackers(dc: Dovecote, p: Principal | None, v: verbs.Trackers) -> Trackers:
    """An agent's trackers are the deliveries to it; an operator or a local reader may read any, or all."""
    entity = reading_scope(p, v.entity_id)
    if entity is not None:
        own(p, "trackers", entity)
    return dc.trackers(verbs.Trackers(entity_id=entity, work_item_id=v.work_item_id, thread_id=v.thread_id,
                                      limit=v.limit))


def draft(dc: Dovecote, p: Principal | None, v: verbs.Message) -> Delivery:
    w = author(p, "draft", v)
    return dc.draft(v, actor=actor_of(w))


def outbox_send(dc: Dovecote, p: Principal | None, v: verbs.OutboxSend) -> OutboxSent:
    """An agent delivers its own drafts (by default, and only those); an operator anyone's."""
    w = writer(p, "outbox_send")
    as_self(w, "sender", v.sender)
    sender = reading_scope(w, v.sender)
    from dovecote.handle.api import OutboxSent

    return OutboxSent(dc.outbox_send(verbs.OutboxSend(sender=sender), actor=actor_of(w)))


def move(dc: Dovecote, p: Principal | None, v: verbs.Move) -> Transition:
    w = writer(p, v.kind.value)
    own(w, v.kind.value, v.entity_id)
    return dc.move(v, actor=actor_of(w))


def inbox(dc: Dovecote, p: Principal | None, v: verbs.Inbox) -> InboxView:
    """The inbox as it is; reading it never marks anything seen (seen is the explicit move)."""
    entity = v.entity_id or (p.entity if p is not None else None)
    if entity is not None:
        own(p, "inbox", entity)
    return dc.inbox(verbs.Inbox(entity_id=entity, current_tic=v.current_tic, direction=v.direction,
                                include_terminal=v.include_terminal))


def show(dc: Dovecote, p: Principal | None, v: verbs.Show) -> Shown:
    own(p, "show", v.entity_id)
    return dc.show(v)


def search(dc: Dovecote, p: Principal | None, v: verbs.Search) -> SearchResult:
    """An agent searches its own inbox (by default, and only that); an operator or a local reader all."""
    entity = reading_scope(p, v.entity_id)
    if entity is not None:
        own(p, "search", entity)
    return dc.search(verbs.Search(query=v.query, entity_id=entity, include_terminal=v.include_terminal,
                                  limit=v.limit))


def wait(dc: Dovecote, p: Principal | None, v: verbs.Wait) -> WaitResult:
    own(p, "wait", v.entity_id)
    return dc.wait(v)


def watch(dc: Dovecote, p: Principal | None, cursor: str | None) -> Watch:
    """The event stream's place: an agent's narrowed to its own box (what it may ``inbox``), an operator's or a
    local reader's every box. A resumed cursor names no other box for an agent: it replays its own alone."""
    entity = reading_scope(p, None)
    if entity is not None:
        own(p, "inbox", entity)
    return dc.watch(cursor, entity_id=entity)


# -- case intelligence: reading the cases and filing a receipt are an agent's;
# running sentinels (commands on this machine), monitors and claims are operator work.


def cases(dc: Dovecote, p: Principal | None, v: verbs.Cases) -> Cases:
    return dc.cases(v)


def operator(p: Principal | None, verb: str) -> Principal:
    """The principal of operator work (probes run on this machine, monitors, labels); an agent is ``forbidden``."""
    w = writer(p, verb)
    if w.role != "operator":
        raise Refusal("forbidden", f"{w.entity} may not {verb}: it is an operator's (an operator token)")
    return w


def case(dc: Dovecote, p: Principal | None, v: verbs.Case) -> Case:
    return dc.case(v)


def sentinels(dc: Dovecote, p: Principal | None, v: verbs.Sentinels) -> Sentinels:
    operator(p, "sentinels")
    return dc.sentinels(v)


def claims(dc: Dovecote, p: Principal | None, v: verbs.Claims) -> Claims:
    """Counts are anyone's; appending them to field-labels.jsonl is an operator's."""
    if v.write_labels:
        operator(p, "claims --write-labels")
    return dc.claims(v)


def monitor_add(dc: Dovecote, p: Principal | None, v: verbs.MonitorAdd) -> MonitorAdded:
    w = operator(p, "monitor_add")
    return dc.monitor_add(v, actor=actor_of(w))


def monitors(dc: Dovecote, p: Principal | None, v: verbs.Monitors) -> Monitors:
    return dc.monitors(v)


def receipt(dc: Dovecote, p: Principal | None, v: verbs.Receipt) -> ReceiptFiled:
    w = writer(p, "receipt")
    if v.sentinel_probe is not None and w.role != "operator":  # a probe is a command this machine will run
        raise Refusal("forbidden", f"{w.entity} may not set a sentinel probe (an operator's, at a terminal)")
    return dc.receipt(v, actor=actor_of(w))


# -- delivery: an agent acks its own deliveries and reads its trackers; the status view of every
# agent's deliveries, intake, a mailman pass and presence beats are operator work.


def operator_read(p: Principal | None, verb: str) -> None:
    """``verb`` reads what is an operator's: an agent token is ``forbidden`` (no principal: a local read, allowed)."""
    if p is not None and p.role != "operator":
        raise Refusal("forbidden", f"{p.entity} may not {verb}: it is an operator's (an operator token)")


def status(dc: Dovecote, p: Principal | None, v: verbs.Status) -> Status:
    operator_read(p, "read the status of every delivery")
    return dc.status(v)


def presence(dc: Dovecote, p: Principal | None, v: verbs.Presence) -> Presence:
    return dc.presence(v)


def presence_beat(dc: Dovecote, p: Principal | None, v: verbs.PresenceBeat) -> Beat:
    operator(p, "record a presence beat")
    return dc.presence_beat(v)


def hook_event(dc: Dovecote, p: Principal | None, v: verbs.HookEvent) -> HookRelayed:
    """An agent's hook relayed by an operator (as presence beats are): the assistive session ledger is theirs."""
    operator(p, "relay an agent's hook event")
    return dc.hook_event(v)


def intake(dc: Dovecote, p: Principal | None, v: verbs.Intake) -> IntakeAnswer:
    operator(p, "run intake")
    refuse_server_files(v)
    return typed(IntakeAnswer, dc.intake(v).to_dict())


def mailman(dc: Dovecote, p: Principal | None, v: verbs.Mailman) -> PassAnswer:
    """One pass: a remote call answers when it is done (``loop`` is a terminal's ``dovecote mailman --loop``)."""
    operator(p, "run the mailman")
    refuse_server_files(v)
    if v.loop:
        raise Refusal("invalid_field", "loop: a remote call runs one mailman pass; loop at a terminal "
                                       "(dovecote mailman --loop)")
    (one,) = dc.mailman(v, passes=1)
    return typed(PassAnswer, one.to_dict())


def import_vnext(dc: Dovecote, p: Principal | None, v: verbs.ImportVnext) -> VnextImported:
    """It reads a folder on the server: only the local operator names one (an operator token: ``server_file``)."""
    w = operator(p, "import a vNext mailbox")
    if not w.local:
        raise Refusal("server_file", "import_vnext reads a folder on the server: only the local operator names "
                                     "one (dovecote mcp on this machine without a token, or dovecote import vnext)")
    return dc.import_vnext(v)
# -- missions: reading missions and blocks is anyone's; a post is a token's (its entity posts); a
# block is an operator's to add or bump. The two human gestures (mission_archive, receipt_import) are not here:
# no token reaches them (the Human View's session does, ``http.pages_missions``).


def mission_post(dc: Dovecote, p: Principal | None, v: verbs.MissionPost) -> MissionPosted:
    return dc.mission_post(v, actor=actor_of(writer(p, "mission_post")))


def missions(dc: Dovecote, p: Principal | None, v: verbs.Missions) -> MissionListing:
    return dc.missions(v)


def mission(dc: Dovecote, p: Principal | None, v: verbs.Mission) -> MissionChain:
    return dc.mission(v)


def blocks(dc: Dovecote, p: Principal | None, v: verbs.Blocks) -> BlockListing:
    return dc.blocks(v)


def block_add(dc: Dovecote, p: Principal | None, v: verbs.BlockAdd) -> BlockChange:
    return dc.block_add(v, actor=actor_of(operator(p, "add a block")))


def block_bump(dc: Dovecote, p: Principal | None, v: verbs.BlockBump) -> BlockChange:
    return dc.block_bump(v, actor=actor_of(operator(p, "bump a block")))


#: What a remote caller may call, by verb name (roster, tokens, hooks, verify, view, imports, organize: a terminal's).
CALLS: dict[str, Call] = {
    "report": report, "distribute": distribute, "sweep": sweep, "box": box, "doctor": doctor, "send": send,
    "draft": draft, "outbox_send": outbox_send, "move": move, "inbox": inbox, "show": show, "search": search,
    "wait": wait, "ack": ack, "trackers": trackers, "cases": cases, "receipt": receipt,
    "case": case, "sentinels": sentinels, "claims": claims, "monitor_add": monitor_add, "monitors": monitors,
    "status": status, "presence": presence, "presence_beat": presence_beat, "intake": intake, "mailman": mailman,
    "import_vnext": import_vnext, "hook_event": hook_event, **remote_leases.CALLS,  # leases: remote_leases
    # missions; never mission_archive or receipt_import (human gestures)
    "mission_post": mission_post, "missions": missions, "mission": mission, "blocks": blocks,
    "block_add": block_add, "block_bump": block_bump,
}

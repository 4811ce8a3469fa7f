"""The library API: one handle on a dovecote home.

Every face (CLI, MCP, HTTP) opens a ``Dovecote`` and calls its methods, so the
faces can never disagree: the rules live in ``ops`` and ``derive``, and this
class only wires a store and a roster to them. A handle is warm: it keeps
readers and folds in memory and, on the next call, reads only what was appended
since (``verify`` proves a warm answer equals a cold one).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, overload

import msgspec

from dovecote import verbs
from dovecote.derive.inbox.state import FLAG_OVERDUE, FLAG_STALE
from dovecote.handle import inbox as inboxhandle
from dovecote.handle.agents import AgentVerbs
from dovecote.handle.cases import CaseVerbs
from dovecote.handle.core import ActorArg, address_of, fields
from dovecote.handle.delivery import DeliveryVerbs
from dovecote.handle.lazy import ELSEWHERE, RESULTS
from dovecote.handle.leases import LeaseVerbs
from dovecote.handle.missions import MissionVerbs
from dovecote.handle.roster import RosterVerbs
from dovecote.model.addresses import Address
from dovecote.model.credentials import Principal
from dovecote.ops.agents.feed import Event, Watch
from dovecote.ops.context import Actor, Now, utc_now
from dovecote.ops.mail import send as mail
from dovecote.ops.mail.injection import inbox_injection
from dovecote.ops.reports import report as report_op
from dovecote.ops.reports.distribute import Distribution, distribute
from dovecote.store.core import CALLS_AT_ONCE, Store
from dovecote.verbs import checked

if TYPE_CHECKING:  # these ops are imported on first use: a hook's cold start loads none of them
    from dovecote.handle.home import Migrated as Migrated
    from dovecote.handle.home import copy_store as copy_store
    from dovecote.handle.home import init as init
    from dovecote.handle.home import merge_ledgers as merge_ledgers
    from dovecote.handle.home import migrate_store as migrate_store
    from dovecote.ops.admin import verify as verify_op
    from dovecote.ops.admin.doctor import Doctor
    from dovecote.ops.admin.store_copy import Copied
    from dovecote.ops.agentmail.import_archive import AgentMailImported
    from dovecote.ops.agents.roster_use import EntityRow, ProjectRow, Use
    from dovecote.ops.cases.abandonment import HookRelayed
    from dovecote.ops.cases.cases import Case, Cases, Claims, ReceiptFiled
    from dovecote.ops.cases.monitors import MonitorAdded, Monitors
    from dovecote.ops.cases.sentinels import Sentinels
    from dovecote.ops.delivery.acks import Acked
    from dovecote.ops.delivery.import_vnext import VnextImported
    from dovecote.ops.delivery.presence import Beat, Presence
    from dovecote.ops.delivery.shapes import IntakeAnswer, PassAnswer, SentAnswer
    from dovecote.ops.delivery.status import Status
    from dovecote.ops.delivery.trackers import Trackers
    from dovecote.ops.delivery.work_send import Sent
    from dovecote.ops.mail.inbox import InboxView
    from dovecote.ops.mail.outbox import OutboxRow, OutboxSent
    from dovecote.ops.mail.send import Delivery
    from dovecote.ops.mail.show import Shown
    from dovecote.ops.mail.stale import StaleCheck
    from dovecote.ops.mail.transitions import Transition
    from dovecote.ops.mail.wait import WaitResult
    from dovecote.ops.missions.blocks import BlockChange, BlockListing, ReceiptImported
    from dovecote.ops.missions.gestures import KeySet
    from dovecote.ops.missions.post import MissionArchived, MissionChain, MissionListing, MissionPosted
    from dovecote.ops.reports.box import BoxContents
    from dovecote.ops.reports.report import ReportsFiled
    from dovecote.ops.reports.shapes import BoxAnswer, DistributionAnswer, SweepAnswer
    from dovecote.ops.reports.sweep import Progress, SweepResult
    from dovecote.ops.search.query import SearchMatch, SearchResult
    from dovecote.ops.tree import tree_import as tree_import_op
    from dovecote.ops.tree import view as view_op
    from dovecote.ops.tree.organize import Organized

__all__ = [
    "FLAG_OVERDUE", "FLAG_STALE", "Acked", "Actor", "Beat", "BlockChange", "BlockListing", "BoxAnswer", "Case", "Cases",
    "Claims", "Copied", "Delivery", "DistributionAnswer", "Doctor", "Dovecote", "EntityRow", "Event", "HookRelayed",
    "InboxView", "IntakeAnswer", "KeySet", "Migrated", "MissionArchived", "MissionChain", "MissionListing",
    "MissionPosted", "MonitorAdded", "Monitors", "Organized", "OutboxRow", "OutboxSent", "PassAnswer", "Presence",
    "Principal", "ProjectRow", "ReceiptFiled", "ReceiptImported", "ReportsFiled", "SearchMatch", "SearchResult",
    "SentAnswer", "Sentinels", "Shown", "StaleCheck", "Status", "SweepAnswer", "Trackers", "Transition", "Use",
    "VnextImported", "WaitResult", "Watch", "copy_store", "inbox_injection", "init", "merge_ledgers", "migrate_store",
    "open_home",
]

def __getattr__(name: str) -> Any:
    """A typed answer of ``RESULTS`` (or a name of ``ELSEWHERE``), imported when a face first names it."""
    where = RESULTS.get(name) or ELSEWHERE.get(name)
    if where is not None:
        import importlib

        return getattr(importlib.import_module(where), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Dovecote(RosterVerbs, AgentVerbs, DeliveryVerbs, CaseVerbs, MissionVerbs, LeaseVerbs):
    """A dovecote home: roster, store, and the use cases over them.

    ``actor`` is who acts when a call names nobody (a face binds it: the CLI
    from its flags and environment); ``clock`` returns an aware UTC now (the
    real clock by default). Every acting or dated method also takes
    ``actor=``/``now=`` for one call.
    """

    #: How many calls a face runs on one handle at once (its worker threads): as many as the
    #: PostgreSQL store's pooled connections (``store.CALLS_AT_ONCE`` says why).
    CALLS_AT_ONCE: ClassVar[int] = CALLS_AT_ONCE

    def report_boxes(self) -> list[Address]:
        """The boxes field reports are filed into: home and every project."""
        return self.roster.report_boxes()

    def reachable(self, address: str | Address) -> bool:
        """Whether a box's ledger can be read here (a box in a repository not cloned here cannot)."""
        return self.store.reachable(address_of(address))

    def default_entity(self, *, actor: ActorArg = None) -> str:
        """The entity a call that names none is about: the actor's, else the only one."""
        return inboxhandle.default_entity(self._ctx(actor=actor))

    # Every verb below takes its typed input (``verbs.py``) and passes it through
    # ``verbs.checked`` first, so a library caller meets the ranges and names a
    # remote one does. ``actor=``/``now=`` are not input: they bind who acts and
    # when, for one call.

    # -- field reports ----------------------------------------------------------

    @fields(verbs.Report, whole=(list, tuple))
    def report(
        self,
        v: verbs.Report | Sequence[verbs.Report | Mapping[str, Any]],
        /,
        *,
        actor: ActorArg = None,
        now: datetime | None = None,
    ) -> list[tuple[str, bool]]:
        """Append field reports to the spool, all or none; one without an author is by the actor.

        A plain mapping (a letter as JSON gives it) is decoded as ``verbs.decode`` does.
        """
        given = [v] if isinstance(v, verbs.Report) else list(v)
        reports = verbs.decode_many(
            verbs.Report, [msgspec.to_builtins(r) if isinstance(r, verbs.Report) else r for r in given], "report"
        )
        return report_op.report(self._ctx(now=now, actor=actor), [r.letter() for r in reports])

    @fields(verbs.Distribute)
    def distribute(self, v: verbs.Distribute | None = None, /) -> Distribution:
        return distribute(self.context)

    @fields(verbs.Sweep)
    def sweep(self, v: verbs.Sweep | None = None, /, *, progress: Progress | None = None) -> SweepResult:
        v = checked(v or verbs.Sweep())
        from dovecote.ops.reports.sweep import sweep

        return sweep(self.context, do_distribute=v.distribute, include_all=v.include_all, progress=progress)

    @fields(verbs.Box)
    def box(self, v: verbs.Box, /) -> BoxContents:
        v = checked(v)
        from dovecote.ops.reports.box import box

        return box(self.context, address_of(v.address), include_all=v.include_all)

    @fields(verbs.Doctor)
    def doctor(self, v: verbs.Doctor | None = None, /, *, now: datetime | None = None) -> Doctor:
        from dovecote.ops.admin import doctor as doctor_op

        return doctor_op.doctor(self.context, now)

    @fields(verbs.Verify)
    def verify(self, v: verbs.Verify | None = None, /, *, now: datetime | None = None) -> verify_op.VerifyResult:
        from dovecote.ops.admin import verify as verify_op

        return verify_op.verify(self._ctx(now=now))

    # -- entity mail --------------------------------------------------------------

    @overload
    def send(  # type: ignore[overload-overlap]
        self, v: verbs.Send, /, *, actor: ActorArg = None, now: datetime | None = None
    ) -> mail.Delivery | Sent: ...
    @overload
    def send(self, v: verbs.Message, /, *, actor: ActorArg = None, now: datetime | None = None) -> mail.Delivery: ...
    @overload
    def send(self, *values: Any, actor: ActorArg = None, now: datetime | None = None, **named: Any
             ) -> mail.Delivery | Sent: ...  # a Send's fields as arguments (``handle_core.fields``)

    @fields(verbs.Send)
    def send(
        self, v: verbs.Message | verbs.Send, /, *, actor: ActorArg = None, now: datetime | None = None
    ) -> mail.Delivery | Sent:
        """Deliver a message; from the actor's entity unless ``sender``.

        A ``Send`` that is a task or a response, or goes ``to_all``, answers
        ``Sent`` (one row per delivery); a plain message answers ``Delivery``.
        """
        if isinstance(v, verbs.Send):
            from dovecote.ops.delivery import work_send

            v = checked(v)
            if v.type != "message" or v.to_all:
                return work_send.send(self._ctx(now=now, actor=actor), v)
            assert v.recipient is not None  # the verb refuses a send with neither recipient nor to_all
            # a checked Send's fields, its recipient included, are a checked Message's (Send extends Message)
            return mail.send(self._ctx(now=now, actor=actor), work_send.as_message(v, v.recipient))
        return mail.send(self._ctx(now=now, actor=actor), checked(v))

    @fields(verbs.Send)
    def send_work(self, v: verbs.Send, /, *, actor: ActorArg = None, now: datetime | None = None) -> Sent:
        """``send`` for a caller that wants ``Sent`` whatever ``v`` is (a task, a response, a broadcast)."""
        from dovecote.ops.delivery import work_send

        return work_send.send(self._ctx(now=now, actor=actor), checked(v))

    @fields(verbs.Message)
    def draft(self, v: verbs.Message, /, *, actor: ActorArg = None, now: datetime | None = None) -> mail.Delivery:
        """Write an outbound draft into the sender's box."""
        return mail.draft(self._ctx(now=now, actor=actor), checked(v))

    @fields(verbs.OutboxSend)
    def outbox_send(
        self, v: verbs.OutboxSend | None = None, /, *, actor: ActorArg = None, now: datetime | None = None
    ) -> list[OutboxRow]:
        from dovecote.ops.mail import outbox

        v = checked(v or verbs.OutboxSend())
        return outbox.outbox_send(self._ctx(now=now, actor=actor), v.sender)

    @fields(verbs.Move)
    def move(self, v: verbs.Move, /, *, actor: ActorArg = None, now: datetime | None = None) -> mail.Transition:
        """claim, complete, defer, undefer, nack or seen, as a compare-and-swap; by the actor, else the entity."""
        v = checked(v)
        return mail.transition(
            self._ctx(now=now, actor=actor), v.entity_id, v.ref, v.kind.value, current=v.current_tic, **v.options()
        )

    @fields(verbs.Inbox)
    def inbox(
        self, v: verbs.Inbox | None = None, /, *, actor: ActorArg = None, now: datetime | None = None
    ) -> InboxView:
        """The audit of one entity's inbox (see ``ops.mail.inbox.read_inbox``)."""
        return self.inbox_until(v, actor=actor, now=now)[0]

    @fields(verbs.Inbox)
    def inbox_until(
        self, v: verbs.Inbox | None = None, /, *, actor: ActorArg = None, now: datetime | None = None
    ) -> tuple[InboxView, datetime | None]:
        """``inbox``, and the moment that answer changes with no new letter (None: only a letter changes it).

        A face that caches its rendering keeps it until then.
        """
        return inboxhandle.inbox_until(self._ctx(actor=actor), v or verbs.Inbox(), now=now)

    @fields(verbs.Inbox)
    def injection_until(
        self, v: verbs.Inbox | None = None, /, *, actor: ActorArg = None, now: datetime | None = None
    ) -> tuple[str, datetime | None]:
        """``inbox_injection(self.inbox(v))``, the same text, without building the view (the hook's
        cold path, see ``ops.mail.inbox.read_injection``); and when it changes with no new letter."""
        return inboxhandle.injection_until(self._ctx(actor=actor), v or verbs.Inbox(), now=now)

    def inbox_dependencies(self, entity_id: str) -> list[str]:
        """What an inbox reading of ``entity_id`` depends on, for a face's cached rendering."""
        return inboxhandle.dependencies(self.context, entity_id)

    def inbox_probe(self, entity_id: str) -> tuple[str, int, int] | None:
        """After an inbox reading: how a face checks, without this library, that the
        entity's box has had nothing appended since (``store.Probe``); None: it cannot."""
        return inboxhandle.probe(self.context, entity_id)

    @fields(verbs.Show)
    def show(self, v: verbs.Show, /, *, now: datetime | None = None) -> Shown:
        """One inbound item whole: envelope, body, thread and history (see ``ops.mail.show``)."""
        from dovecote.ops.mail import show as show_op

        v = checked(v)
        return show_op.show(self.context, v.entity_id, v.ref, current=v.current_tic, now=now)

    @fields(verbs.View)
    def view(self, v: verbs.View | None = None, /, *, now: datetime | None = None) -> view_op.FolderSync:
        """Write the /inbox folder view of one entity, or of all (see ``ops.tree.view.view``)."""
        v = checked(v or verbs.View())
        from dovecote.ops.tree import view as view_op

        return view_op.view(self.context, v.entity_id, current=v.current_tic, now=now, rebuild=v.rebuild)

    @fields(verbs.ImportInboxTree)
    def import_inbox_tree(
        self, v: verbs.ImportInboxTree, /, *, now: datetime | None = None
    ) -> tree_import_op.ImportResult:
        """Adopt an existing /inbox tree (see ``ops.tree.tree_import.import_inbox_tree``)."""
        v = checked(v)
        from dovecote.ops.tree import tree_import as tree_import_op

        return tree_import_op.import_inbox_tree(self._ctx(now=now), Path(v.path), v.entity_id, current=v.current_tic)

    # -- vNext mailbox directories ---------------------------------------------

    @fields(verbs.ImportVnext)
    def import_vnext(self, v: verbs.ImportVnext, /) -> VnextImported:
        """Read a vNext mailbox directory; with ``write``, import it (see ``ops.delivery.import_vnext``)."""
        v = checked(v)
        from dovecote.ops.delivery import import_vnext as import_vnext_op

        return import_vnext_op.import_vnext(self._ctx(), Path(v.path), write=v.write)

    @fields(verbs.ImportAgentMail)
    def import_agent_mail(self, v: verbs.ImportAgentMail, /) -> AgentMailImported:
        """Read an mcp_agent_mail database; with ``write``, register its names and import it
        (see ``ops.agentmail.import_archive``)."""
        v = checked(v)
        from dovecote.ops.agentmail import import_archive as am

        prep = am.prepare(Path(v.path))
        added: tuple[list[str], list[str]] = ([], [])
        if v.write:
            added = am.missing(self.roster, prep.plan)
            if added[0] or added[1]:
                self._edit_roster(am.enrol(prep.plan))
        return am.finish(self._ctx(), prep, write=v.write, added=added)

    # -- the letter feed (live events; see ``ops.agents.feed``) ------------------------------

    def watch(self, cursor: str | None = None, *, entity_id: str | None = None) -> Watch:
        """A place in the feed: at ``cursor`` (a token an event carried), else at the end of every box now;
        ``entity_id`` narrows it to that entity's box alone (an agent's stream)."""
        from dovecote.ops.agents import feed as feed_op

        return feed_op.start(self.context, cursor, entity_id)

    def poll(self, watch: Watch) -> list[Event]:
        """The letters appended to any box since ``watch``'s place, as events; advances ``watch``."""
        from dovecote.ops.agents import feed as feed_op

        return feed_op.poll(self.context, watch)

    # -- search and hygiene -------------------------------------------------------
    # Imported on first use: sqlite3 and the scanners stay off the start-up path of
    # every other command.

    @fields(verbs.Search)
    def search(self, v: verbs.Search, /, *, now: datetime | None = None) -> SearchResult:
        """Full text over entity mail, newest first (see ``ops.search.query.search``)."""
        from dovecote.handle import search as searchhandle

        return searchhandle.search(self.context, v, now=now)

    @fields(verbs.StaleCheck)
    def stale_check(self, v: verbs.StaleCheck | None = None, /, *, now: datetime | None = None) -> StaleCheck:
        """Attention debt across every entity, and the day's signals (see ``ops.mail.stale``)."""
        from dovecote.ops.mail import stale as stale_op

        v = checked(v or verbs.StaleCheck())
        return stale_op.stale_check(self.context, current=v.current_tic, emit=v.emit_signals, now=now)

    @fields(verbs.Organize)
    def organize(self, v: verbs.Organize, /, *, now: datetime | None = None) -> Organized:
        """Hygiene report for one inbox; ``apply`` only groups loose files (see ``ops.tree.organize``)."""
        from dovecote.ops.tree import organize as organize_op

        v = checked(v)
        return organize_op.organize(self.context, v.entity_id, apply=v.apply, current=v.current_tic, now=now)


def open_home(
    root: str | os.PathLike[str] | None = None,
    *,
    actor: Actor | None = None,
    clock: Now = utc_now,
    store: Store | None = None,
) -> Dovecote:
    """Open the home found the way git finds a repository (see ``home.find_home``)."""
    from dovecote.handle.search import home_of

    return Dovecote(home_of(root), actor=actor, clock=clock, store=store)

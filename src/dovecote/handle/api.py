"""The library API: one handle on a dovecote home.

Every face (CLI, MCP, HTTP) opens a ``Dovecote`` and calls its methods, so the
faces can never disagree: the rules live in ``ops`` and ``derive``, and this
class only wires a store and a roster to them. A handle is warm: it keeps
readers and folds in memory and, on the next call, reads only what was appended
since (``verify`` proves a warm answer equals a cold one).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, overload

import msgspec
from msgspec.structs import replace

from dovecote import verbs
from dovecote.derive.inbox.state import FLAG_OVERDUE, FLAG_STALE
from dovecote.errors import Refusal
from dovecote.handle import inbox as inboxhandle
from dovecote.handle.agents import AgentVerbs
from dovecote.handle.cases import CaseVerbs
from dovecote.handle.core import ActorArg, address_of, fields
from dovecote.handle.delivery import DeliveryVerbs
from dovecote.handle.missions import MissionVerbs
from dovecote.model.addresses import Address
from dovecote.model.credentials import Principal
from dovecote.model.results import Result
from dovecote.ops.agents.feed import Event, Watch
from dovecote.ops.agents.roster_use import (
    EntityRow,
    ProjectRow,
    Use,
    entity_rows,
    entity_use,
    project_rows,
    project_use,
    refuse_if_used,
)
from dovecote.ops.context import Actor, Now, utc_now
from dovecote.ops.mail import send as mail
from dovecote.ops.mail.injection import inbox_injection
from dovecote.ops.reports import report as report_op
from dovecote.ops.reports.distribute import Distribution, distribute
from dovecote.roster import config as roster_mod
from dovecote.roster import edit as roster_edit
from dovecote.roster.home import Layout, find_home
from dovecote.roster.routing import RosterIndex
from dovecote.store.core import CALLS_AT_ONCE, Store
from dovecote.util.osutil import file_stamp
from dovecote.verbs import checked

if TYPE_CHECKING:  # these ops are imported on first use: a hook's cold start loads none of them
    from dovecote.ops.admin import verify as verify_op
    from dovecote.ops.admin.doctor import Doctor
    from dovecote.ops.admin.store_copy import Copied
    from dovecote.ops.cases.abandonment import HookRelayed
    from dovecote.ops.cases.cases import Case, Cases, Claims, ReceiptFiled
    from dovecote.ops.cases.monitors import MonitorAdded, Monitors
    from dovecote.ops.cases.sentinels import Sentinels
    from dovecote.ops.delivery import import_vnext as import_vnext_op
    from dovecote.ops.delivery.acks import Acked
    from dovecote.ops.delivery.presence import Beat, Presence
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
    from dovecote.ops.reports.report import ReportsFiled
    from dovecote.ops.reports.sweep import BoxContents, Progress, SweepResult
    from dovecote.ops.search.query import SearchMatch, SearchResult
    from dovecote.ops.tree import tree_import as tree_import_op
    from dovecote.ops.tree import view as view_op
    from dovecote.ops.tree.organize import Organized

__all__ = [
    "FLAG_OVERDUE", "FLAG_STALE", "Acked", "Actor", "Beat", "BlockChange", "BlockListing", "Case", "Cases", "Claims",
    "Copied", "Delivery", "Doctor", "Dovecote", "EntityRow", "Event", "HookRelayed", "InboxView", "KeySet", "Migrated",
    "MissionArchived", "MissionChain", "MissionListing", "MissionPosted", "MonitorAdded", "Monitors", "Organized",
    "OutboxRow", "OutboxSent", "Presence", "Principal", "ProjectRow", "ReceiptFiled", "ReceiptImported", "ReportsFiled",
    "SearchMatch", "SearchResult", "Sentinels", "Shown", "StaleCheck", "Status", "Trackers", "Transition", "Use",
    "WaitResult", "Watch", "inbox_injection", "init", "merge_ledgers", "open_home",
]

#: The typed answers a face names (its REST route's response type, its OpenAPI schema), by the ops module that
#: builds each: imported on first use, so a hook's cold start loads none of their modules.
RESULTS = {
    "BlockChange": "dovecote.ops.missions.blocks", "BlockListing": "dovecote.ops.missions.blocks",
    "MissionArchived": "dovecote.ops.missions.post", "MissionChain": "dovecote.ops.missions.post",
    "MissionListing": "dovecote.ops.missions.post", "MissionPosted": "dovecote.ops.missions.post",
    "Case": "dovecote.ops.cases.cases", "Cases": "dovecote.ops.cases.cases", "Claims": "dovecote.ops.cases.cases",
    "ReceiptFiled": "dovecote.ops.cases.cases",
    "MonitorAdded": "dovecote.ops.cases.monitors", "Monitors": "dovecote.ops.cases.monitors",
    "Sentinels": "dovecote.ops.cases.sentinels", "StaleCheck": "dovecote.ops.mail.stale",
    "Organized": "dovecote.ops.tree.organize", "Trackers": "dovecote.ops.delivery.trackers",
    "KeySet": "dovecote.ops.missions.gestures",
    "ReceiptImported": "dovecote.ops.missions.blocks",
    "Beat": "dovecote.ops.delivery.presence", "Presence": "dovecote.ops.delivery.presence",
    "HookRelayed": "dovecote.ops.cases.abandonment",
    "Status": "dovecote.ops.delivery.status", "Doctor": "dovecote.ops.admin.doctor",
    "Shown": "dovecote.ops.mail.show",
    "OutboxRow": "dovecote.ops.mail.outbox", "OutboxSent": "dovecote.ops.mail.outbox",
    "InboxView": "dovecote.ops.mail.inbox",
    "SearchMatch": "dovecote.ops.search.query", "SearchResult": "dovecote.ops.search.query",
    "Copied": "dovecote.ops.admin.store_copy",
    "Acked": "dovecote.ops.delivery.acks", "Transition": "dovecote.ops.mail.transitions",
    "Delivery": "dovecote.ops.mail.send", "ReportsFiled": "dovecote.ops.reports.report",
    "WaitResult": "dovecote.ops.mail.wait",
}


def __getattr__(name: str) -> Any:
    """A typed answer of ``RESULTS``, imported when a face first names it."""
    if name in RESULTS:
        import importlib

        return getattr(importlib.import_module(RESULTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Dovecote(AgentVerbs, DeliveryVerbs, CaseVerbs, MissionVerbs):
    """A dovecote home: roster, store, and the use cases over them.

    ``actor`` is who acts when a call names nobody (a face binds it: the CLI
    from its flags and environment); ``clock`` returns an aware UTC now (the
    real clock by default). Every acting or dated method also takes
    ``actor=``/``now=`` for one call.
    """

    #: How many calls a face runs on one handle at once (its worker threads): as many as the
    #: PostgreSQL store's pooled connections (``store.CALLS_AT_ONCE`` says why).
    CALLS_AT_ONCE: ClassVar[int] = CALLS_AT_ONCE

    def refresh(self) -> bool:
        """Read the roster again if ``config.toml`` changed on disk since it was read; True if it had.

        A CLI command opens a new handle each time; a long-lived face (the server)
        calls this before each call, so a project or entity added by another
        process is seen (the warm readers and folds are kept).
        """
        if file_stamp(self.layout.config) == self._stamp:
            return False
        self._load_roster()
        return True

    def _load_roster(self) -> None:
        self._stamp = file_stamp(self.layout.config)
        old = self.context
        roster = roster_mod.load(old.layout.config)
        store = old.store.for_roster(roster)  # warm readers kept: the ledgers did not change
        self.context = replace(old, roster=roster, store=store, index=RosterIndex(roster))

    def _edit_roster(self, change: roster_edit.Change) -> None:
        """Apply ``change`` to the roster as it is on disk now, under its lock (see ``roster_edit``)."""
        roster_edit.edit(self.layout.config, change)
        self._load_roster()

    def report_boxes(self) -> list[Address]:
        """The boxes field reports are filed into: home and every project."""
        return self.roster.report_boxes()

    # Every verb below takes its typed input (``verbs.py``) and passes it through
    # ``verbs.checked`` first, so a library caller meets the ranges and names a
    # remote one does. ``actor=``/``now=`` are not input: they bind who acts and
    # when, for one call.

    # -- roster ---------------------------------------------------------------

    @fields(verbs.ProjectAdd)
    def add_project(self, v: verbs.ProjectAdd, /) -> roster_mod.Project:
        v = checked(v)
        p = roster_mod.Project(v.name, roster_mod.given_root(v.root), tuple(v.aliases), v.box_in_repo)

        def change(r: roster_mod.Roster, doc: Any) -> roster_mod.Roster:
            new = roster_mod.with_project(r, p)
            roster_edit.append_table(doc, "projects", roster_edit.project_fields(p))
            return new

        self._edit_roster(change)
        return p

    @fields(verbs.EntityAdd)
    def add_entity(self, v: verbs.EntityAdd, /) -> roster_mod.Entity:
        v = checked(v)
        e = roster_mod.Entity(v.entity_id, v.role)

        def change(r: roster_mod.Roster, doc: Any) -> roster_mod.Roster:
            new = roster_mod.with_entity(r, e)
            roster_edit.append_table(doc, "entities", roster_edit.entity_fields(e))
            return new

        self._edit_roster(change)
        return e

    @fields(verbs.ProjectRemove)
    def remove_project(self, v: verbs.ProjectRemove, /) -> Use:
        """Take a project out of the roster; its ledger stays on disk, unread until it is added again.

        Refused ``in_use`` while letters are in its box or wait in the spool for
        it, unless ``force``. Returns what still routed there.
        """
        v = checked(v)

        def decide(r: roster_mod.Roster) -> tuple[roster_mod.Roster, int, Use]:
            new, p = roster_mod.without_project(r, v.name)
            return new, r.projects.index(p), project_use(self._store_for(r), r, p.name)

        return self._remove("projects", decide, v.force)

    @fields(verbs.EntityRemove)
    def remove_entity(self, v: verbs.EntityRemove, /) -> Use:
        """Take an entity out of the roster; its ledger stays on disk. Refused ``in_use`` while its box has letters."""
        v = checked(v)

        def decide(r: roster_mod.Roster) -> tuple[roster_mod.Roster, int, Use]:
            new, e = roster_mod.without_entity(r, v.entity_id)
            return new, r.entities.index(e), entity_use(self._store_for(r), e.id)

        return self._remove("entities", decide, v.force)

    def _store_for(self, r: roster_mod.Roster) -> Store:
        """This handle's warm store when ``r`` is the roster it holds, else the same ledgers over ``r``."""
        return self.store if r.signature == self.roster.signature else self.store.for_roster(r)

    def _remove(
        self, table: str, decide: Callable[[roster_mod.Roster], tuple[roster_mod.Roster, int, Use]], force: bool
    ) -> Use:
        """One removal under the roster lock: decide on the roster read there, refuse if used, drop the table."""
        found: list[Use] = []

        def change(r: roster_mod.Roster, doc: Any) -> roster_mod.Roster:
            new, index, use = decide(r)
            refuse_if_used(use, force)
            roster_edit.remove_table(doc, table, index)
            found.append(use)
            return new

        self._edit_roster(change)
        return found[0]

    @fields(verbs.ProjectList)
    def projects(self, v: verbs.ProjectList | None = None, /) -> list[ProjectRow]:
        """The roster's projects, with where each box is and whether it is reachable here."""
        return project_rows(self.store, self.roster)

    @fields(verbs.EntityList)
    def entities(self, v: verbs.EntityList | None = None, /) -> list[EntityRow]:
        """The roster's entities (id and role)."""
        return entity_rows(self.roster)

    def reachable(self, address: str | Address) -> bool:
        """Whether a box's ledger can be read here (a box in a repository not cloned here cannot)."""
        return self.store.reachable(address_of(address))

    def default_entity(self, *, actor: ActorArg = None) -> str:
        """The entity a call that names none is about: the actor's, else the only one."""
        return inboxhandle.default_entity(self._ctx(actor=actor))

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
        from dovecote.ops.reports.sweep import box

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
    def import_vnext(self, v: verbs.ImportVnext, /) -> import_vnext_op.VnextImport:
        """Read a vNext mailbox directory; with ``write``, import it (see ``ops.delivery.import_vnext``)."""
        v = checked(v)
        from dovecote.ops.delivery import import_vnext as import_vnext_op

        return import_vnext_op.import_vnext(self._ctx(), Path(v.path), write=v.write)

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



def init(
    root: str | os.PathLike[str] | None = None, owner_root: str | None = None, store: str | None = None
) -> tuple[Path, bool]:
    """Create a home with a fresh roster; an existing roster is left as it is.

    ``store``: a PostgreSQL URL the ledgers live in (no password: refused
    ``password_in_config``). Its schema is brought up to date first, as
    ``dovecote db migrate`` does (``migrate_store``, under the same lock): a home
    that says "created" can be used at once. A database that cannot be reached
    or migrated is refused ``schema_unmigrated``, naming the command, and no
    roster is written. Returns (home, created).
    """
    if store is not None:
        roster_mod.check_store(store)
    home = find_home(root)
    layout = Layout(home)
    if layout.config.exists():
        return home, False
    if store is not None:
        _migrate_for_init(store)
    owner = owner_root or (str(home.parent) if home.name == ".dovecote" else str(home))
    owner = os.path.abspath(os.path.expanduser(owner))  # "." is this folder, not the text "."
    fresh = replace(roster_mod.new_roster(owner), store=store)
    created = roster_edit.create(layout.config, roster_mod.dump(fresh))
    return home, created  # False: another init got there first, and theirs stands


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


def _require_url(url: str, option: str) -> None:
    """Refuse what is not a PostgreSQL URL before any driver sees it: libpq would read it as a
    connection string, and the pool would retry it until its timeout (15 s) before failing."""
    from dovecote.roster.store_url import is_url

    if not is_url(url):
        raise Refusal("invalid_field", f"{option} takes a postgresql:// URL; nothing was read or written")


class Migrated(Result, frozen=True):
    """A database brought to this dovecote's schema: the store (shown without a password), the version it was
    at (None: no dovecote schema yet), the migrations applied now, and the version it is at."""

    store: str
    before: int | None
    applied: list[int]
    version: int


def migrate_store(url: str | None, root: str | os.PathLike[str] | None = None) -> Migrated:
    """Bring the database at ``url`` (default: the home's ``store`` setting) to this dovecote's
    schema (``dovecote db migrate``; idempotent). The home's store is not opened: it would refuse."""
    from dovecote.handle.search import home_of
    from dovecote.roster.store_url import shown
    from dovecote.store.postgres import schema as store_pgschema
    from dovecote.store.postgres.store import connect

    if url is None:
        url = roster_mod.load(Layout(home_of(root)).config).store
        if url is None:
            raise Refusal("invalid_field", "this home keeps its ledgers in files; give --url postgresql://…")

    _require_url(url, "--url")
    with connect(url) as conn:
        before, applied = store_pgschema.migrate(conn)
    return Migrated(shown(url), before, applied, store_pgschema.VERSION)


def _migrate_for_init(url: str) -> None:
    """``migrate_store(url)`` for ``init``: what stops it is a refusal naming the command to run once the
    database can be reached (or by a role that may create its tables); nothing was written yet."""
    import psycopg

    from dovecote.errors import StoreError

    try:
        migrate_store(url)
    except (StoreError, psycopg.Error) as e:
        why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise Refusal("schema_unmigrated", f"could not bring the database's dovecote schema up to date ({why}); "
                      f"no home was created: run `dovecote db migrate --url {url}`, then init again") from None


def copy_store(
    root: str | os.PathLike[str] | None, *, to: str | None = None, source: str | None = None, write: bool = True
) -> Copied:
    """Copy every ledger of the home ``to`` a database, or from ``source`` (a database) into the
    home's files, then compare both sides (``dovecote copy``; see ``ops.admin.store_copy``)."""
    from dovecote.handle.search import home_of
    from dovecote.ops.admin import store_copy
    from dovecote.ops.context import Context
    from dovecote.roster.store_url import shown
    from dovecote.store.core import FileStore
    from dovecote.store.postgres.store import PostgresStore

    if (to is None) == (source is None):
        raise Refusal("invalid_field", "name one side: --to URL (from this home) or --from URL (into its files)")
    _require_url(to or source or "", "--to" if to is not None else "--from")
    ctx = Context.open(Layout(home_of(root)))
    db = PostgresStore(to or source or "", ctx.roster)
    try:
        if to is not None:
            where = "files" if isinstance(ctx.store, FileStore) else "this home's store"
            report = store_copy.copy(ctx, ctx.store, db, (where, shown(to)), write=write)
        else:
            files = FileStore(ctx.layout, ctx.roster)
            report = store_copy.copy(ctx, db, files, (shown(source or ""), "files"), write=write)
    finally:
        db.close()
    return report


def merge_ledgers(ancestor: Path, ours: Path, theirs: Path) -> None:
    """Union two ledgers by id into ``ours`` (the git merge driver; see ``ops.admin.merge``)."""
    from dovecote.ops.admin.merge import merge_files

    merge_files(ancestor, ours, theirs)

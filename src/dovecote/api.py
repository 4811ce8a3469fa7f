"""The library API: one handle on a dovecote home.

Every face (CLI, MCP, HTTP) opens a ``Dovecote`` and calls its methods, so the
faces can never disagree: the rules live in ``ops`` and ``derive``, and this
class only wires a store and a roster to them. A handle is warm: it keeps
readers and folds in memory and, on the next call, reads only what was appended
since (``verify`` proves a warm answer equals a cold one).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote import roster as roster_mod
from dovecote.context import Actor, Context, Now, utc_now
from dovecote.derive.inbox import FLAG_OVERDUE, FLAG_STALE
from dovecote.errors import Refusal
from dovecote.folds import Registry
from dovecote.home import Layout, find_home
from dovecote.names import Address, check_name, parse_address
from dovecote.ops.roster_use import Use, entity_rows, entity_use, project_rows, project_use, refuse_if_used
from dovecote.routing import RosterIndex
from dovecote.store import Store

# Each use case is imported by the method that runs it: a hook that reads one inbox
# loads the inbox's modules, not the sweep's, the view's or the adoption's.
if TYPE_CHECKING:
    from dovecote import roster_edit
    from dovecote.ops import adopt as adopt_op
    from dovecote.ops import mail
    from dovecote.ops import verify as verify_op
    from dovecote.ops import view as view_op
    from dovecote.ops.distribute import Receipt
    from dovecote.ops.sweep import BoxView, Progress, SweepResult

__all__ = ["FLAG_OVERDUE", "FLAG_STALE", "Actor", "Dovecote", "Use", "init", "merge_ledgers", "open_home"]

#: An actor for one call: an ``Actor``, or a name (the acting agent).
ActorArg = Actor | str | None


class Dovecote:
    """A dovecote home: roster, store, and the use cases over them.

    ``actor`` is who acts when a call names nobody (a face binds it: the CLI
    from its flags and environment); ``clock`` returns an aware UTC now (the
    real clock by default). Every acting or dated method also takes
    ``actor=``/``now=`` for one call.
    """

    def __init__(
        self, root: Path, *, actor: Actor | None = None, clock: Now = utc_now, store: Store | None = None
    ) -> None:
        self.context = Context.open(Layout(root), clock=clock, actor=actor, store=store)

    @property
    def layout(self) -> Layout:
        return self.context.layout

    @property
    def roster(self) -> roster_mod.Roster:
        return self.context.roster

    @property
    def index(self) -> RosterIndex:
        return self.context.index

    @property
    def store(self) -> Store:
        return self.context.store

    @property
    def warm(self) -> Registry:
        return self.context.warm

    def _ctx(self, *, now: datetime | None = None, actor: ActorArg = None) -> Context:
        """The context for one call: the clock pinned to ``now``, ``actor`` acting."""
        who = self.context.actor.naming(actor) if isinstance(actor, str) else actor
        return self.context.at(now, who)

    def _load_roster(self) -> None:
        old = self.context
        roster = roster_mod.load(old.layout.config)
        store = old.store.for_roster(roster)  # warm readers kept: the ledgers did not change
        self.context = replace(old, roster=roster, store=store, index=RosterIndex(roster))

    def _edit_roster(self, change: roster_edit.Change) -> None:
        """Apply ``change`` to the roster as it is on disk now, under its lock (see ``roster_edit``)."""
        from dovecote import roster_edit

        roster_edit.edit(self.layout.config, change)
        self._load_roster()

    def report_boxes(self) -> list[Address]:
        """The boxes field reports are filed into: home and every project."""
        return self.roster.report_boxes()

    # -- roster ---------------------------------------------------------------

    def add_project(
        self, name: str, root: str, aliases: tuple[str, ...] = (), box_in_repo: bool = False
    ) -> roster_mod.Project:
        check_name(name, "project name")
        for a in aliases:
            check_name(a, "alias")
        p = roster_mod.Project(name, roster_mod.given_root(root), tuple(aliases), box_in_repo)

        from dovecote import roster_edit

        def change(r: roster_mod.Roster, doc: Any) -> roster_mod.Roster:
            new = roster_mod.with_project(r, p)
            roster_edit.append_table(doc, "projects", roster_edit.project_fields(p))
            return new

        self._edit_roster(change)
        return p

    def add_entity(self, entity_id: str, role: str | None = None) -> roster_mod.Entity:
        e = roster_mod.Entity(check_name(entity_id, "entity id"), role)

        from dovecote import roster_edit

        def change(r: roster_mod.Roster, doc: Any) -> roster_mod.Roster:
            new = roster_mod.with_entity(r, e)
            roster_edit.append_table(doc, "entities", roster_edit.entity_fields(e))
            return new

        self._edit_roster(change)
        return e

    def remove_project(self, name: str, *, force: bool = False) -> Use:
        """Take a project out of the roster; its ledger stays on disk, unread until it is added again.

        Refused ``in_use`` while letters are in its box or wait in the spool for
        it, unless ``force``. Returns what still routed there.
        """

        def decide(r: roster_mod.Roster) -> tuple[roster_mod.Roster, int, Use]:
            new, p = roster_mod.without_project(r, name)
            return new, r.projects.index(p), project_use(self._store_for(r), r, p.name)

        return self._remove("projects", decide, force)

    def remove_entity(self, entity_id: str, *, force: bool = False) -> Use:
        """Take an entity out of the roster; its ledger stays on disk. Refused ``in_use`` while its box has letters."""

        def decide(r: roster_mod.Roster) -> tuple[roster_mod.Roster, int, Use]:
            new, e = roster_mod.without_entity(r, entity_id)
            return new, r.entities.index(e), entity_use(self._store_for(r), e.id)

        return self._remove("entities", decide, force)

    def _store_for(self, r: roster_mod.Roster) -> Store:
        """This handle's warm store when ``r`` is the roster it holds, else the same ledgers over ``r``."""
        return self.store if r.signature == self.roster.signature else self.store.for_roster(r)

    def _remove(
        self, table: str, decide: Callable[[roster_mod.Roster], tuple[roster_mod.Roster, int, Use]], force: bool
    ) -> Use:
        """One removal under the roster lock: decide on the roster read there, refuse if used, drop the table."""
        from dovecote import roster_edit

        found: list[Use] = []

        def change(r: roster_mod.Roster, doc: Any) -> roster_mod.Roster:
            new, index, use = decide(r)
            refuse_if_used(use, force)
            roster_edit.remove_table(doc, table, index)
            found.append(use)
            return new

        self._edit_roster(change)
        return found[0]

    def projects(self) -> list[dict[str, Any]]:
        """The roster's projects, with where each box is and whether it is reachable here."""
        return project_rows(self.store, self.roster)

    def entities(self) -> list[dict[str, Any]]:
        """The roster's entities (id and role)."""
        return entity_rows(self.roster)

    def reachable(self, address: str | Address) -> bool:
        """Whether a box's ledger can be read here (a box in a repository not cloned here cannot)."""
        return self.store.reachable(_address(address))

    def default_entity(self, *, actor: ActorArg = None) -> str:
        """The entity a call that names none is about: the actor's, else the only one."""
        from dovecote.ops import inbox as inbox_op

        return inbox_op.default_entity(self._ctx(actor=actor))

    # -- field reports ----------------------------------------------------------

    def report(
        self, objs: list[Any], *, agent: str | None = None, actor: ActorArg = None, now: datetime | None = None
    ) -> list[tuple[str, bool]]:
        """Append field reports to the spool; one without an author is by ``agent``, else by the actor."""
        from dovecote.ops import report as report_op

        return report_op.report(self._ctx(now=now, actor=actor), objs, agent=agent)

    def distribute(self) -> Receipt:
        from dovecote.ops.distribute import distribute

        return distribute(self.context)

    def sweep(
        self, *, distribute: bool = True, include_all: bool = False, progress: Progress | None = None
    ) -> SweepResult:
        from dovecote.ops.sweep import sweep

        return sweep(self.context, do_distribute=distribute, include_all=include_all, progress=progress)

    def box(self, address: str | Address, *, include_all: bool = False) -> BoxView:
        from dovecote.ops.sweep import box

        return box(self.context, _address(address), include_all=include_all)

    def doctor(self, now: datetime | None = None) -> dict[str, Any]:
        from dovecote.ops import doctor as doctor_op

        return doctor_op.doctor(self.context, now)

    def verify(self, *, now: datetime | None = None) -> verify_op.VerifyResult:
        from dovecote.ops import verify as verify_op

        return verify_op.verify(self._ctx(now=now))

    # -- entity mail --------------------------------------------------------------

    def send(self, *, actor: ActorArg = None, now: datetime | None = None, **fields: Any) -> mail.Sent:
        """Deliver a message (see ``ops.mail.compose`` for the fields); from the actor unless ``sender``."""
        from dovecote.ops import mail

        return mail.send(self._ctx(now=now, actor=actor), **fields)

    def draft(self, *, actor: ActorArg = None, now: datetime | None = None, **fields: Any) -> mail.Sent:
        """Write an outbound draft into the sender's box."""
        from dovecote.ops import mail

        return mail.draft(self._ctx(now=now, actor=actor), **fields)

    def outbox_send(
        self, sender: str | None = None, *, actor: ActorArg = None, now: datetime | None = None
    ) -> list[dict[str, Any]]:
        from dovecote.ops import mail

        return mail.outbox_send(self._ctx(now=now, actor=actor), sender)

    def transition(
        self, entity_id: str, ref: str, kind: str, *, actor: ActorArg = None, now: datetime | None = None,
        **options: Any,
    ) -> mail.Transition:
        """claim, complete, defer, undefer, nack or seen, as a compare-and-swap; by the actor, else the entity."""
        from dovecote.ops import mail

        return mail.transition(self._ctx(now=now, actor=actor), entity_id, ref, kind, **options)

    def inbox(
        self, entity_id: str | None = None, *, actor: ActorArg = None, now: datetime | None = None, **options: Any
    ) -> dict[str, Any]:
        """The audit of one entity's inbox (see ``ops.inbox.read_inbox``)."""
        return self.inbox_until(entity_id, actor=actor, now=now, **options)[0]

    def inbox_until(
        self, entity_id: str | None = None, *, actor: ActorArg = None, now: datetime | None = None, **options: Any
    ) -> tuple[dict[str, Any], datetime | None]:
        """``inbox``, and the moment that answer changes with no new letter (None: only a letter changes it).

        A face that caches its rendering keeps it until then.
        """
        from dovecote.ops import inbox as inbox_op

        return inbox_op.read_inbox(self._ctx(actor=actor), entity_id, now=now, **options)

    def inbox_dependencies(self, entity_id: str) -> list[str]:
        """The files besides its box an inbox reading of ``entity_id`` depends on, for a face's cached rendering."""
        from dovecote.ops import inbox as inbox_op

        return inbox_op.dependencies(self.context, entity_id)

    def inbox_probe(self, entity_id: str) -> tuple[str, int, int] | None:
        """After an inbox reading: how a face checks, without this library, that the
        entity's box has had nothing appended since (``store.Probe``); None: it cannot."""
        from dovecote.ops import inbox as inbox_op

        return inbox_op.box_probe(self.context, entity_id)

    def show(
        self, entity_id: str, ref: str, *, current: int | None = None, now: datetime | None = None
    ) -> dict[str, Any]:
        """One inbound item whole: envelope, body, thread and history (see ``ops.show``)."""
        from dovecote.ops import show as show_op

        return show_op.show(self.context, entity_id, ref, current=current, now=now)

    def view(self, entity_id: str | None = None, **options: Any) -> view_op.ViewResult:
        """Write the /inbox folder view of one entity, or of all (see ``ops.view.view``)."""
        from dovecote.ops import view as view_op

        return view_op.view(self.context, entity_id, **options)

    def import_inbox_tree(
        self, path: str | os.PathLike[str], entity_id: str | None = None, *, now: datetime | None = None,
        **options: Any,
    ) -> adopt_op.ImportResult:
        """Adopt an existing /inbox tree (see ``ops.adopt.import_inbox_tree``)."""
        from dovecote.ops import adopt as adopt_op

        return adopt_op.import_inbox_tree(self._ctx(now=now), Path(path), entity_id, **options)

    # -- search and hygiene -------------------------------------------------------
    # Imported on first use: sqlite3 and the scanners stay off the start-up path of
    # every other command.

    def search(
        self,
        query: str,
        *,
        entity: str | None = None,
        include_terminal: bool = False,
        limit: int | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Full text over entity mail, newest first (see ``ops.search.search``)."""
        from dovecote.ops import search as search_op

        return search_op.search(
            self.context, query, entity=entity, include_terminal=include_terminal,
            limit=search_op.DEFAULT_LIMIT if limit is None else limit, now=now,
        )

    def stale_check(
        self, *, current: int | None = None, emit_signals: bool = False, now: datetime | None = None
    ) -> dict[str, Any]:
        """Attention debt across every entity, and the day's signals (see ``ops.stale``)."""
        from dovecote.ops import stale as stale_op

        return stale_op.stale_check(self.context, current=current, emit=emit_signals, now=now)

    def organize(
        self, entity_id: str, *, apply: bool = False, current: int | None = None, now: datetime | None = None
    ) -> dict[str, Any]:
        """Hygiene report for one inbox; ``apply`` only groups loose files (see ``ops.organize``)."""
        from dovecote.ops import organize as organize_op

        return organize_op.organize(self.context, entity_id, apply=apply, current=current, now=now)


def _address(address: str | Address) -> Address:
    return address if isinstance(address, Address) else parse_address(address)


def init(root: str | os.PathLike[str] | None = None, owner_root: str | None = None) -> tuple[Path, bool]:
    """Create a home with a fresh roster; an existing roster is left as it is.

    Returns (home, created).
    """
    home = find_home(root)
    layout = Layout(home)
    if layout.config.exists():
        return home, False
    owner = owner_root or (str(home.parent) if home.name == ".dovecote" else str(home))
    owner = os.path.abspath(os.path.expanduser(owner))  # "." is this folder, not the text "."
    from dovecote import roster_edit

    created = roster_edit.create(layout.config, roster_mod.dump(roster_mod.new_roster(owner)))
    return home, created  # False: another init got there first, and theirs stands


def open_home(
    root: str | os.PathLike[str] | None = None,
    *,
    actor: Actor | None = None,
    clock: Now = utc_now,
    store: Store | None = None,
) -> Dovecote:
    """Open the home found the way git finds a repository (see ``home.find_home``)."""
    home = find_home(root)
    if not (home / "config.toml").is_file():
        raise Refusal("no_home", f"no dovecote home at {home}; run `dovecote init`")
    return Dovecote(home, actor=actor, clock=clock, store=store)


def merge_ledgers(ancestor: Path, ours: Path, theirs: Path) -> None:
    """Union two ledgers by id into ``ours`` (the git merge driver; see ``ops.merge``)."""
    from dovecote.ops.merge import merge_files

    merge_files(ancestor, ours, theirs)

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
from datetime import datetime
from pathlib import Path
from typing import Any

from dovecote import roster as roster_mod
from dovecote import roster_edit
from dovecote.errors import Refusal
from dovecote.home import Layout, find_home
from dovecote.names import HOME, Address, check_name, parse_address
from dovecote.ops import adopt as adopt_op
from dovecote.ops import doctor as doctor_op
from dovecote.ops import inbox as inbox_op
from dovecote.ops import mail
from dovecote.ops import report as report_op
from dovecote.ops import verify as verify_op
from dovecote.ops import view as view_op
from dovecote.ops.distribute import Receipt, distribute
from dovecote.ops.roster_use import Use, entity_use, project_use, refuse_if_used
from dovecote.ops.sweep import BoxView, Progress, SweepResult, box, sweep
from dovecote.routing import RosterIndex
from dovecote.store import FileStore, Store


class Dovecote:
    """A dovecote home: roster, store, and the use cases over them.

    ``store`` is where the ledgers live, the way httpx takes ``transport=``:
    by default the home's files (``FileStore``); a ``MemoryStore`` for tests.
    Whatever roster the given store was made with, the handle addresses it
    through the home's roster.
    """

    def __init__(self, root: Path, *, store: Store | None = None) -> None:
        self.layout = Layout(root)
        self.warm: dict[str, Any] = {}
        self.store: Store = store if store is not None else FileStore(self.layout, roster_mod.Roster())
        self._load_roster()

    def _load_roster(self) -> None:
        self.roster = roster_mod.load(self.layout.config)
        self.index = RosterIndex(self.roster)
        self.store = self.store.for_roster(self.roster)  # warm readers kept: the ledgers did not change

    def _edit_roster(self, change: roster_edit.Change) -> None:
        """Apply ``change`` to the roster as it is on disk now, under its lock (see ``roster_edit``)."""
        roster_edit.edit(self.layout.config, change)
        self._load_roster()

    def report_boxes(self) -> list[Address]:
        """The boxes field reports are filed into: home and every project."""
        return [HOME, *(Address("project", p.name) for p in self.roster.projects)]

    # -- roster ---------------------------------------------------------------

    def add_project(
        self, name: str, root: str, aliases: tuple[str, ...] = (), box_in_repo: bool = False
    ) -> roster_mod.Project:
        check_name(name, "project name")
        for a in aliases:
            check_name(a, "alias")
        p = roster_mod.Project(name, roster_mod.given_root(root), tuple(aliases), box_in_repo)

        def change(r: roster_mod.Roster, doc: Any) -> roster_mod.Roster:
            new = roster_mod.with_project(r, p)
            roster_edit.append_table(doc, "projects", roster_edit.project_fields(p))
            return new

        self._edit_roster(change)
        return p

    def add_entity(self, entity_id: str, role: str | None = None) -> roster_mod.Entity:
        e = roster_mod.Entity(check_name(entity_id, "entity id"), role)

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
        found: list[Use] = []

        def change(r: roster_mod.Roster, doc: Any) -> roster_mod.Roster:
            new, index, use = decide(r)
            refuse_if_used(use, force)
            roster_edit.remove_table(doc, table, index)
            found.append(use)
            return new

        self._edit_roster(change)
        return found[0]

    # -- field reports ----------------------------------------------------------

    def report(self, objs: list[Any], *, agent: str | None = None) -> list[tuple[str, bool]]:
        return report_op.report(self, objs, agent=agent)

    def distribute(self) -> Receipt:
        return distribute(self)

    def sweep(
        self, *, distribute: bool = True, include_all: bool = False, progress: Progress | None = None
    ) -> SweepResult:
        return sweep(self, do_distribute=distribute, include_all=include_all, progress=progress)

    def box(self, address: str | Address, *, include_all: bool = False) -> BoxView:
        addr = address if isinstance(address, Address) else parse_address(address)
        return box(self, addr, include_all=include_all)

    def doctor(self, now: datetime | None = None) -> dict[str, Any]:
        return doctor_op.doctor(self, now)

    def verify(self) -> verify_op.VerifyResult:
        return verify_op.verify(self)

    # -- entity mail --------------------------------------------------------------

    def send(self, **fields: Any) -> mail.Sent:
        """Deliver a message (see ``ops.mail.compose`` for the fields)."""
        return mail.send(self, **fields)

    def draft(self, **fields: Any) -> mail.Sent:
        """Write an outbound draft into the sender's box."""
        return mail.draft(self, **fields)

    def outbox_send(self, sender: str | None = None) -> list[dict[str, Any]]:
        return mail.outbox_send(self, sender)

    def transition(self, entity_id: str, ref: str, kind: str, **options: Any) -> mail.Transition:
        """claim, complete, defer, undefer, nack or seen, as a compare-and-swap."""
        return mail.transition(self, entity_id, ref, kind, **options)

    def inbox(self, entity_id: str | None = None, **options: Any) -> dict[str, Any]:
        return inbox_op.read_inbox(self, entity_id, **options)[0]

    def show(self, entity_id: str, ref: str, *, current: int | None = None) -> dict[str, Any]:
        """One inbound item whole: envelope, body, thread and history (see ``ops.show``)."""
        from dovecote.ops import show as show_op

        return show_op.show(self, entity_id, ref, current=current)

    def view(self, entity_id: str | None = None, **options: Any) -> view_op.ViewResult:
        """Write the /inbox folder view of one entity, or of all (see ``ops.view.view``)."""
        return view_op.view(self, entity_id, **options)

    def import_inbox_tree(
        self, path: str | os.PathLike[str], entity_id: str | None = None, **options: Any
    ) -> adopt_op.ImportResult:
        """Adopt an existing /inbox tree (see ``ops.adopt.import_inbox_tree``)."""
        return adopt_op.import_inbox_tree(self, Path(path), entity_id, **options)

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
            self, query, entity=entity, include_terminal=include_terminal,
            limit=search_op.DEFAULT_LIMIT if limit is None else limit, now=now,
        )

    def stale_check(
        self, *, current: int | None = None, emit_signals: bool = False, now: datetime | None = None
    ) -> dict[str, Any]:
        """Attention debt across every entity, and the day's signals (see ``ops.stale``)."""
        from dovecote.ops import stale as stale_op

        return stale_op.stale_check(self, current=current, emit=emit_signals, now=now)

    def organize(
        self, entity_id: str, *, apply: bool = False, current: int | None = None, now: datetime | None = None
    ) -> dict[str, Any]:
        """Hygiene report for one inbox; ``apply`` only groups loose files (see ``ops.organize``)."""
        from dovecote.ops import organize as organize_op

        return organize_op.organize(self, entity_id, apply=apply, current=current, now=now)


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
    created = roster_edit.create(layout.config, roster_mod.dump(roster_mod.new_roster(owner)))
    return home, created  # False: another init got there first, and theirs stands


def open_home(root: str | os.PathLike[str] | None = None, *, store: Store | None = None) -> Dovecote:
    """Open the home found the way git finds a repository (see ``home.find_home``)."""
    home = find_home(root)
    if not (home / "config.toml").is_file():
        raise Refusal("no_home", f"no dovecote home at {home}; run `dovecote init`")
    return Dovecote(home, store=store)

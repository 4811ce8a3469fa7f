"""The handle's roster verbs: add, remove and list projects and entities, and read the roster again.

Each edit runs under the roster's lock on ``config.toml`` as it is on disk then (``roster.edit``),
decides by the rules of ``roster.members`` and reads the roster again. The editor, those rules
and the use counts (``ops.agents.roster_use``) are imported on first use: every handle has these
verbs, and a hook's cold start, which opens one, calls none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

from dovecote import verbs
from dovecote.handle.core import HandleCore, fields
from dovecote.roster import config as roster_mod
from dovecote.roster.routing import RosterIndex
from dovecote.store.core import Store
from dovecote.util.osutil import file_stamp
from dovecote.verbs import checked

if TYPE_CHECKING:
    from dovecote.ops.agents.roster_use import EntityRow, ProjectRow, Use
    from dovecote.roster import edit as roster_edit


class RosterVerbs(HandleCore):
    """The handle's roster verbs (see the module docstring)."""

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
        from dovecote.roster import edit as roster_edit

        roster_edit.edit(self.layout.config, change)
        self._load_roster()

    @fields(verbs.ProjectAdd)
    def add_project(self, v: verbs.ProjectAdd, /) -> roster_mod.Project:
        from dovecote.roster import edit as roster_edit
        from dovecote.roster import members

        v = checked(v)
        p = roster_mod.Project(v.name, members.given_root(v.root), tuple(v.aliases), v.box_in_repo)

        def change(r: roster_mod.Roster, doc: Any) -> roster_mod.Roster:
            new = members.with_project(r, p)
            roster_edit.append_table(doc, "projects", roster_edit.project_fields(p))
            return new

        self._edit_roster(change)
        return p

    @fields(verbs.EntityAdd)
    def add_entity(self, v: verbs.EntityAdd, /) -> roster_mod.Entity:
        from dovecote.roster import edit as roster_edit
        from dovecote.roster import members

        v = checked(v)
        e = roster_mod.Entity(v.entity_id, v.role)

        def change(r: roster_mod.Roster, doc: Any) -> roster_mod.Roster:
            new = members.with_entity(r, e)
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
        from dovecote.ops.agents.roster_use import project_use
        from dovecote.roster import members

        v = checked(v)

        def decide(r: roster_mod.Roster) -> tuple[roster_mod.Roster, int, Use]:
            new, p = members.without_project(r, v.name)
            return new, r.projects.index(p), project_use(self._store_for(r), r, p.name)

        return self._remove("projects", decide, v.force)

    @fields(verbs.EntityRemove)
    def remove_entity(self, v: verbs.EntityRemove, /) -> Use:
        """Take an entity out of the roster; its ledger stays on disk. Refused ``in_use`` while its box has letters."""
        from dovecote.ops.agents.roster_use import entity_use
        from dovecote.roster import members

        v = checked(v)

        def decide(r: roster_mod.Roster) -> tuple[roster_mod.Roster, int, Use]:
            new, e = members.without_entity(r, v.entity_id)
            return new, r.entities.index(e), entity_use(self._store_for(r), e.id)

        return self._remove("entities", decide, v.force)

    def _store_for(self, r: roster_mod.Roster) -> Store:
        """This handle's warm store when ``r`` is the roster it holds, else the same ledgers over ``r``."""
        return self.store if r.signature == self.roster.signature else self.store.for_roster(r)

    def _remove(
        self, table: str, decide: Callable[[roster_mod.Roster], tuple[roster_mod.Roster, int, Use]], force: bool
    ) -> Use:
        """One removal under the roster lock: decide on the roster read there, refuse if used, drop the table."""
        from dovecote.ops.agents.roster_use import refuse_if_used
        from dovecote.roster import edit as roster_edit

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
        from dovecote.ops.agents.roster_use import project_rows

        return project_rows(self.store, self.roster)

    @fields(verbs.EntityList)
    def entities(self, v: verbs.EntityList | None = None, /) -> list[EntityRow]:
        """The roster's entities (id and role)."""
        from dovecote.ops.agents.roster_use import entity_rows

        return entity_rows(self.roster)

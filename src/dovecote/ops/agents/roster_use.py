"""What still routes to a project or an entity: the check before it leaves the roster.

Removing a roster entry never deletes a ledger (DESIGN 1.3), but a box whose
entry is gone is no longer read, so ``project remove`` and ``entity remove``
refuse (``in_use``) while letters are there, unless forced. For a project that
means the letters in its box and the spool letters the ownership law files
there that are not in the box yet; for an entity, the letters in its box.
"""

from __future__ import annotations

import msgspec

from dovecote.errors import Refusal
from dovecote.model.addresses import Address
from dovecote.model.results import Result
from dovecote.roster.config import Roster
from dovecote.roster.routing import RosterIndex, route
from dovecote.store.core import Store


class Use(msgspec.Struct, frozen=True):
    """The letters that still route to one box, and where its ledger is."""

    address: str
    ledger: str
    in_box: int
    pending: int

    @property
    def letters(self) -> int:
        return self.in_box + self.pending

    def to_dict(self) -> dict[str, object]:
        return {"box": self.address, "ledger": self.ledger, "in_box": self.in_box, "pending": self.pending}


def project_use(store: Store, roster: Roster, name: str) -> Use:
    """Letters in project ``name``'s box, and spool letters routed there but not filed yet."""
    addr = Address("project", name)
    box = store.read(addr) if store.reachable(addr) else None
    filed = box.index if box is not None else {}
    ix = RosterIndex(roster)
    routes: dict[tuple[str | None, str | None], Address | None] = {}
    pending = 0
    for letter in store.read("spool").letters:
        if not letter.is_report or letter.id in filed:
            continue
        key = (letter.brain, letter.repo)
        if key not in routes:
            routes[key] = route(letter.brain, letter.repo, ix).address
        if routes[key] == addr:
            pending += 1
    return Use(str(addr), store.location(addr), len(box.letters) if box is not None else 0, pending)


def entity_use(store: Store, entity_id: str) -> Use:
    addr = Address("entity", entity_id)
    return Use(str(addr), store.location(addr), len(store.read(addr).letters), 0)


def refuse_if_used(use: Use, force: bool) -> None:
    """``in_use`` with the counts, unless nothing routes there or the caller forces it."""
    if use.letters and not force:
        raise Refusal(
            "in_use",
            f"{use.address} still holds {use.in_box} letter(s) in {use.ledger}"
            + (f" and {use.pending} more wait in the spool for it" if use.pending else "")
            + "; --force removes the roster entry and keeps the ledger",
            **use.to_dict(),
        )


class ProjectRow(Result, frozen=True):
    """One roster project as ``project list`` shows it: where its box is, and whether it is reachable here."""

    name: str
    root: str
    aliases: list[str]
    box_in_repo: bool
    box: str
    reachable: bool


class EntityRow(Result, frozen=True):
    """One roster entity: its id and role."""

    id: str
    role: str | None


def project_rows(store: Store, roster: Roster) -> list[ProjectRow]:
    """The roster's projects, each with where its box is and whether it is reachable here."""
    return [
        ProjectRow(
            name=p.name,
            root=p.root,
            aliases=list(p.aliases),
            box_in_repo=p.box_in_repo,
            box=store.location(Address("project", p.name)),
            reachable=store.reachable(Address("project", p.name)),
        )
        for p in roster.projects
    ]


def entity_rows(roster: Roster) -> list[EntityRow]:
    """The roster's entities: id and role."""
    return [EntityRow(id=e.id, role=e.role) for e in roster.entities]

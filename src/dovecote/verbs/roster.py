"""The verbs of the roster: project and entity add, remove and list."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar

from msgspec import Meta

from dovecote.verbs.base import EntityId, Name, Verb
from dovecote.verbs.limits import ID, ITEMS, PathText

Force = Annotated[
    bool, Meta(description="Remove the entry even though letters still route there (the ledger stays).")
]


class ProjectAdd(Verb, frozen=True):
    """Add a project to the roster."""

    NAMES: ClassVar[Mapping[str, str]] = {"name": "project name", "aliases": "alias"}

    name: Annotated[Name, Meta(description="The project's name (its box is project:NAME).")]
    root: Annotated[PathText, Meta(min_length=1, description="The project's root path.")]
    aliases: Annotated[tuple[Name, ...], Meta(max_length=ITEMS, description="Other names letters may use.")] = ()
    box_in_repo: Annotated[bool, Meta(description="Keep the box in <root>/.dovecote/ so it travels with git.")] = False


class ProjectRemove(Verb, frozen=True):
    """Remove a project from the roster; its ledger is never deleted."""

    name: Annotated[str, Meta(min_length=1, max_length=ID, description="The project's name.")]
    force: Force = False


class ProjectList(Verb, frozen=True):
    """The roster's projects, with where each box is and whether it is reachable here."""


class EntityAdd(Verb, frozen=True):
    """Register an entity, so it has a mailbox and can be sent to."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    entity_id: EntityId
    role: Annotated[Annotated[str, Meta(max_length=ID)] | None, Meta(description="The entity's role.")] = None


class EntityRemove(Verb, frozen=True):
    """Remove an entity from the roster; its ledger is never deleted."""

    entity_id: Annotated[str, Meta(min_length=1, max_length=ID, description="The entity id.")]
    force: Force = False


class EntityList(Verb, frozen=True):
    """The registered entities."""

"""The verbs of advisory file leases: take, renew, release, list, check a commit's paths, install the guard.

A lease is an agent's claim on paths of a project (globs, ``derive.leases.globs``)
for a while: exclusive by default, or shared. Whose lease it is is ``entity_id``:
the one authorization rule decides who may act for whom (an agent for itself,
an operator for anyone), as for every verb that names a box.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar

from msgspec import Meta

from dovecote.model.vocab_delivery import MAX_POLICY_S
from dovecote.verbs.base import Name, Verb
from dovecote.verbs.limits import ID, ITEMS, PathText, Text

Glob = Annotated[str, Meta(min_length=1, max_length=ID)]
Globs = Annotated[
    tuple[Glob, ...], Meta(min_length=1, max_length=ITEMS, description="Path globs (a folder holds what is under it).")
]
LeaseIds = Annotated[
    tuple[Annotated[str, Meta(min_length=1, max_length=ID)], ...],
    Meta(max_length=ITEMS, description="Only these (ids or prefixes; default: all active)."),
]
Ttl = Annotated[int, Meta(ge=1, le=MAX_POLICY_S, description="Seconds to expiry.")]
ProjectArg = Annotated[Name | None, Meta(description="The project (default: the only one).")]
Holder = Annotated[Name, Meta(description="Whose lease (an entity).")]

#: How long a lease lasts when no ttl is given: an hour.
DEFAULT_TTL = 3600


class LeaseTake(Verb, frozen=True):
    """Take a lease on paths: refused ``lease_conflict`` if another holds one that overlaps (unless advisory)."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id", "project": "project"}

    entity_id: Holder
    globs: Globs
    ttl: Ttl = DEFAULT_TTL
    shared: Annotated[bool, Meta(description="Shared, not exclusive.")] = False
    reason: Annotated[Text | None, Meta(description="Why (shown to others).")] = None
    project: ProjectArg = None
    advisory: Annotated[bool, Meta(description="Grant despite conflicts.")] = False


class LeaseRenew(Verb, frozen=True):
    """Extend your active leases: each expires ttl seconds from now (never earlier than it did)."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id", "project": "project"}

    entity_id: Holder
    lease_ids: LeaseIds = ()
    ttl: Ttl = DEFAULT_TTL
    project: ProjectArg = None


class LeaseRelease(Verb, frozen=True):
    """Release your active leases (all, or the ones named); releasing again releases nothing."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id", "project": "project"}

    entity_id: Holder
    lease_ids: LeaseIds = ()
    project: ProjectArg = None


class Leases(Verb, frozen=True):
    """The leases of each project: who holds which paths until when (active ones, or every one)."""

    NAMES: ClassVar[Mapping[str, str]] = {"project": "project", "entity_id": "entity id"}

    project: Annotated[Name | None, Meta(description="Only this project's (default: every project).")] = None
    entity_id: Annotated[Name | None, Meta(description="Only this holder's.")] = None
    include_ended: Annotated[bool, Meta(description="Ended ones too.")] = False


class LeaseCheck(Verb, frozen=True):
    """Whether paths (a commit's) are held exclusively by another: refused ``lease_conflict`` if so."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id", "project": "project"}

    paths: Annotated[
        tuple[Annotated[str, Meta(max_length=ID)], ...], Meta(max_length=100_000, description="Paths to check.")
    ] = ()
    entity_id: Annotated[Name | None, Meta(description="Who commits (their own leases never block).")] = None
    project: ProjectArg = None


class LeaseGuardInstall(Verb, frozen=True):
    """Write a git pre-commit hook refusing a commit that touches paths another agent holds exclusively."""

    NAMES: ClassVar[Mapping[str, str]] = {"project": "project"}

    project: Annotated[Name | None, Meta(description="The project whose repository (its root) gets the hook.")] = None
    repo: Annotated[PathText | None, Meta(description="The repository (default: the project's root).")] = None

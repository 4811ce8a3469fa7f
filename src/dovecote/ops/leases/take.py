"""Take, renew and release leases: each a compare-and-swap under the project box's lock.

Law (DESIGN 6): under the box's guard the leases are folded from what the
guard read, at the context's clock (``derive.leases.fold``), the rule checked,
then one letter appended, fsynced before this returns, or nothing and a
refusal. So two agents racing for overlapping paths cannot both win: the
second one reads the first one's lease under the lock and is refused
``lease_conflict``, which names each holder, the glob it holds and until when.
``advisory`` grants a lease despite its conflicts and answers them (the
letter records that it was taken so). Nothing is ever deleted: a release is a
letter, and an expired lease simply stops counting when its time is past.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from dovecote.derive.leases import fold as lease_fold
from dovecote.derive.leases import globs as g
from dovecote.derive.leases.fold import Conflict, Lease
from dovecote.errors import Refusal
from dovecote.model.addresses import project as project_box
from dovecote.model.letters import canonical_line, format_ts
from dovecote.model.results import Result
from dovecote.model.vocab import LetterKind
from dovecote.ops.warm.inbox import entity_address

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Guard


class LeaseRow(Result, frozen=True):
    """One lease as the fold has it (``derive.leases.fold.Lease.row``)."""

    id: str
    project: str
    entity: str
    globs: list[str]
    exclusive: bool
    reason: str | None
    taken_at: str | None
    expires: str
    state: str
    renewed: int
    released_at: str | None
    advisory: bool

    @classmethod
    def of(cls, lease: Lease) -> LeaseRow:
        return cls(**lease.row())


class ConflictRow(Result, frozen=True):
    """Another holder's lease a request runs into: the lease, its holder, its glob, whether exclusive, its
    expiry, and the glob (or path) asked for."""

    lease_id: str
    holder: str
    glob: str
    exclusive: bool
    expires: str
    wanted: str

    @classmethod
    def of(cls, c: Conflict) -> ConflictRow:
        return cls(**c.row())


class LeaseTaken(Result, frozen=True):
    """A lease granted: the lease, and (``advisory``) the conflicts it was granted despite."""

    lease: LeaseRow
    conflicts: list[ConflictRow]
    appended: bool


class LeasesChanged(Result, frozen=True):
    """Leases renewed or released: each one changed (after the change), and how many."""

    project: str
    entity: str
    count: int
    leases: list[LeaseRow]


def project_of(ctx: Context, name: str | None) -> str:
    """The project a lease verb is about: the one named (``unknown_project`` if the roster has none by that
    name), else the roster's only project (``missing_field`` when it has several, or none)."""
    if name is None:
        names = [p.name for p in ctx.roster.projects]
        if len(names) != 1:
            raise Refusal("missing_field", "project is required: the roster has "
                          + (f"{len(names)} projects ({', '.join(names)})" if names else "no project"))
        return names[0]
    p = ctx.roster.project(name)
    if p is None:
        raise Refusal("unknown_project", f"no project {name!r} in the roster")
    return p.name


def normal_globs(given: tuple[str, ...]) -> list[str]:
    """The globs in their one spelling, each once, in the order given; ``invalid_field`` for one naming nothing
    under the project's root (empty, ``..``, a NUL)."""
    out: list[str] = []
    for glob in given:
        n = g.normal(glob)
        if n is None:
            raise Refusal("invalid_field", f"globs: {glob!r} names no path under the project's root")
        if n not in out:
            out.append(n)
    return out


def conflict_text(conflicts: list[Conflict]) -> str:
    """The conflicts as one line: each holder, the glob it holds, and until when."""
    return "; ".join(f"{c.entity} holds {c.glob} ({'exclusive' if c.exclusive else 'shared'}) until {c.expires}"
                     f" [{c.lease_id}], overlapping {c.wanted}" for c in conflicts)


def take(ctx: Context, entity_id: str, globs: tuple[str, ...], ttl: int, *, shared: bool, reason: str | None,
         project: str | None, advisory: bool) -> LeaseTaken:
    """Grant ``entity_id`` a lease on ``globs`` in ``project`` for ``ttl`` seconds, or refuse ``lease_conflict``."""
    entity_address(ctx, entity_id)
    name = project_of(ctx, project)
    wanted = normal_globs(globs)
    with ctx.store.guarded(project_box(name)) as guard:
        now = ctx.now()
        found = lease_fold.conflicts(lease_fold.fold(guard.letters, now, name).values(), entity_id, wanted,
                                     not shared)
        if found and not advisory:
            raise Refusal("lease_conflict", f"{entity_id} cannot take {', '.join(wanted)} in {name}: "
                          + conflict_text(found), conflicts=[c.row() for c in found])
        obj: dict[str, Any] = {
            "kind": LetterKind.lease.value, "ts": format_ts(now), "agent": ctx.actor.actor_for(entity_id),
            "entity": entity_id, "project": name, "globs": wanted, "exclusive": not shared,
            "expires": format_ts(now + timedelta(seconds=ttl)),
        }
        if reason:
            obj["reason"] = reason
        if advisory and found:
            obj["advisory"] = True
        lid, appended = guard.append([canonical_line(obj)])[0]
        lease = lease_fold.fold([*guard.letters], now, name)[lid]
    return LeaseTaken(LeaseRow.of(lease), [ConflictRow.of(c) for c in found], appended)


def _mine(guard: Guard, ctx: Context, name: str, entity_id: str, ids: tuple[str, ...]) -> list[Lease]:
    """``entity_id``'s active leases in the held box: all, or those ``ids`` name (each id or prefix must name
    exactly one of them: ``unknown_letter``, or ``ambiguous_name`` for a prefix of two)."""
    active = [x for x in lease_fold.fold(guard.letters, ctx.now(), name).values()
              if x.entity == entity_id and x.is_active()]
    if not ids:
        return active
    out: list[Lease] = []
    for ref in ids:
        hits = [x for x in active if x.id.startswith(ref)]
        if not hits:
            raise Refusal("unknown_letter", f"{entity_id} holds no active lease {ref!r} in {name}")
        if len(hits) > 1:
            raise Refusal("ambiguous_name", f"lease id {ref!r} names {len(hits)} of {entity_id}'s leases: give more")
        if hits[0] not in out:
            out.append(hits[0])
    return out


def renew(ctx: Context, entity_id: str, ids: tuple[str, ...], ttl: int, project: str | None) -> LeasesChanged:
    """Extend ``entity_id``'s active leases to ``ttl`` seconds from now (a later expiry already there stays)."""
    entity_address(ctx, entity_id)
    name = project_of(ctx, project)
    with ctx.store.guarded(project_box(name)) as guard:
        now = ctx.now()
        mine = _mine(guard, ctx, name, entity_id, ids)
        expires = format_ts(now + timedelta(seconds=ttl))
        lines = [canonical_line({"kind": LetterKind.lease_renew.value, "ts": format_ts(now),
                                 "agent": ctx.actor.actor_for(entity_id), "entity": entity_id, "ref": x.id,
                                 "expires": expires}) for x in mine]
        if lines:
            guard.append(lines)
        after = lease_fold.fold([*guard.letters], now, name)
    return LeasesChanged(name, entity_id, len(mine), [LeaseRow.of(after[x.id]) for x in mine])


def release(ctx: Context, entity_id: str, ids: tuple[str, ...], project: str | None) -> LeasesChanged:
    """End ``entity_id``'s active leases (all, or those named); a lease released or expired already is left."""
    entity_address(ctx, entity_id)
    name = project_of(ctx, project)
    with ctx.store.guarded(project_box(name)) as guard:
        now = ctx.now()
        mine = _mine(guard, ctx, name, entity_id, ids)
        lines = [canonical_line({"kind": LetterKind.lease_release.value, "ts": format_ts(now),
                                 "agent": ctx.actor.actor_for(entity_id), "entity": entity_id, "ref": x.id})
                 for x in mine]
        if lines:
            guard.append(lines)
        after = lease_fold.fold([*guard.letters], now, name)
    return LeasesChanged(name, entity_id, len(mine), [LeaseRow.of(after[x.id]) for x in mine])

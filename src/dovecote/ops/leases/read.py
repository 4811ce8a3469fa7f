"""Reading leases: the listing of every project's (or one's), the commit check, and the counts doctor shows.

Reads only. Each state is derived at the context's clock (``derive.leases.fold``);
a project box out of reach here is named, never read as empty.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from dovecote.derive.leases import fold as lease_fold
from dovecote.derive.leases.fold import Lease
from dovecote.errors import Refusal, StoreError
from dovecote.model.addresses import project as project_box
from dovecote.model.results import Result
from dovecote.model.vocab import LeaseState
from dovecote.ops.leases.take import ConflictRow, LeaseRow, conflict_text, project_of

if TYPE_CHECKING:
    from dovecote.ops.context import Context


class LeaseListing(Result, frozen=True):
    """The leases asked for (active ones unless every one was), their counts by state, and the boxes out of
    reach."""

    leases: list[LeaseRow]
    count: int
    counts: dict[str, int]
    unreachable: list[str]


class PathsChecked(Result, frozen=True):
    """Paths checked against other holders' exclusive leases: none held (a refusal names them otherwise)."""

    project: str
    paths: int
    held: list[ConflictRow]


def project_leases(ctx: Context, name: str) -> list[Lease] | None:
    """``name``'s leases at the context's clock, in the order taken (None when its box is out of reach, or
    cannot be read here: a listing or doctor names it and goes on, as ``distribute`` does)."""
    where = project_box(name)
    if not ctx.store.reachable(where):
        return None
    try:
        letters = ctx.store.read(where).letters
    except StoreError:
        return None
    return list(lease_fold.fold(letters, ctx.now(), name).values())


def tally(leases: Iterable[Lease]) -> dict[str, int]:
    """How many leases are in each state (every state named, zero included)."""
    out = {s.value: 0 for s in LeaseState}
    for x in leases:
        out[x.state] += 1
    return out


def listing(ctx: Context, project: str | None, entity_id: str | None, include_ended: bool) -> LeaseListing:
    """Every project's leases (or one's), a holder's only if named; active ones unless ``include_ended``."""
    names = [project_of(ctx, project)] if project is not None else [p.name for p in ctx.roster.projects]
    rows: list[Lease] = []
    unreachable = []
    for name in names:
        found = project_leases(ctx, name)
        if found is None:
            unreachable.append(str(project_box(name)))
            continue
        rows += [x for x in found if entity_id is None or x.entity == entity_id]
    shown = [x for x in rows if include_ended or x.is_active()]
    return LeaseListing([LeaseRow.of(x) for x in shown], len(shown), tally(rows), unreachable)


def check(ctx: Context, paths: tuple[str, ...], entity_id: str | None, project: str | None) -> PathsChecked:
    """``lease_conflict`` when another holder's active exclusive lease holds one of ``paths`` (naming each
    holder, glob and expiry); else the check, nothing held. ``entity_id`` None counts every holder."""
    name = project_of(ctx, project)
    found = project_leases(ctx, name)
    if found is None:
        raise Refusal("unknown_box", f"the box of project {name} is out of reach here")
    held = lease_fold.holding(found, entity_id, list(paths))
    if held:
        raise Refusal("lease_conflict", f"{len({c.wanted for c in held})} of {len(paths)} paths are held in {name}: "
                      + conflict_text(held), held=[c.row() for c in held])
    return PathsChecked(name, len(paths), [])


def counts(ctx: Context) -> tuple[dict[str, int], list[str]]:
    """Doctor's block: every reachable project's leases by state, and the project boxes out of reach."""
    total = {s.value: 0 for s in LeaseState}
    unreachable = []
    for p in ctx.roster.projects:
        found = project_leases(ctx, p.name)
        if found is None:
            unreachable.append(str(project_box(p.name)))
            continue
        for state, n in tally(found).items():
            total[state] += n
    return total, unreachable

"""The leases of a project's box, derived from its letters and a time: who holds which globs, until when.

Pure (DESIGN 4): fed letters and the time to judge them at, never a file or
the clock. A lease is one ``lease`` letter (its id is the lease's id): the
holder (``entity``), its ``globs``, ``exclusive`` or shared, a ``reason`` and
its ``expires`` time. A ``lease_renew`` letter (``ref``: the lease) moves the
expiry: the latest expiry any renewal names stands, so two ledgers
union-merged by git give the same lease whatever the order. A
``lease_release`` letter ends it; the first one read stands. The state is
then the time's: released, else expired once ``expires`` is past, else
active. A letter that is not well formed is not a lease (skipped, as a
reader skips what it cannot use), and a renewal or release seen before its
lease (a merge in another order) is applied once the lease is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dovecote.derive.leases import globs as g
from dovecote.model.letters import Letter
from dovecote.model.vocab import LeaseState, LetterKind
from dovecote.util.timeutil import parse_time

KINDS = frozenset({LetterKind.lease.value, LetterKind.lease_renew.value, LetterKind.lease_release.value})


@dataclass(slots=True)
class Lease:
    """One lease as its letters make it (``state`` is set by ``fold`` for the time it was asked at)."""

    id: str
    project: str
    entity: str
    globs: tuple[str, ...]
    exclusive: bool
    reason: str | None
    taken_at: str | None
    expires: str
    advisory: bool = False
    renewed: int = 0
    released_at: str | None = None
    released_by: str | None = None
    state: str = LeaseState.active.value
    _expiry: datetime | None = field(default=None, repr=False)

    def is_active(self) -> bool:
        return self.state == LeaseState.active.value

    def row(self) -> dict[str, Any]:
        return {"id": self.id, "project": self.project, "entity": self.entity, "globs": list(self.globs),
                "exclusive": self.exclusive, "reason": self.reason, "taken_at": self.taken_at,
                "expires": self.expires, "state": self.state, "renewed": self.renewed,
                "released_at": self.released_at, "advisory": self.advisory}


def _text(d: Mapping[str, Any], key: str) -> str | None:
    v = d.get(key)
    return v if isinstance(v, str) and v else None


def _lease(letter: Letter, d: Mapping[str, Any], project: str) -> Lease | None:
    entity, expires = _text(d, "entity"), _text(d, "expires")
    given = d.get("globs")
    if entity is None or expires is None or parse_time(expires) is None or not isinstance(given, list):
        return None
    normal = tuple(n for x in given if isinstance(x, str) and (n := g.normal(x)) is not None)
    if not normal:
        return None
    reason = _text(d, "reason")
    return Lease(letter.id, project, entity, normal, d.get("exclusive") is not False, reason, letter.ts, expires,
                 d.get("advisory") is True, _expiry=parse_time(expires))


def fold(letters: Iterable[Letter], now: datetime, project: str = "") -> dict[str, Lease]:
    """Every lease among ``letters`` (one project's box), by id, in the order taken, each with its state at
    ``now``."""
    leases: dict[str, Lease] = {}
    later: list[tuple[str, Letter, dict[str, Any]]] = []
    for letter in letters:
        if letter.kind not in KINDS:
            continue
        d = letter.data()
        if letter.kind == LetterKind.lease.value:
            lease = _lease(letter, d, _text(d, "project") or project)
            if lease is not None:
                leases.setdefault(lease.id, lease)
        elif letter.ref is not None:
            later.append((letter.kind or "", letter, d))
    for kind, letter, d in later:
        lease = leases.get(letter.ref or "")
        if lease is None:
            continue
        if kind == LetterKind.lease_renew.value:
            _renew(lease, _text(d, "expires"))
        elif lease.released_at is None:
            lease.released_at, lease.released_by = letter.ts or "", letter.agent
    for lease in leases.values():
        lease.state = state_at(lease, now)
    return leases


def _renew(lease: Lease, expires: str | None) -> None:
    t = parse_time(expires)
    if t is None or expires is None:
        return
    lease.renewed += 1
    if lease._expiry is None or t > lease._expiry:
        lease.expires, lease._expiry = expires, t


def state_at(lease: Lease, now: datetime) -> str:
    """The one rule of a lease's state: released, else expired once its expiry is past, else active."""
    if lease.released_at is not None:
        return LeaseState.released.value
    if lease._expiry is None or lease._expiry <= now:
        return LeaseState.expired.value
    return LeaseState.active.value


@dataclass(frozen=True, slots=True)
class Conflict:
    """Another holder's active lease that a request (or a path) runs into: whose, on which of its globs."""

    lease_id: str
    entity: str
    glob: str
    exclusive: bool
    expires: str
    wanted: str

    def row(self) -> dict[str, Any]:
        return {"lease_id": self.lease_id, "holder": self.entity, "glob": self.glob, "exclusive": self.exclusive,
                "expires": self.expires, "wanted": self.wanted}


def conflicts(leases: Iterable[Lease], entity: str | None, wanted: Sequence[str], exclusive: bool
              ) -> list[Conflict]:
    """The active leases of holders other than ``entity`` that ``wanted`` (globs) runs into.

    An exclusive request runs into any other holder's active lease; a shared one into another's exclusive
    lease only (shared leases share). ``entity`` None counts every holder as another."""
    out = []
    for lease in leases:
        if not lease.is_active() or lease.entity == entity or not (exclusive or lease.exclusive):
            continue
        for want in wanted:
            hit = next((h for h in lease.globs if g.overlap(h, want)), None)
            if hit is not None:
                out.append(Conflict(lease.id, lease.entity, hit, lease.exclusive, lease.expires, want))
    return out


def holding(leases: Iterable[Lease], entity: str | None, paths: Sequence[str]) -> list[Conflict]:
    """The active exclusive leases of holders other than ``entity`` that hold one of ``paths`` (files, as a
    commit stages them): what the pre-commit guard refuses."""
    out = []
    for lease in leases:
        if not lease.is_active() or not lease.exclusive or lease.entity == entity:
            continue
        for path in paths:
            hit = next((h for h in lease.globs if g.covers(h, path)), None)
            if hit is not None:
                out.append(Conflict(lease.id, lease.entity, hit, True, lease.expires, path))
    return out

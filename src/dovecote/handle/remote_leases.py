"""What a remote caller may do with leases: the one call of each lease verb for a principal (``remote.CALLS``).

The one authorization rule decides who may take, renew or release a lease for
whom (``tokens.VERBS``: ``own``): an agent for itself only (``forbidden`` for
another's), an operator for anyone; each is a write, so it needs a token, whose
entity is the letter's author. Reading the leases and checking paths against them
is anyone's the server admits: who holds which path until when is what every
agent needs to coordinate, and carries no mail. The commit check and installing
the guard are a terminal's (the guard runs on the machine of the repository).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle.api import Actor, Dovecote, Principal
from dovecote.ops.leases.guard import GuardInstalled
from dovecote.ops.leases.read import LeaseListing, PathsChecked
from dovecote.ops.leases.take import LeasesChanged, LeaseTaken

__all__ = ["CALLS", "GuardInstalled", "LeaseListing", "LeaseTaken", "LeasesChanged", "PathsChecked"]


def _holder(p: Principal | None, verb: str, entity: str) -> Actor:
    """The actor of ``verb`` for ``entity``: a token's entity, as the one rule allows (``Dovecote.authorize``,
    what ``remote.own`` asks); a write without a token is ``unauthorized``, as ``remote.writer`` says."""
    if p is None:
        raise Refusal("unauthorized", f"{verb} writes: send Authorization: Bearer <token> (dovecote token issue)")
    Dovecote.authorize(p, verb, entity)
    return Actor(agent=p.entity, entity=p.entity, role=p.role)


def lease_take(dc: Dovecote, p: Principal | None, v: verbs.LeaseTake) -> LeaseTaken:
    return dc.lease_take(v, actor=_holder(p, "lease_take", v.entity_id))


def lease_renew(dc: Dovecote, p: Principal | None, v: verbs.LeaseRenew) -> LeasesChanged:
    return dc.lease_renew(v, actor=_holder(p, "lease_renew", v.entity_id))


def lease_release(dc: Dovecote, p: Principal | None, v: verbs.LeaseRelease) -> LeasesChanged:
    return dc.lease_release(v, actor=_holder(p, "lease_release", v.entity_id))


def leases(dc: Dovecote, p: Principal | None, v: verbs.Leases) -> LeaseListing:
    return dc.leases(v)


CALLS: dict[str, Callable[[Dovecote, Principal | None, Any], Any]] = {
    "lease_take": lease_take, "lease_renew": lease_renew, "lease_release": lease_release, "leases": leases,
}

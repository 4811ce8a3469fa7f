"""The handle's lease verbs: take, renew, release, the listing, the commit check, the guard's install.

One method per verb, each one row of a face (see ``ops.leases``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from dovecote import verbs
from dovecote.handle.core import ActorArg, HandleCore, fields
from dovecote.verbs import checked

if TYPE_CHECKING:
    from dovecote.ops.leases.guard import GuardInstalled
    from dovecote.ops.leases.read import LeaseListing, PathsChecked
    from dovecote.ops.leases.take import LeasesChanged, LeaseTaken


class LeaseVerbs(HandleCore):
    """The handle's lease verbs."""

    @fields(verbs.LeaseTake)
    def lease_take(self, v: verbs.LeaseTake, /, *, actor: ActorArg = None, now: datetime | None = None
                   ) -> LeaseTaken:
        """Take a lease (compare-and-swap: ``lease_conflict`` unless advisory)."""
        from dovecote.ops.leases import take

        v = checked(v)
        return take.take(self._ctx(now=now, actor=actor), v.entity_id, v.globs, v.ttl, shared=v.shared,
                         reason=v.reason, project=v.project, advisory=v.advisory)

    @fields(verbs.LeaseRenew)
    def lease_renew(self, v: verbs.LeaseRenew, /, *, actor: ActorArg = None, now: datetime | None = None
                    ) -> LeasesChanged:
        """Extend a holder's active leases."""
        from dovecote.ops.leases import take

        v = checked(v)
        return take.renew(self._ctx(now=now, actor=actor), v.entity_id, v.lease_ids, v.ttl, v.project)

    @fields(verbs.LeaseRelease)
    def lease_release(self, v: verbs.LeaseRelease, /, *, actor: ActorArg = None, now: datetime | None = None
                      ) -> LeasesChanged:
        """Release a holder's active leases."""
        from dovecote.ops.leases import take

        v = checked(v)
        return take.release(self._ctx(now=now, actor=actor), v.entity_id, v.lease_ids, v.project)

    @fields(verbs.Leases)
    def leases(self, v: verbs.Leases | None = None, /, *, now: datetime | None = None) -> LeaseListing:
        """The leases of every project (or one), active ones unless every one is asked for; reads only."""
        from dovecote.ops.leases import read

        v = checked(v or verbs.Leases())
        return read.listing(self._ctx(now=now), v.project, v.entity_id, v.include_ended)

    @fields(verbs.LeaseCheck)
    def lease_check(self, v: verbs.LeaseCheck, /, *, now: datetime | None = None) -> PathsChecked:
        """Paths against other holders' exclusive leases (``lease_conflict`` if held); reads only."""
        from dovecote.ops.leases import read

        v = checked(v)
        return read.check(self._ctx(now=now), v.paths, v.entity_id, v.project)

    @fields(verbs.LeaseGuardInstall)
    def lease_guard_install(self, v: verbs.LeaseGuardInstall | None = None, /, *, command: tuple[str, ...] = ()
                            ) -> GuardInstalled:
        """Write the pre-commit guard into a project's repository (``command``: how the hook runs dovecote;
        default this interpreter's ``-m dovecote``)."""
        from dovecote.ops.leases import guard

        v = checked(v or verbs.LeaseGuardInstall())
        return guard.install(self.context, v.project, v.repo, command)

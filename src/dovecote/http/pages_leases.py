"""The Human View's leases page: ``/leases``, per project, who holds which paths until when.

Law: the page is the ``leases`` answer rendered (the call ``GET /api/v1/leases``
makes, ``remote`` through the one table of calls, in one worker-thread call):
every project of the roster with its active leases (holder, globs, exclusive
or shared, until when, why), the counts by state (each a link: ``?ended=1``
lists the released and expired leases too), and each project box out of reach
named, never shown as holding nothing. A lease is a letter in a project's box,
so its event refetches the page live like the others.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from dovecote import verbs
from dovecote.handle import remote
from dovecote.handle.api import Dovecote, Principal
from dovecote.http import rest
from dovecote.http.pages import Pages, render


class LeasesPageParams(rest.Params):
    ended: bool = False


def leases_view(dc: Dovecote, who: Principal | None, p: LeasesPageParams) -> dict[str, Any]:
    """Every project with its leases (active ones, or every one with ``ended``), in roster order."""
    found = remote.CALLS["leases"](dc, who, verbs.Leases(include_ended=p.ended))
    projects = [x.name for x in dc.projects()]
    by_project: dict[str, list[Any]] = {name: [] for name in projects}
    for lease in found.leases:
        by_project.setdefault(lease.project, []).append(lease)
    return {"found": found, "by_project": by_project, "ended": p.ended}


def endpoint(pages: Pages) -> Callable[[Request], Awaitable[Response]]:
    """The ``/leases`` page over ``pages``' runner and sessions."""

    async def leases(request: Request) -> Response:
        p = rest.parse(LeasesPageParams, request)
        data = await pages.run(leases_view, rest.principal(request), p)
        return render(request, pages.sessions, "leases.html", **data)

    return leases

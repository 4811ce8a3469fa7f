"""The Human View's delivery page: ``/delivery``, the status view of every task and response.

Law: the page is the ``status`` and ``trackers`` answers rendered (the same
handle calls ``GET /api/v1/status`` and ``GET /api/v1/trackers`` make, in one
worker-thread call), and every count is a link to the rows it counts: each
tracker-state count filters the trackers table (``?state=``), the overdue,
escalation and quarantine counts jump to their lists. It is read with the
request's principal by the API's one rule (``remote.status``: an operator
token, the signed-in person or a local reader; an agent token is
``forbidden``, as on ``GET /api/v1/status``), and it
updates live through ``static/live.js`` like the others: a delivery is a letter
in a box, so its event refetches the page.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, get_args

from starlette.requests import Request
from starlette.responses import Response

from dovecote import verbs
from dovecote.handle import remote
from dovecote.handle.api import Dovecote, Principal
from dovecote.http import rest
from dovecote.http.pages import Pages, render

#: The tracker states the page counts and filters by: the ack states, and escalated (an axis of its own).
#: Spelled once, as the filter's type (msgspec takes no union of an enum and a literal);
#: ``tests/http/test_http_pages_delivery.py`` holds it to ``AckState``.
State = Literal["pending", "acked", "rejected", "timed_out", "not_applicable", "escalated"]
STATES: tuple[str, ...] = get_args(State)
#: The most rows of each list the page shows (each list says how many it left out).
ROWS = 200


class DeliveryParams(rest.Params):
    state: State | None = None


def _in_state(t: dict[str, Any], state: str | None) -> bool:
    return state is None or (t["escalated"] if state == "escalated" else t["ack_state"] == state)


def delivery_view(dc: Dovecote, who: Principal | None, p: DeliveryParams) -> dict[str, Any]:
    """Everything the page shows, read in one go: the status view and every tracker, newest first."""
    status = remote.status(dc, who, verbs.Status(limit=ROWS))
    every = remote.trackers(dc, who, verbs.Trackers(limit=verbs.MAX_INT)).trackers
    counts = {s: sum(1 for t in every if _in_state(t, s)) for s in STATES}
    rows = [t for t in reversed(every) if _in_state(t, p.state)]
    return {"view": status, "counts": counts, "total": len(every), "rows": rows[:ROWS], "matching": len(rows),
            "state": p.state, "states": STATES}


def endpoint(pages: Pages) -> Callable[[Request], Awaitable[Response]]:
    """The ``/delivery`` page over ``pages``' runner and sessions."""

    async def delivery(request: Request) -> Response:
        p = rest.parse(DeliveryParams, request)
        return render(request, pages.sessions, "delivery.html",
                      **await pages.run(delivery_view, rest.principal(request), p))

    return delivery

"""The Human View's needs page (``/needs``): what waits on a person, oldest first.

Law: like every page it is the REST answer rendered (``GET /api/v1/needs``, the
one call of ``needs``): each row says why it waits, what it is, where, how long
it has waited, and links to the page (or button) whose action clears it. The
count is in the page's title, and ``static/badge.js`` keeps that count (and the
tab's icon) current on every page as letters arrive over the event stream.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from dovecote.http import needs, rest
from dovecote.http.pages import Pages, render

#: How each reason reads on the page (a row's first column), in the order the filter lists them.
LABELS = {
    "escalation": "escalated to a person",
    "awaiting_input": "awaits input",
    "clarification": "asks a clarification",
    "blocker": "blocked",
    "addressed_to_person": "addressed to a person",
    "mission_gesture": "mission gesture",
    "red_sentinel": "red sentinel",
    "overdue_ack": "overdue ack",
    "quarantined": "quarantined envelope",
}


def endpoint(pages: Pages) -> Callable[[Request], Awaitable[Response]]:
    """The page (GET ``/needs``)."""

    async def page(request: Request) -> Response:
        rest.parse(needs.NeedsParams, request)
        found = await pages.run(needs.needs, rest.principal(request))
        return render(request, pages.sessions, "needs.html", found=found, labels=LABELS)

    return page

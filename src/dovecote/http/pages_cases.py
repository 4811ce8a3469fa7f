"""The Human View's cases page (``/cases``): case intelligence as a person reads it.

Law: like every page, it is the REST answers rendered (``GET /api/v1/cases``
and ``GET /api/v1/monitors``, read in one worker-thread call) and every count
is a link to the letters behind it: ``/cases?case=<fingerprint>&show=<list>``
lists one case's witnesses, unanswered witnesses, answered letters or
regressions, and ``/cases?show=kindless`` the reports that name no symptom
(so no case), each letter as the sweep has it (box, fate, what). The kindless
list is the sweep's reports that are in no case, no receipt, no win and not the
engine's: the casebook's rule, held to its count by a test. Live updates are
the shared ``live.js`` (the page is fetched again on each letter).
"""

from __future__ import annotations

from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import Response

from dovecote import verbs
from dovecote.handle.api import Case, Dovecote
from dovecote.http import rest
from dovecote.http.pages import Pages, render
from dovecote.model.vocab import ENGINE_AGENT, NOT_TROUBLE

#: A case's letter lists a count links to (``show``), each a key of the case's row.
LISTS = {"witnesses": "witness_ids", "unanswered": "unanswered", "answered": "answered",
         "regressions": "regressions"}


class CasesPageParams(rest.Params):
    case: str | None = None
    show: Literal["witnesses", "unanswered", "answered", "regressions", "kindless"] | None = None


def kindless(rows: list[dict[str, Any]], cases: list[Case]) -> list[dict[str, Any]]:
    """The reports in no case (see the module docstring)."""
    in_case = {lid for c in cases for lid in c.witness_ids}
    return [r for r in rows if r["id"] not in in_case and r.get("class") not in NOT_TROUBLE
            and r.get("agent") != ENGINE_AGENT]


def cases_view(dc: Dovecote, p: CasesPageParams) -> dict[str, Any]:
    """The cases, the monitors, and the letters of the list ``p`` asks for (none by default)."""
    found = dc.cases(verbs.Cases())
    monitors = dc.monitors(verbs.Monitors())
    rows = dc.sweep(verbs.Sweep(distribute=False, include_all=True)).to_dict()["letters"]
    letters: list[dict[str, Any]] | None = None
    chosen = dc.case(verbs.Case(fingerprint=p.case)) if p.case else None  # unknown_case: the error page
    if p.show == "kindless":
        letters = kindless(rows, found.cases)
    elif p.show is not None and chosen is not None:
        ids: list[str] = getattr(chosen, LISTS[p.show])
        by_id = {r["id"]: r for r in rows}
        letters = [by_id.get(i, {"id": i, "box": None, "fate": None, "what": "(not in a reachable box)"})
                   for i in ids]
    return {"found": found, "monitors": monitors, "letters": letters, "chosen": chosen, "show": p.show,
            "lists": LISTS}


async def cases_page(pages: Pages, request: Request) -> Response:
    p = rest.parse(CasesPageParams, request)
    return render(request, pages.sessions, "cases.html", **await pages.run(cases_view, p))

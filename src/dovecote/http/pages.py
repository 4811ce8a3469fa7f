"""The Human View: server-rendered pages over the handle, updated live over SSE.

Law: a page is the REST answer rendered, nothing more: each page makes its
reads through the same handle calls the API routes make (in one worker-thread
call), and every count on a page is a link to the letters behind it. Who may
read what is the API's one rule too: a page reads an entity's mail through
``remote``'s calls with the request's principal, so an agent's bearer token
sees its own box's items alone (another's inbox or item is ``forbidden``, a
search and the overview's inboxes are narrowed to its own), while no token on
loopback, an operator's token or the signed-in person's session reads every
box. The templates and the one small script ship in the package: no build
step, no CDN.
``static/live.js`` listens to ``/api/v1/events`` and, on each letter, fetches
the page again and swaps its ``<main>``, so a new row appears without a reload.

Pages: ``/`` (overview: boxes and their open counts, entity inboxes, pending
distribution, unreachable boxes, doctor), ``/triage`` (the sweep's letters by
fate and box), ``/entities/{entity_id}`` (one inbox),
``/entities/{entity_id}/items/{ref}`` (an item with its thread and history)
and ``/search``.

Actions: the signed-in person (the login link's session) moves items from the
inbox and item pages: POST forms to ``/entities/{entity_id}/items/{ref}/{kind}``
(``act``), each carrying the session's CSRF token and checked same-origin; a page
offers only the moves the lifecycle table allows from the item's state
(``handle.moves``), and answers the page that shows the new state (or, for
``Accept: application/json``, the move's JSON). A person's letters (compose,
reply, a task) are ``pages_write``'s; a body is shown through ``sanitize``. The
person acts as ``human.<name>`` (the name the login link was issued for: the
login of whoever ran ``dovecote serve``; an actor is a name, so no colon), so an item's history says a person,
not an agent, moved it; a person may move items in every box, as the home's
owner may at a terminal. A request carrying a bearer token is never a person
(``human_gesture_required``): a token is an agent's or an operator's.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal
from urllib.parse import parse_qsl

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle import remote
from dovecote.handle.api import Actor, Dovecote, Principal
from dovecote.handle.moves import MOVES
from dovecote.http import inputs, needs, rest, sanitize, thread
from dovecote.http.session import COOKIE, Sessions, refuse_token
from dovecote.model.vocab import PERSON_ROLE

Run = Callable[..., Awaitable[Any]]

ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("dovecote.http", "templates"),
    autoescape=jinja2.select_autoescape(["html"]),
    undefined=jinja2.StrictUndefined,
)
ENV.filters["markdown"] = sanitize.markdown  # a letter's body: Markdown, through the sanitiser, never raw HTML

#: An inbox count -> the filter of its link: the items it counts.
SHOW = {
    "inbound": ("inbound", ("WAIT",)),
    "processing": ("inbound", ("ACTIVE",)),
    "deferred": ("inbound", ("DEFER",)),
    "archive": ("inbound", ("DONE", "NACK")),
    "outbound": ("outbound", ()),
}


#: The moves a page offers in each state: the lifecycle table's (``handle.moves``, less resurface, which the
#: engine makes); the template offers ``seen`` only while unseen, and complete or nack once seen (the rail).
ACTIONS: dict[str, tuple[str, ...]] = {state: kinds for state, kinds in MOVES.items() if kinds}
#: How a person is named as the actor of a move (``person_actor``).
PERSON = "human.{}"


def person_actor(person: str) -> Actor:
    """The actor of a person's act: ``human.<name>`` (the name's characters outside a name's made ``_``), with
    the person's role, whose trust cap (``credentials.TRUST_CAP``) no token's role reaches."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", person)[:100] or "someone"
    who = PERSON.format(name)
    return Actor(agent=who, entity=who, user=person, role=PERSON_ROLE)


class EntityParams(rest.Params):
    entity_id: str
    show: Literal["inbound", "processing", "deferred", "archive", "outbound"] | None = None
    after: str | None = None  # the cursor of the page to show (``derive.inbox.paging``); None: the first


#: How many items an inbox page shows: a box of a hundred thousand letters is read a page at a time.
PAGE = 100


class SearchPageParams(rest.Params):
    q: str = ""
    entity: str | None = None


def render(request: Request, sessions: Sessions, name: str, status: int = 200, **data: Any) -> HTMLResponse:
    html = ENV.get_template(name).render(request=request, person=sessions.person(request), path=request.url.path,
                                         csrf=sessions.csrf(request), actions=ACTIONS, **data)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


def error_page(request: Request, body: dict[str, Any]) -> Response:
    """A failure as a page, in the words of the error shape."""
    sessions: Sessions = request.app.state.sessions
    return render(request, sessions, "error.html", status=body["status"], error=body)


def overview(dc: Dovecote, who: Principal | None) -> dict[str, Any]:
    """Everything the overview shows, read in one go: the inboxes ``who`` may read (``remote.may``)."""
    swept = dc.sweep(verbs.Sweep(distribute=False, include_all=True)).to_dict()
    head = {k: v for k, v in swept.items() if k != "letters"}
    head["in_spool_only"] = sum(1 for row in swept["letters"] if row.get("box") is None)
    inboxes = [{"id": e.id, "role": e.role,
                "counts": remote.inbox(dc, who, verbs.Inbox(entity_id=e.id)).counts}
               for e in dc.entities() if remote.may(who, "inbox", e.id)]
    return {"sweep": head, "boxes": rest.boxes(dc, rest.NoParams())["boxes"], "inboxes": inboxes,
            "doctor": dc.doctor().mailbox, "needs": needs.needs(dc, who)}


def entity_view(dc: Dovecote, who: Principal | None, p: EntityParams) -> dict[str, Any]:
    """One inbox: its outbound drafts whole, else a page of its items (``PAGE`` rows after the cursor ``after``)."""
    direction, states = SHOW[p.show] if p.show else ("inbound", ())
    if direction == "outbound":
        inbox = remote.inbox(dc, who, verbs.Inbox(entity_id=p.entity_id, direction=verbs.Direction.both)).to_dict()
        return {"inbox": inbox, "rows": inbox["outbound"], "direction": direction, "show": p.show, "next": None}
    remote.own(who, "inbox", p.entity_id)  # the rule ``remote.inbox`` applies
    page = dc.inbox_page(p.entity_id, after=p.after, limit=PAGE, states=states,
                         include_terminal=p.show == "archive").to_dict()
    return {"inbox": page, "rows": page["items"], "direction": direction, "show": p.show, "next": page["next"]}


def search_view(dc: Dovecote, who: Principal | None, p: SearchPageParams) -> dict[str, Any]:
    found = remote.search(dc, who, verbs.Search(query=p.q, entity_id=p.entity)) if p.q else None
    return {"q": p.q, "entity": p.entity, "found": found, "entities": dc.entities()}


class Pages:
    """The page endpoints, bound to one runner and one session table."""

    def __init__(self, run: Run, sessions: Sessions, *, read_only: bool = False) -> None:
        self.run = run
        self.sessions = sessions
        self.read_only = read_only

    def _page(self, request: Request, name: str, **data: Any) -> HTMLResponse:
        return render(request, self.sessions, name, **data)

    async def overview(self, request: Request) -> Response:
        rest.parse(rest.NoParams, request)
        return self._page(request, "overview.html", **await self.run(overview, rest.principal(request)))

    async def triage(self, request: Request) -> Response:
        p = rest.parse(rest.SweepParams, request)
        result = await self.run(rest.sweep, p)
        return self._page(request, "triage.html", result=result, fates=rest.FATES, spool=rest.SPOOL)

    async def entity(self, request: Request) -> Response:
        p = rest.parse(EntityParams, request)
        return self._page(request, "entity.html", entity=p.entity_id,
                          **await self.run(entity_view, rest.principal(request), p))

    async def item(self, request: Request) -> Response:
        p = rest.parse(verbs.Show, request)
        who = rest.principal(request)
        shown = (await self.run(remote.show, who, p)).to_dict()
        talk = await self.run(thread.conversation, who, p.entity_id, shown)
        return self._page(request, "item.html", entity=p.entity_id, shown=shown, conversation=talk)

    async def signed_in(self, request: Request) -> tuple[str, dict[str, str]]:
        """The signed-in person making a page's action, and its form (its CSRF token checked and taken out).

        A bearer token is never a person: ``human_gesture_required``, as for no session.
        """
        person, pairs = await self.signed_in_pairs(request)
        return person, dict(pairs)

    async def signed_in_pairs(self, request: Request) -> tuple[str, list[tuple[str, str]]]:
        """``signed_in`` with the form's fields in order, a field given twice kept twice (several recipients)."""
        refuse_token(request, "a page's action")
        person = self.sessions.person(request)
        if person is None:
            raise Refusal("human_gesture_required", "sign in first: open the login link `dovecote serve` printed")
        pairs = parse_qsl((await inputs.read_body(request)).decode("utf-8", "replace"), keep_blank_values=True)
        self.sessions.check_csrf(request, dict(pairs).get("csrf", ""))
        return person, [(k, v) for k, v in pairs if k != "csrf"]

    async def act(self, request: Request) -> Response:
        """A move by the signed-in person (see the module docstring), then back to the page it came from."""
        person, form = await self.signed_in(request)
        back = form.pop("next", "")
        raw = {**{k: v for k, v in form.items() if v.strip()}, **request.path_params}
        v = inputs.convert(verbs.Move, raw)
        remote.refuse_if_read_only("move", v, self.read_only)
        actor = person_actor(person)
        moved = await self.run(lambda dc, m: dc.move(m, actor=actor), v)
        if "application/json" in request.headers.get("accept", ""):  # a script's fetch: the move's own answer
            return rest.json_response(moved)
        item = f"/entities/{v.entity_id}/items/{v.ref}"
        return RedirectResponse(back if back.startswith("/") and not back.startswith("//") else item, status_code=303)

    async def search(self, request: Request) -> Response:
        p = rest.parse(SearchPageParams, request)
        return self._page(request, "search.html", **await self.run(search_view, rest.principal(request), p))

    async def login(self, request: Request) -> Response:
        """Burn the one-time link, set the session cookie, and go to the overview (never for a bearer token)."""
        refuse_token(request, "a login link")
        cookie, _person = self.sessions.redeem(request.path_params["token"])
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(COOKIE, cookie, httponly=True, samesite="strict", path="/",
                            secure=request.url.scheme == "https")
        return response

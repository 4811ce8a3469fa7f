"""REST under ``/api/v1``: one declarative table of read routes over the handle.

Law: a route is a row of ``ROUTES`` (method, path, the handle call, the type of
its parameters, the type of its answer), and everything else is generated from
the table: the Starlette routes, the parameter validation and the OpenAPI
document (``openapi.py``). A handler parses the path and query into the
route's parameter type (unknown parameters refused ``unknown_field``, bad
values ``invalid_field``), makes one call on the handle in a worker thread
and answers its JSON. When the typed verb inputs land, their types take the
place of the parameter types here and the write routes join the table.

Every GET is safe: ``/sweep`` reads without distributing the spool first
(distribution writes; it will be a POST).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route as StarletteRoute

from dovecote import verbs
from dovecote.api import Dovecote
from dovecote.errors import Refusal

#: The fates as the triage filter lists them: the open ones first (``vocab.FATES`` is precedence order).
FATES: tuple[str, ...] = tuple(f.value for f in reversed(verbs.Fate))
Tic = Annotated[int, msgspec.Meta(ge=0, le=2**53, description="the current tic (default: the roster's tic source)")]
Limit = Annotated[int, msgspec.Meta(ge=1, le=1000)]


class Params(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of every route's parameters: a parameter the route does not declare is refused."""


class NoParams(Params):
    pass


#: The ``box`` filter's name for letters only in the spool (not distributed yet, or pending: no box takes them).
SPOOL = "spool"


class SweepParams(Params):
    fate: verbs.Fate | None = None
    box: Annotated[str | None, msgspec.Meta(description=f"a box address, or {SPOOL} (letters in no box yet)")] = None
    klass: Annotated[str | None, msgspec.Meta(description="a report class, e.g. bug")] = msgspec.field(
        default=None, name="class")
    all: bool = False


class BoxParams(Params):
    address: Annotated[str, msgspec.Meta(description="home, project:NAME or entity:ID")]
    all: bool = False


class InboxParams(Params):
    id: str
    direction: verbs.Direction = verbs.Direction.inbound
    include_terminal: bool = False
    current: Tic | None = None


class ItemParams(Params):
    id: str
    ref: Annotated[str, msgspec.Meta(description="a letter id, a foreign message id or a unique prefix")]
    current: Tic | None = None


class SearchParams(Params):
    q: Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]
    entity: str | None = None
    include_terminal: bool = False
    limit: Limit = 20


class BoxSummary(msgspec.Struct):
    """One box's counts, as ``dovecote box`` has them without the letters."""

    box: str
    reachable: bool
    exists: bool
    known: bool
    held: int
    total: int
    open: int
    counts: dict[str, int]
    receipts: int


class Boxes(msgspec.Struct):
    boxes: list[BoxSummary]


def box_summary(dc: Dovecote, address: str) -> dict[str, Any]:
    """A box's counts (``BoxSummary``): one read of the box, its letters left out."""
    d = dc.box(verbs.Box(address=address)).to_dict()
    d.pop("letters")
    d.pop("malformed")
    d.pop("by_kind")
    return {"reachable": dc.reachable(address), **d}


def boxes(dc: Dovecote, _: NoParams) -> dict[str, Any]:
    """Every box the roster names: home, each project, each entity."""
    names = [str(a) for a in dc.report_boxes()] + [f"entity:{e['id']}" for e in dc.entities()]
    return {"boxes": [box_summary(dc, n) for n in names]}


def sweep(dc: Dovecote, p: SweepParams) -> dict[str, Any]:
    """The sweep (no distribution), its letters narrowed to one fate, box and/or class."""
    include_all = p.all or p.fate in (verbs.Fate.fired_clay, verbs.Fate.external)
    out = dc.sweep(verbs.Sweep(distribute=False, include_all=include_all)).to_dict()
    want = {"fate": p.fate, "box": None if p.box == SPOOL else p.box, "class": p.klass}
    given = {k: v for k, v in want.items() if v is not None or (k == "box" and p.box == SPOOL)}
    if given:
        out["letters"] = [row for row in out["letters"] if all(row.get(k) == v for k, v in given.items())]
    out["filter"] = {"fate": p.fate, "box": p.box, "class": p.klass, "all": include_all}
    return out


@dataclass(frozen=True, slots=True)
class Route:
    """One REST route: ``call`` is the one handle call it makes with its parsed parameters."""

    method: str
    path: str
    name: str
    summary: str
    params: type[Params]
    response: Any
    call: Callable[[Dovecote, Any], Any]


ROUTES: tuple[Route, ...] = (
    Route("GET", "/boxes", "boxes", "Every box with its counts (open, fates, held)", NoParams, Boxes, boxes),
    Route("GET", "/sweep", "sweep", "Fates across the spool and every reachable box (no distribution)",
          SweepParams, dict[str, Any], sweep),
    Route("GET", "/boxes/{address}", "box", "One box read alone", BoxParams, dict[str, Any],
          lambda dc, p: dc.box(verbs.Box(address=p.address, include_all=p.all)).to_dict()),
    Route("GET", "/projects", "projects", "The roster's projects and where their boxes are", NoParams,
          list[dict[str, Any]], lambda dc, p: dc.projects()),
    Route("GET", "/entities", "entities", "The roster's entities", NoParams, list[dict[str, Any]],
          lambda dc, p: dc.entities()),
    Route("GET", "/entities/{id}/inbox", "inbox", "The audit of one entity's inbox", InboxParams,
          dict[str, Any],
          lambda dc, p: dc.inbox(verbs.Inbox(entity_id=p.id, current_tic=p.current, direction=p.direction,
                                             include_terminal=p.include_terminal))),
    Route("GET", "/entities/{id}/items/{ref}", "item", "One inbound item whole: envelope, body, thread, history",
          ItemParams, dict[str, Any],
          lambda dc, p: dc.show(verbs.Show(entity_id=p.id, ref=p.ref, current_tic=p.current))),
    Route("GET", "/search", "search", "Full text over entity mail, newest first", SearchParams, dict[str, Any],
          lambda dc, p: dc.search(verbs.Search(query=p.q, entity_id=p.entity, include_terminal=p.include_terminal,
                                               limit=p.limit))),
    Route("GET", "/doctor", "doctor", "Counts only; fails open", NoParams, dict[str, Any],
          lambda dc, p: dc.doctor()),
)


def _explain(e: msgspec.ValidationError) -> Refusal:
    msg = str(e)
    if msg.startswith("Object contains unknown field"):
        return Refusal("unknown_field", msg.replace("Object contains unknown field", "unknown parameter"))
    if msg.startswith("Object missing required field"):
        return Refusal("missing_field", msg.replace("Object missing required field", "missing parameter"))
    return Refusal("invalid_field", msg)


def parse(kind: type[msgspec.Struct], request: Request) -> Any:
    """The request's path and query parameters as ``kind``; refuses what ``kind`` does not allow."""
    raw: dict[str, str] = dict(request.path_params)
    for key, value in request.query_params.multi_items():
        if key in raw:
            raise Refusal("invalid_field", f"parameter {key!r} is given more than once")
        raw[key] = value
    try:
        return msgspec.convert(raw, kind, strict=False)
    except msgspec.ValidationError as e:
        raise _explain(e) from None


def json_response(data: Any, status: int = 200) -> Response:
    """JSON the way the CLI prints it (msgspec: no float or key surprises)."""
    return Response(msgspec.json.encode(data), status_code=status, media_type="application/json")


def routes(run: Callable[..., Any]) -> list[StarletteRoute]:
    """The Starlette routes of ``ROUTES``; ``run(fn, *args)`` calls the handle off the event loop."""

    def endpoint(route: Route) -> Callable[[Request], Any]:
        async def answer(request: Request) -> Response:
            params = parse(route.params, request)
            return json_response(await run(route.call, params))

        answer.__name__ = route.name
        return answer

    return [StarletteRoute(r.path, endpoint(r), methods=[r.method], name=r.name) for r in ROUTES]


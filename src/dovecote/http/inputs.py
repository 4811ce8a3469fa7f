"""What a request gives a route: its path, query and JSON body as one typed input, and the JSON it answers.

Law: a route's input is a msgspec Struct, a typed verb (``dovecote.verbs``)
wherever a verb exists, so REST refuses exactly what the CLI and MCP refuse.
A GET's input is its path and query parameters (texts, converted to the
field types: ``?limit=5`` is 5); a POST's input is its JSON body decoded
strictly by ``verbs.decode`` with the path's fields put in, and a body naming
a path field with another value (a send to ``/entities/B/messages`` whose body
says ``recipient: C``) is refused ``invalid_field``: the path is what the
caller addressed. A body is at most ``MAX_BODY`` bytes (``too_large``), read
before anything is decoded.
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from dovecote import verbs
from dovecote.errors import Refusal

#: The largest request body a route reads, in bytes (a message with a long body fits; a file dump does not):
#: the limits table's, the one MCP over HTTP is held to as well (``shield``).
MAX_BODY = verbs.MAX_BODY


def _explain(e: msgspec.ValidationError) -> Refusal:
    msg = str(e)
    if msg.startswith("Object contains unknown field"):
        return Refusal("unknown_field", msg.replace("Object contains unknown field", "unknown parameter"))
    if msg.startswith("Object missing required field"):
        return Refusal("missing_field", msg.replace("Object missing required field", "missing parameter"))
    if verbs.over_bound(e):
        return Refusal("too_large", msg)
    return Refusal("invalid_field", msg)


def convert(kind: type[msgspec.Struct], raw: dict[str, str]) -> Any:
    """Texts (a query, a form) as ``kind``, each converted to its field's type; a verb is range-checked too."""
    try:
        value = msgspec.convert(raw, kind, strict=False)
    except msgspec.ValidationError as e:
        raise _explain(e) from None
    return verbs.checked(value) if isinstance(value, verbs.Verb) else value


def parse(kind: type[msgspec.Struct], request: Request) -> Any:
    """The request's path and query parameters as ``kind``; refuses what ``kind`` does not allow."""
    raw: dict[str, str] = dict(request.path_params)
    for key, value in request.query_params.multi_items():
        if key in raw:
            raise Refusal("invalid_field", f"parameter {key!r} is given more than once")
        raw[key] = value
    return convert(kind, raw)


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """The request's body, refused ``too_large`` past ``limit`` bytes (by its length, or as it streams)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise Refusal("too_large", f"the body is {declared} bytes; a request body is at most {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refusal("too_large", f"the body is over {limit} bytes; a request body is at most {limit}")
        chunks.append(chunk)
    return b"".join(chunks)


async def parse_body(kind: type[verbs.Verb], request: Request) -> Any:
    """The JSON body as ``kind``, the path's fields put in (see the module docstring); no body is ``{}``."""
    raw = await read_body(request)
    data = verbs.load_json(raw, "the body") if raw.strip() else {}
    if not isinstance(data, dict):
        raise Refusal("invalid_json", f"the body must be a JSON object of {kind.__name__}'s fields")
    for field, value in request.path_params.items():
        if field in data and data[field] != value:
            raise Refusal("invalid_field", f"{field}: the body says {data[field]!r} but the path says {value!r}; "
                                           "leave it out of the body")
        data[field] = value
    return verbs.decode(kind, data)


def json_response(data: Any, status: int = 200) -> Response:
    """JSON the way the CLI prints it (msgspec: no float or key surprises)."""
    return Response(msgspec.json.encode(data), status_code=status, media_type="application/json")

"""The OpenAPI 3.1 document, generated from the route table and the msgspec types.

Law: nothing here is written by hand per route. Each row of ``rest.ROUTES``
gives its path, its input type (a typed verb wherever one exists: the fields
the path names are path parameters; a GET's others are query parameters, a
POST's are its JSON body, whose schema is the verb's without the path's
fields and without the fields a remote caller may not give, ``SERVER_FILES``)
and its answer type; msgspec writes the JSON schemas, and every route also
answers the one error shape (``errors.ErrorBody``) for each 4xx/5xx it can
give. The events stream is listed from ``events.PATH`` the same way.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import msgspec

from dovecote._version import __version__
from dovecote.handle import remote
from dovecote.http import events
from dovecote.http.errors import ErrorBody
from dovecote.http.rest import ROUTES, Route

API = "/api/v1"
REF = "#/components/schemas/{name}"
#: The statuses a read route can answer besides 200, each in the error shape.
ERROR_STATUSES = {
    "400": "the request broke a rule (a refusal: see `reason`)",
    "401": "no valid token: a write needs one, and so does every request to a server open to the network",
    "403": "forbidden for this token, a file on the server named, or the server is read-only",
    "404": "an address, entity, letter or route that is not there",
    "503": "the store could not be read (io_error): try again",
}
#: What a write route can answer besides those.
WRITE_STATUSES = {
    "409": "the move or message conflicts with what is stored (illegal_transition, already_claimed, ...)",
    "413": "the body is over the size limit (too_large)",
}
#: Fields of a verb a remote caller may not give (``remote.refuse_server_files``): not in a body's schema.
SERVER_FILES = remote.SERVER_FILES


def param_schemas(kind: type[msgspec.Struct]) -> tuple[dict[str, Any], list[str]]:
    """The properties of a parameter type and which are required, ``null`` dropped (absent means default)."""
    _, components = msgspec.json.schema_components([kind], ref_template=REF)
    props = components[kind.__name__]
    out: dict[str, Any] = {}
    def inline(schema: dict[str, Any]) -> dict[str, Any]:  # a parameter's enum is written out, not referenced
        ref = schema.get("$ref")
        return dict(components[ref.rsplit("/", 1)[1]]) if isinstance(ref, str) else schema

    for name, prop in props.get("properties", {}).items():
        prop = inline(dict(prop))
        alts = [inline(a) for a in prop.pop("anyOf", []) if a != {"type": "null"}]
        if len(alts) == 1:
            prop.update(alts[0])
        elif alts:
            prop["anyOf"] = alts
        if prop.get("default", 0) is None:
            prop.pop("default")
        out[name] = prop
    return out, list(props.get("required", []))


def _body(route: Route, in_path: set[str], components: dict[str, Any]) -> dict[str, Any]:
    """A POST's request body: the verb's schema without the path's fields (and the server's files)."""
    (_,), comps = msgspec.json.schema_components([route.params], ref_template=REF)
    schema = dict(comps.pop(route.params.__name__))
    components.update(comps)
    drop = in_path | set(SERVER_FILES)
    schema["properties"] = {k: v for k, v in schema.get("properties", {}).items() if k not in drop}
    required = [k for k in schema.get("required", []) if k not in drop]
    schema.pop("required", None)
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return {"required": False, "content": {"application/json": {"schema": schema}}}


class Link(NamedTuple):
    """An OpenAPI link: the route it leads to, its parameters (runtime expressions or constants) and, when the
    link gives the whole request body, that body."""

    target: str
    parameters: dict[str, str]
    body: dict[str, Any] | None = None


#: OpenAPI links, what a stateful client follows from an answer to the next request: a listed entity is a
#: recipient to send to; a sent message is an item of its recipient (read it, claim it, move it, read the inbox
#: it is in); an item read is one to move, a move's item one to read again; an inbox's first item one to read; a
#: posted mission letter is a mission to read. The values come from the answer (``to``, ``id``, ``item``) or the
#: request's own path, never a guess. A claim takes no options, so its link gives the whole (empty) body.
LINKS: dict[str, dict[str, Link]] = {
    "entities": {"SendTo": Link("send", {"recipient": "$response.body#/0/id"})},
    "send": {"ReadItem": Link("item", {"entity_id": "$response.body#/to", "ref": "$response.body#/id"}),
             "ClaimItem": Link("move", {"entity_id": "$response.body#/to", "ref": "$response.body#/id",
                                        "kind": "claim"}, {}),
             "MoveItem": Link("move", {"entity_id": "$response.body#/to", "ref": "$response.body#/id"}),
             "ReadInbox": Link("inbox", {"entity_id": "$response.body#/to"})},
    "item": {"MoveItem": Link("move", {"entity_id": "$request.path.entity_id", "ref": "$response.body#/item/id"})},
    "move": {"ReadItem": Link("item", {"entity_id": "$request.path.entity_id", "ref": "$response.body#/item"}),
             "ReadInbox": Link("inbox", {"entity_id": "$request.path.entity_id"})},
    "inbox": {"ReadItem": Link("item", {"entity_id": "$response.body#/entity", "ref": "$response.body#/items/0/id"})},
    "mission_post": {"ReadMission": Link("mission", {"mission_id": "$response.body#/mission_id"})},
}


def _link(link: Link) -> dict[str, Any]:
    """A link object; a body it gives is the whole body (schemathesis would merge it into a generated one
    unless its extension says so: OpenAPI means the link's ``requestBody`` as the body)."""
    out: dict[str, Any] = {"operationId": link.target, "parameters": link.parameters}
    if link.body is not None:
        out |= {"requestBody": link.body, "x-schemathesis": {"merge_body": False}}
    return out


def _operation(route: Route, components: dict[str, Any]) -> dict[str, Any]:
    in_path = set(re.findall(r"{(\w+)}", route.template))
    props, required = param_schemas(route.params)
    parameters = []
    for name, prop in props.items():
        if route.body and name not in in_path:
            continue
        where = "path" if name in in_path else "query"
        desc = prop.pop("description", None)
        p: dict[str, Any] = {"name": name, "in": where, "required": where == "path" or name in required,
                             "schema": prop}
        if desc:
            p["description"] = desc
        parameters.append(p)
    kinds = route.response if isinstance(route.response, tuple) else (route.response,)
    oks, comps = msgspec.json.schema_components(kinds, ref_template=REF)
    components.update(comps)
    ok = oks[0] if len(oks) == 1 else {"anyOf": list(oks)}
    responses: dict[str, Any] = {str(route.status): {"description": route.summary,
                                                      "content": {"application/json": {"schema": ok}}}}
    if route.name in LINKS:
        responses[str(route.status)]["links"] = {name: _link(link) for name, link in LINKS[route.name].items()}
    for status, why in {**ERROR_STATUSES, **(WRITE_STATUSES if route.body else {})}.items():
        responses[status] = {"description": why, "content": {"application/json": {"schema": {"$ref": REF.format(
            name="ErrorBody")}}}}
    op = {"operationId": route.name, "summary": route.summary, "parameters": parameters, "responses": responses,
          "security": [{"bearer": []}] if route.body else [{}, {"bearer": []}]}
    if route.body:
        op["requestBody"] = _body(route, in_path, components)
    return op


def _events_operation() -> dict[str, Any]:
    return {
        "operationId": "events",
        "summary": "Server-sent events: every new letter in every box; resumable with Last-Event-ID",
        "parameters": [{
            "name": "Last-Event-ID", "in": "header", "required": False,
            "description": "the id of the last event received: the stream resumes right after it",
            "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]*$", "maxLength": 4096},
        }],
        "responses": {
            "200": {"description": "an event stream (text/event-stream); each event's data is JSON",
                    "content": {"text/event-stream": {"schema": {"type": "string"}}}},
            "400": {"description": "the Last-Event-ID is not a cursor this server wrote",
                    "content": {"application/json": {"schema": {"$ref": REF.format(name="ErrorBody")}}}},
        },
    }


def document() -> dict[str, Any]:
    """The whole OpenAPI document (the same every call: build it once)."""
    (_, ), components = msgspec.json.schema_components([ErrorBody], ref_template=REF)
    paths: dict[str, Any] = {}
    for route in ROUTES:
        paths.setdefault(API + route.template, {})[route.method.lower()] = _operation(route, components)
    paths[API + events.PATH] = {"get": _events_operation()}
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "dovecote", "version": __version__,
                 "description": "REST over one dovecote home: the verbs of mail and reports."},
        "paths": paths,
        "components": {"schemas": components, "securitySchemes": {"bearer": {
            "type": "http", "scheme": "bearer",
            "description": "a `dovecote token issue` token; its entity is the actor of every write"}}},
    }
    # as JSON has it (what /openapi.json serves): msgspec writes a tuple default as a tuple
    out: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(doc))
    return out

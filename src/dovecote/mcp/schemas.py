"""The JSON schemas MCP publishes: verb inputs made compact, and the results' output schemas.

``inline`` turns ``verbs.schema`` (msgspec's ``$ref``/``$defs`` form) into the
one flat object a tool's ``inputSchema`` is, without changing what it accepts:
references are inlined, titles and class docs dropped, and an optional
``anyOf [T, null]`` with a null default becomes ``T`` (not listing a field is
how a caller leaves it out). The field descriptions, ranges, patterns and
enums stay: they are the contract, with two exceptions that say nothing new:
the entity-name pattern (a name field keeps its length limit; a bad name is
refused ``invalid_name``, naming the rule) and ``default: false`` on a
boolean (a boolean left out is false). This is what keeps ``tools/list`` small.

The output schemas describe the keys the main results always carry; each
allows more keys, so a result may grow without breaking a client.
"""

from __future__ import annotations

from typing import Any

from dovecote.verbs import NAME_SCHEMA_PATTERN

#: The largest integer the verbs take (``verbs.MAX_INT``): left implicit, every JSON reader carries it.
_MAX_INT = 2**53 - 1


def inline(schema: dict[str, Any], omit: tuple[str, ...] = ()) -> dict[str, Any]:
    """``schema`` with every ``$ref`` resolved against its ``$defs``, compacted (see the module doc).

    ``omit`` names fields a face does not offer (the call refuses them).
    """
    defs: dict[str, Any] = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = walk(defs[node["$ref"].rsplit("/", 1)[1]])
            target.pop("description", None)  # the class doc; the field's own description is kept below
            rest = {k: walk(v) for k, v in node.items() if k not in ("$ref", "$defs")}
            return {**target, **rest}
        out = {k: walk(v) for k, v in node.items() if k not in ("title", "$defs")}
        options = out.get("anyOf")
        if isinstance(options, list) and out.get("default", 0) is None:
            kept = [o for o in options if o != {"type": "null"}]
            if len(kept) == 1:
                del out["anyOf"], out["default"]
                out = {**kept[0], **out}
        if out.get("maximum") == _MAX_INT:
            del out["maximum"]
        if out.get("pattern") == NAME_SCHEMA_PATTERN:  # a bad name is refused invalid_name, naming the rule
            del out["pattern"]
        if out.get("type") == "boolean" and out.get("default") is False:
            del out["default"]
        return out

    out: dict[str, Any] = walk(schema)
    out.pop("description", None)  # the tool's description says it in one line
    for name in omit:
        del out["properties"][name]
    return out


def _obj(required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {**required, **optional}, "required": sorted(required)}


_S, _B, _I = {"type": "string"}, {"type": "boolean"}, {"type": "integer"}
_S_OR_NULL = {"type": ["string", "null"]}
_ITEMS = {"type": "array", "items": {"type": "object"}}

#: Any JSON object: the results that have no typed schema of their own (sweep, box, doctor, search).
OBJECT: dict[str, Any] = {"type": "object"}

REPORT = _obj({"letters": {"type": "array", "items": _obj({"id": _S, "appended": _B})}})

DELIVERY = _obj({"id": _S, "to": _S, "from": _S, "thread_id": _S, "appended": _B},
                message_id=_S_OR_NULL, idempotency_key=_S_OR_NULL, sent_record=_S_OR_NULL)

#: send: a message's delivery, or (a task, a response, a broadcast) one row per delivery in ``deliveries``.
SENT = _obj({"from": _S, "appended": _B}, id=_S_OR_NULL, to=_S_OR_NULL, thread_id=_S_OR_NULL,
            envelope_id=_S_OR_NULL, type=_S, count={"type": "integer"}, deliveries=_ITEMS)

ACKED = _obj({"id": _S, "delivery_id": _S, "envelope_id": _S, "status": _S, "late": _B, "ack_state": _S})

TRACKERS = _obj({"total": {"type": "integer"}, "trackers": _ITEMS})

TRANSITION = _obj({"id": _S, "item": _S, "kind": _S, "from": _S, "to": _S})

INBOX = _obj({"entity": _S, "counts": {"type": "object"}, "flags": {"type": "object"}, "direction": _S,
              "cursor": _S, "clock": {"type": "object"}}, items=_ITEMS, outbound=_ITEMS)

SHOW = _obj({"entity": _S, "item": {"type": "object"}, "envelope": {"type": "object"},
             "thread": {"type": "array"}, "history": {"type": "array"}},
            body=_S_OR_NULL, body_ref=_S_OR_NULL)

WAIT = _obj({"entity": _S, "cursor": _S, "timed_out": _B, "items": _ITEMS})
CASES = _obj({"cases": _ITEMS, "count": _I, "recurrence": {"type": "object"}, "kindless": _I,
              "unreachable": {"type": "array", "items": _S}})
RECEIPT = _obj({"id": _S, "appended": _B, "box": _S, "fingerprint": _S_OR_NULL,
                "answers": {"type": "array", "items": _S}})

"""The JSON schemas MCP publishes: verb inputs made compact, and the results' output schemas.

``inline`` turns ``verbs.schema`` (msgspec's ``$ref``/``$defs`` form) into the
one flat object a tool's ``inputSchema`` is, without changing what it accepts:
references are inlined, titles and class docs dropped, and an optional
``anyOf [T, null]`` with a null default becomes ``T`` (not listing a field is
how a caller leaves it out). The field descriptions, numeric ranges, patterns
and enums stay: they are the contract, with exceptions that say nothing a
caller needs before it calls: the entity-name pattern (a bad name is refused
``invalid_name``, naming the rule), string and list lengths (an out-of-bounds
one is refused ``invalid_field``, naming the bound), ``default: false`` on a
boolean and ``default: []`` on a list (left out is false, or empty), an empty
``required``, the largest integers (``MAX_INT``, ``MAX_SECONDS``: no caller
gets near them), the lower bound 0 of a count or a tic (a negative one is
refused ``invalid_field``, naming the bound), and ``additionalProperties: false`` (every field not listed is
refused ``unknown_field``, as the server's instructions say once for all
tools). This is what keeps ``tools/list`` small.

The output schemas are generated from the results' types (``output``), never
listed by hand, for every tool: the keys an answer always carries (``required``,
every field its type always writes), what a client may rely on; each allows more
keys, so a result may grow without breaking a client. They leave the values'
types to the one-line text, the JSON outputs page and the OpenAPI: spelling each
key's type out would cost more than the catalog's budget holds, and tells an
agent nothing it does not read from the answer itself.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dovecote.verbs import LETTER_ID_SCHEMA_PATTERN, MAX_SECONDS, NAME_SCHEMA_PATTERN

#: The largest integers the verbs take (``verbs.MAX_INT``, a delivery's century in seconds and in minutes).
_HUGE = (2**53 - 1, MAX_SECONDS, MAX_SECONDS // 60)
#: The patterns a caller is told by the refusal instead: a bad name is ``invalid_name``, a bad letter id
#: ``invalid_field``, each naming the rule.
_TOLD = (NAME_SCHEMA_PATTERN, LETTER_ID_SCHEMA_PATTERN)
#: The length bounds of strings and lists: the decoder refuses an out-of-bounds one, naming the bound.
_LENGTHS = ("minLength", "maxLength", "minItems", "maxItems")


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
        if out.get("maximum") in _HUGE:
            del out["maximum"]
        if out.get("minimum") == 0 and out.get("type") == "integer":  # a negative count or tic: invalid_field
            del out["minimum"]
        if out.get("pattern") in _TOLD:
            del out["pattern"]
        if "default" in out and out["default"] in (False, [], ()) and out.get("type") in ("boolean", "array"):
            del out["default"]
        for bound in _LENGTHS:
            out.pop(bound, None)
        return out

    out: dict[str, Any] = walk(schema)
    out.pop("description", None)  # the tool's description says it in one line
    for name in omit:
        del out["properties"][name]
    if not out.get("required", True):
        del out["required"]
    out.pop("additionalProperties", None)  # every field not listed is refused unknown_field (the instructions say so)
    return out


def output(*kinds: type[msgspec.Struct]) -> dict[str, Any]:
    """The output schema of a tool whose answer is one of ``kinds``: an object that always carries each field
    every one of them always writes (a field that may be left out, ``msgspec.UNSET`` by default, is not
    required). Generated from the types, never listed by hand."""
    always = None
    for kind in kinds:
        info = msgspec.inspect.type_info(kind)
        assert isinstance(info, msgspec.inspect.StructType)
        mine = {f.encode_name for f in info.fields if f.required}
        always = mine if always is None else always & mine
    return {"type": "object", "required": sorted(always or ())}


"""The base of the typed verbs: the shared field types, and the one way in (``decode``).

A Struct built in Python is not range-checked by msgspec (it checks only when
it decodes), so ``checked`` passes it through the same decoder: a library
caller meets the same types, ranges and names as a remote one. Every failure
is a ``Refusal`` naming the field, never a msgspec error. A value ``decode``
made is already checked: ``checked`` hands it back as it is (a face decodes a
request once; the handle's own check of it would be the same work again).
"""

from __future__ import annotations

import enum
import functools
import os
import re
import typing
import weakref
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, TypeVar

import msgspec
import orjson
from msgspec import Meta

from dovecote.errors import Refusal
from dovecote.model.addresses import NAME_PATTERN, check_name
from dovecote.model.ids import LETTER_ID_PATTERN
from dovecote.model.vocab import Symptom
from dovecote.verbs.limits import ID, MAX_DEPTH, NAME

MAX_INT = 2**53 - 1

V = TypeVar("V", bound="Verb")

# -- the shared field types ------------------------------------------------------

#: A tic or a count: a whole number JSON readers carry exactly.
Count = Annotated[int, Meta(ge=0, le=MAX_INT)]
#: A name that becomes a directory (checked by ``names.check_name``); the schema shows its pattern.
#: The JSON-schema pattern of a name (a compact face may leave it out: the decoder refuses ``invalid_name``).
NAME_SCHEMA_PATTERN = f"^{NAME_PATTERN}$"
Name = Annotated[str, Meta(extra_json_schema={"pattern": NAME_SCHEMA_PATTERN, "maxLength": NAME})]
#: A letter id (12 lowercase hex digits).
#: A letter id as a schema pattern says it (what ``inline`` recognises to leave out of MCP's schemas).
LETTER_ID_SCHEMA_PATTERN = f"^{LETTER_ID_PATTERN}$"
LetterId = Annotated[str, Meta(pattern=LETTER_ID_SCHEMA_PATTERN)]

CurrentTic = Annotated[Count | None, Meta(description="The tic now (default: the roster's tic source).")]
EntityId = Annotated[Name, Meta(description="The entity (its box is entity:ID).")]
Ref = Annotated[str, Meta(min_length=1, max_length=ID, description="The item id or a unique prefix.")]


class Verb(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, weakref=True):
    """The base of every verb input: frozen, keyword-only, unknown fields refused.

    ``NAMES`` maps each field that holds a name to how a refusal calls it;
    ``NOT_BLANK`` lists (by encoded name) the required texts for which a blank
    value is refused as missing, not as invalid.
    """

    NAMES: ClassVar[Mapping[str, str]] = {}
    NOT_BLANK: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        for field, what in self.NAMES.items():
            value = getattr(self, field)
            for v in value if isinstance(value, (list, tuple)) else (value,):
                if v is not None:
                    check_name(v, what)


def _bad_text(value: object, path: str) -> str | None:
    """The path of the first string under ``value`` that is not UTF-8 (a lone surrogate), if any."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, Mapping):
        for k, v in value.items():
            if _bad_text(k, "key") is not None:  # a key is named by where it is, not by itself
                return f"a key of {path}" if path else "a field name"
            found = _bad_text(v, f"{path}.{k}" if path else str(k))
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = _bad_text(v, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def _depth(value: object) -> int:
    """How deep ``value`` nests (an object or a list is a level), counted without recursion (it may be deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= MAX_DEPTH:
        v, d = stack.pop()
        items = v.values() if isinstance(v, Mapping) else v if isinstance(v, (list, tuple)) else None
        if items is not None:
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in items)
    return deepest


def _look_closer(verb: type[Verb], data: Mapping[str, Any]) -> None:
    """Refuse what orjson would not write: nesting past ``MAX_DEPTH`` (``invalid_json``), a string that is not
    UTF-8 (``invalid_field``, naming where it is). Anything else is left to the decoder's own checks."""
    if _depth(data) > MAX_DEPTH:
        raise Refusal("invalid_json", f"{_verb_name(verb)}: the input nests deeper than {MAX_DEPTH} levels")
    bad = _bad_text(data, "")
    if bad is not None:
        raise Refusal("invalid_field", f"{_verb_name(verb)}: {bad} is not valid UTF-8 text")


def over_bound(e: msgspec.ValidationError) -> bool:
    """Whether msgspec refused a value for being over its bound in ``limits``: ``too_large`` on every face."""
    return " of length <= " in str(e)


def _refusal(e: msgspec.ValidationError, verb: type[Verb]) -> Refusal:
    """A msgspec error as the refusal a face shows: the keyword, and the field it is about."""
    text = str(e)
    what, _, where = text.partition(" - at `$")
    field = where.rstrip("`").lstrip(".") or None
    if text.startswith("Object missing required field"):
        return Refusal("missing_field", f"{_verb_name(verb)}: {what.split('`')[1]} is required")
    if text.startswith("Object contains unknown field"):
        return Refusal("unknown_field", f"{_verb_name(verb)}: {what.split('`')[1]} is not a field of it")
    if over_bound(e):  # over a bound of the limits table: one keyword for every size limit
        return Refusal("too_large", f"{_verb_name(verb)}: {field}: {what}" if field else f"{_verb_name(verb)}: {what}")
    if field in _enums(verb):
        what += f" (one of: {', '.join(choices(verb, field))})"
        if _enums(verb)[field] is Symptom:  # the closed vocabulary has its own keyword: there is no "other"
            return Refusal("unknown_symptom", f"{_verb_name(verb)}: {field}: {what}")
    return Refusal("invalid_field", f"{_verb_name(verb)}: {field}: {what}" if field else f"{_verb_name(verb)}: {what}")


def _verb_name(verb: type[Verb]) -> str:
    """How a refusal names the verb: its class name in snake case (``ImportInboxTree``: import_inbox_tree)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", verb.__name__).lower()


def decode(verb: type[V], data: object) -> V:
    """``data`` (a plain mapping: what MCP and REST receive) as the typed input of ``verb``.

    Types are strict (no "1" for 1, no true for 1); ranges, enums and names are
    checked. Raises ``Refusal``: ``invalid_json`` (not a mapping, or nested
    deeper than ``limits.MAX_DEPTH``), ``missing_field``, ``unknown_field``,
    ``invalid_field`` (wrong type, out of range, not in the enum, not UTF-8),
    ``too_large`` (over its bound in ``limits``), ``invalid_name``, ``invalid_address``.
    """
    if not isinstance(data, Mapping):
        raise Refusal("invalid_json", f"{_verb_name(verb)} takes an object of fields, not {type(data).__name__}")
    try:
        orjson.dumps(data)  # what a letter is written with: a value it takes has no surrogate and is not too deep
    except (TypeError, ValueError):  # a surrogate, too deep, or a value orjson does not take: look closer
        _look_closer(verb, data)
    for name in verb.NOT_BLANK:
        given = data.get(name)
        if isinstance(given, str) and not given.strip():
            raise Refusal("missing_field", f"{_verb_name(verb)}: {name} is required and cannot be blank")
    try:
        value = msgspec.convert(data, verb, strict=True)
    except msgspec.ValidationError as e:
        raise _refusal(e, verb) from None
    key = id(value)
    _DECODED[key] = weakref.ref(value, functools.partial(_forget, key))
    return value


def _forget(key: int, _: object) -> None:
    _DECODED.pop(key, None)


#: The values ``decode`` made and that still live, by id: ``checked`` takes them as they are.
#: A weak reference (the value's own is gone once it is freed, so a new object at the same
#: address is never taken for it).
_DECODED: dict[int, weakref.ref[Verb]] = {}


def load_json(raw: bytes, what: str) -> Any:
    """``raw`` read as JSON for a verb's input (``what`` names it in a refusal): any failure of the reader is
    ``invalid_json``, never the reader's own exception (JSON nested past the interpreter's stack is a
    ``RecursionError``, which would otherwise reach a face as a bug)."""
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as e:
        raise Refusal("invalid_json", f"{what} is not JSON: {e}") from None
    except RecursionError:
        raise Refusal("invalid_json", f"{what} nests deeper than {MAX_DEPTH} levels") from None


def decode_many(verb: type[V], items: Sequence[object], what: str) -> list[V]:
    """Each of ``items`` decoded; a refusal says which one (``what`` n of m)."""
    out = []
    for n, item in enumerate(items, 1):
        try:
            out.append(decode(verb, item))
        except Refusal as r:
            if len(items) == 1:
                raise
            raise Refusal(r.reason, f"{what} {n} of {len(items)}: {r.detail}") from None
    return out


def checked(value: V) -> V:
    """``value`` as ``decode`` would have made it: a Struct built in Python is range-checked the same way.

    msgspec checks types and ranges only when it decodes, so the handle passes
    every input through here; a value ``decode`` made is handed back as it is.
    """
    ref = _DECODED.get(id(value))
    if ref is not None and ref() is value:
        return value
    try:
        data = msgspec.to_builtins(value, enc_hook=_path_text)
    except TypeError as e:
        raise Refusal("invalid_field", f"{_verb_name(type(value))}: {e}") from None
    return decode(type(value), data)


def _path_text(obj: object) -> str:
    """A ``Path`` given for a path field is its text (what a remote caller sends)."""
    if isinstance(obj, os.PathLike):
        return str(os.fspath(obj))
    raise TypeError(f"{type(obj).__name__} is not a value a verb field takes")


@functools.cache
def _docs(verb: type[Verb]) -> dict[str, str]:
    hints = typing.get_type_hints(verb, include_extras=True)
    out = {}
    for f in msgspec.structs.fields(verb):
        metas = [m for m in getattr(hints[f.name], "__metadata__", ()) if isinstance(m, Meta) and m.description]
        out[f.name] = (metas[-1].description or "") if metas else ""
    return out


@functools.cache
def _enums(verb: type[Verb]) -> dict[str, type[enum.Enum]]:
    """The fields of ``verb`` that take a closed vocabulary, and its enum."""
    def find(t: object) -> type[enum.Enum] | None:
        if isinstance(t, type) and issubclass(t, enum.Enum):
            return t
        return next((e for a in typing.get_args(t) if (e := find(a)) is not None), None)

    return {f.name: e for f in msgspec.structs.fields(verb) if (e := find(f.type)) is not None}


def choices(verb: type[Verb], field: str) -> tuple[str, ...]:
    """The values ``verb``'s ``field`` may take (empty when it takes any)."""
    e = _enums(verb).get(field)
    return tuple(str(m.value) for m in e) if e is not None else ()


def doc(verb: type[Verb], field: str) -> str:
    """The one-line doc of ``verb``'s ``field`` (a face's help text comes from here)."""
    text = _docs(verb).get(field)
    if text is None:
        raise KeyError(f"{verb.__name__} has no field {field!r}")
    return text


def schema(verb: type[Verb]) -> dict[str, Any]:
    """The JSON schema of ``verb``'s input (every field with its description, range and enum)."""
    return msgspec.json.schema(verb)

"""A verb's fields given as Python arguments: ``dc.inbox("ent_b", include_terminal=True)``.

A handle method takes its verb whole (``dc.inbox(Inbox(entity_id="ent_b"))``),
or the verb's fields as arguments, built here into the same typed verb by the
same decoder a remote call goes through (``decode``): one set of checks, one
value. Positional arguments follow the verb's field order, the order its class
declares them in (a field a verb redefines keeps the place its parent gave it:
``Send``'s ``recipient`` stays first, as ``Message`` has it); a field is named
by its attribute or by its JSON name (``klass`` or ``class``).

What a Python caller gets wrong about the call itself is a ``TypeError``
naming the verb and the field, as a wrong call of any Python function is: too
many arguments, a field the verb does not have, one given twice, a required
one missing, a value of the wrong type. A value of the right type that a rule
refuses (a range, a name, a closed vocabulary) is the ``Refusal`` every face
meets for it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

import msgspec

from dovecote.errors import Refusal
from dovecote.verbs.base import V, Verb, _path_text, _verb_name, decode

#: msgspec's words for a value of another type (a range or a pattern is said otherwise).
_WRONG_TYPE = re.compile(r"Expected `[^`]+`, got `[^`]+`")


@functools.cache
def order(verb: type[Verb]) -> tuple[str, ...]:
    """``verb``'s fields in the order positional arguments fill them (see the module docstring)."""
    seen: dict[str, None] = {}
    for cls in reversed(verb.__mro__):
        names = getattr(cls, "__struct_fields__", ()) if issubclass(cls, Verb) else ()
        for name in names if isinstance(names, tuple) else ():
            seen.setdefault(name, None)
    return tuple(seen)


@functools.cache
def _names(verb: type[Verb]) -> dict[str, str]:
    """Each way of naming a field of ``verb`` (its attribute, its JSON name) -> its JSON name."""
    pairs = list(zip(verb.__struct_fields__, verb.__struct_encode_fields__, strict=True))
    return {**{enc: enc for _, enc in pairs}, **dict(pairs)}


@functools.cache
def _required(verb: type[Verb]) -> tuple[str, ...]:
    return tuple(f.encode_name for f in msgspec.structs.fields(verb) if f.required)


def field_names(verb: type[Verb]) -> frozenset[str]:
    """Every name a keyword argument may give a field of ``verb`` by."""
    return frozenset(_names(verb))


def from_arguments(verb: type[V], args: tuple[object, ...], kwargs: Mapping[str, object]) -> V:
    """The ``verb`` that ``args`` (in field order) and ``kwargs`` (by name) give; raises ``TypeError`` or
    ``Refusal`` as the module docstring says."""
    what = _verb_name(verb)
    fields = order(verb)
    if len(args) > len(fields):
        raise TypeError(f"{what} takes at most {len(fields)} fields as arguments ({', '.join(fields)}); "
                        f"{len(args)} were given")
    names = _names(verb)
    data = {names[f]: value for f, value in zip(fields, args, strict=False)}
    for key, value in kwargs.items():
        field = names.get(key)
        if field is None:
            raise TypeError(f"{what} has no field {key!r} (its fields: {', '.join(fields)})")
        if field in data:
            raise TypeError(f"{what}: {key} was given twice")
        data[field] = value
    for field, value in data.items():
        try:  # a Path is its text, as ``checked`` takes it; bytes stay bytes (never quietly base64)
            data[field] = msgspec.to_builtins(value, builtin_types=(bytes, bytearray, memoryview),
                                              enc_hook=_path_text)
        except TypeError as e:
            raise TypeError(f"{what}: {field}: {e}") from None
    try:
        return decode(verb, data)
    except Refusal as r:
        if r.reason not in ("invalid_field", "missing_field"):
            raise
        wrong = _wrong_type(verb, data)  # a value of another type is named first, as msgspec finds it
        if wrong is not None:
            raise TypeError(f"{what}: {wrong}") from None
        missing = [f for f in _required(verb) if f not in data]  # left out (a blank text is the verb's refusal)
        if missing:
            raise TypeError(f"{what}: missing field {', '.join(missing)}") from None
        raise


def _wrong_type(verb: type[Verb], data: dict[str, object]) -> str | None:
    """The field of ``data`` whose value is of a type ``verb`` does not take, and what it takes; None if none is."""
    try:
        msgspec.convert(data, verb, strict=True)
    except msgspec.ValidationError as e:
        said, _, where = str(e).partition(" - at `$")
        if _WRONG_TYPE.match(said):
            return f"{where.rstrip('`').lstrip('.')}: {said}"
    except Refusal:  # a rule of the verb's own (``__post_init__``): decode raised it already
        return None
    return None

"""The one way a handle's answer becomes JSON data, for every face.

Law: the CLI's ``--json``, REST bodies and MCP's ``structuredContent`` are the same
encoding of the same typed value, so they cannot disagree. A result is a frozen
``msgspec.Struct`` (``Result``, or an older value with its own ``to_dict``), or a
list of them; ``builtins`` turns it into the plain data (dicts, lists, strings,
numbers) that ``orjson`` or ``msgspec.json`` writes, keys in the order the fields
are declared.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

__all__ = ["Result", "builtins", "typed"]

R = TypeVar("R")


class Result(msgspec.Struct, frozen=True):
    """Base of a handle's typed answer: its JSON is its fields in declared order.

    A key an answer sometimes leaves out is a field typed ``T | UnsetType`` with the
    default ``msgspec.UNSET``: msgspec never writes an unset field, so the key stays
    absent; every other field is always written (a None as null).
    """

    def to_dict(self) -> dict[str, Any]:
        """This answer as plain data (what ``builtins`` gives)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


def builtins(value: Any) -> Any:
    """The plain data of a handle's answer: a value's ``to_dict()``, a list's items one by one, else itself.

    The method is looked up on the value's class, which allocates nothing, where ``value.to_dict`` (or
    ``hasattr``, or an ``isinstance`` against a Struct class) makes a new object: right after a large read
    (the inbox's thousands of fresh rows) that one object is the allocation that sets the cyclic collector
    walking every row (see ``handle.inbox``).
    """
    to_dict = getattr(type(value), "to_dict", None)
    if to_dict is not None:
        return to_dict(value)
    if isinstance(value, list):
        return [builtins(v) for v in value]
    return value


def typed(kind: type[R], data: Any) -> R:
    """``data`` (plain data a fold built) as the typed answer ``kind``, nested values converted to their types.

    Its JSON is ``data``'s exactly when ``kind`` declares the keys in the order ``data`` has them, which
    ``tests/handle/test_verb_json.py`` pins for every read; a value of the wrong type is a bug here, not the caller's.
    """
    return msgspec.convert(data, kind)

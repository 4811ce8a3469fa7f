"""Names and box addresses.

A project name or entity id becomes a directory name, so it must never be able
to leave its folder: no separators, no ``..``, no NUL, no leading dot. Every
name that reaches the file system passes ``check_name`` first.

Addresses: ``home``, ``project:<name>``, ``entity:<id>``.
"""

from __future__ import annotations

import re
from typing import Final, Literal, NamedTuple

from dovecote.errors import Refusal

#: What a name may be (the schemas of the typed verbs show it; ``check_name`` enforces it).
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
_NAME = re.compile(NAME_PATTERN)

BoxKind = Literal["home", "project", "entity"]
#: Where a field report waits before distribution gives it a box: the name that stands where a box
#: address may (``store.Where``, the event feed's label, the triage page's filter).
SPOOL: Final = "spool"


def check_name(name: object, what: str = "name") -> str:
    """Return ``name`` if it is safe as a single path component; refuse otherwise."""
    if not isinstance(name, str) or not name:
        raise Refusal("invalid_name", f"{what} must be a non-empty string")
    if "\x00" in name:
        raise Refusal("invalid_name", f"{what} {name!r} contains NUL")
    if "/" in name or "\\" in name or ".." in name:
        raise Refusal("invalid_name", f"{what} {name!r} contains a path separator or '..'")
    if not _NAME.fullmatch(name):
        raise Refusal(
            "invalid_name",
            f"{what} {name!r} must be 1-128 of A-Z a-z 0-9 . _ - and start with a letter or digit",
        )
    return name


class Address(NamedTuple):
    """A parsed box address."""

    kind: BoxKind
    name: str  # "" for home

    def __str__(self) -> str:
        return "home" if self.kind == "home" else f"{self.kind}:{self.name}"


HOME = Address("home", "")


def project(name: str) -> Address:
    return Address("project", check_name(name, "project name"))


def entity(name: str) -> Address:
    return Address("entity", check_name(name, "entity id"))


def parse_address(text: object) -> Address:
    """Parse ``home`` / ``project:<name>`` / ``entity:<id>``; refuse anything else."""
    if not isinstance(text, str):
        raise Refusal("invalid_address", "a box address must be a string")
    if text == "home":
        return HOME
    kind, sep, name = text.partition(":")
    if sep and kind == "project":
        return project(name)
    if sep and kind == "entity":
        return entity(name)
    raise Refusal(
        "invalid_address", f"{text!r} is not home, project:<name> or entity:<id>"
    )

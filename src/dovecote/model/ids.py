"""The letter-id rule, in one place: how long an id is, how it is spelled, how it is computed.

Law (DESIGN 1.2): a letter's id is the first 12 lowercase hex digits of SHA-256
over its line bytes with the trailing newline removed. ``letters.letter_id``
strips the ending and calls ``line_id``; every other module that needs the
length, the pattern or the digest imports it from here (a test fails if a
second spelling appears). A leaf: the typed verbs' cold path loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dovecote.util.digests import sha256, sha256_for

if TYPE_CHECKING:
    from collections.abc import Sequence

#: How many hex digits of the SHA-256 an id keeps.
ID_LENGTH = 12
#: A letter id as a regex (alone, or inside a longer name such as ``WAIT_<id>``).
LETTER_ID_PATTERN = f"[0-9a-f]{{{ID_LENGTH}}}"
#: A mission id (m1nd's): ``msn_`` and the digits of an id.
MISSION_ID_PATTERN = f"msn_{LETTER_ID_PATTERN}"


def line_id(line: bytes) -> str:
    """The id of ``line`` exactly as given (its ending, if any, already removed): the first
    ``ID_LENGTH`` hex digits of its SHA-256."""
    return sha256(line).hexdigest()[:ID_LENGTH]


def line_ids(lines: Sequence[bytes]) -> list[str]:
    """``line_id`` of each line, in one call: the hash constructor is looked up once, not
    through ``sha256`` per line (a cold sweep reads hundreds of thousands)."""
    new = sha256_for(sum(map(len, lines)))
    return [new(line).hexdigest()[:ID_LENGTH] for line in lines]

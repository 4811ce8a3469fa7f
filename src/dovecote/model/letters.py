"""Letters: identity, the canonical line, and the decoded view folds read.

Law (DESIGN 1.2): a letter's id is the first 12 lowercase hex digits of
SHA-256 over its line bytes with the trailing newline removed. The id is never
stored in the letter; the bytes are kept exactly as read, so a letter written by
another tool keeps the id that tool gave it.

A ``Letter`` keeps its original line (``raw``) and decodes only the fields the
folds need; everything else stays in ``raw`` and is read with ``data()`` when a
face needs it. Decoding is lenient: a known field with the wrong type reads as
absent rather than dropping the letter, and a line that is not a JSON object is
a ``Defect``, never a letter.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from operator import methodcaller
from typing import Any

import msgspec
import orjson
from msgspec.structs import force_setattr

from dovecote.model.ids import ID_LENGTH, line_id, line_ids
from dovecote.model.vocab import MISDELIVERY_CLASS, RECEIPT_CLASS, REPORT_KINDS
from dovecote.util.timeutil import format_ts as format_ts  # its home is timeutil; kept for importers


def letter_id(line: bytes) -> str:
    """The content id of one ledger line: its bytes without the line ending (one LF, then one CR).

    Exactly what a reader strips, so an id computed before an append is the id
    the reader finds after it, whatever a foreign writer put before the LF.
    """
    if line.endswith(b"\n"):
        line = line[:-1]
    if line.endswith(b"\r"):
        line = line[:-1]
    return line_id(line)


_ENDED = methodcaller("endswith", (b"\n", b"\r"))


def letter_ids(lines: Sequence[bytes]) -> list[str]:
    """``letter_id`` of each line, in one call (a batch append): when no line has an ending to
    strip (one C-level scan finds out), each is hashed as it is."""
    if any(map(_ENDED, lines)):
        return [letter_id(line) for line in lines]
    return line_ids(lines)


def text_or_none(value: object) -> str | None:
    """A letter field read as text: the string it holds, else None (a number or a list is not text)."""
    return value if isinstance(value, str) else None


_HEX = frozenset("0123456789abcdef")


def is_hex(text: str) -> bool:
    """Every character a lowercase hex digit: how ids and digests are spelled."""
    return _HEX.issuperset(text)


def is_letter_id(value: object) -> bool:
    """True for a 12-digit lowercase hex string."""
    return isinstance(value, str) and len(value) == ID_LENGTH and is_hex(value)


def _int_or_float(digits: str) -> int | float:
    """A JSON integer as the standard library reads it, or as a float past ``sys.get_int_max_str_digits``."""
    try:
        return int(digits)
    except ValueError:
        return float(digits)


class Letter(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One letter as the folds see it. ``id`` and ``raw`` come from the line."""

    ts: str | None = None
    agent: str | None = None
    kind: str | None = None
    klass: str | None = msgspec.field(default=None, name="class")
    repo: str | None = None
    brain: str | None = None
    tool: str | None = None
    answers: list[str] | None = None
    ref: str | None = None
    symptom: str | None = None
    # Filled from the line by the reader; the odd wire names cannot collide
    # with a real field, and whatever a line carries there is overwritten.
    id: str = msgspec.field(default="", name="~dovecote:id")
    raw: bytes = msgspec.field(default=b"", name="~dovecote:raw")

    def data(self) -> dict[str, Any]:
        """The whole JSON object of the line (decoded on demand).

        The letter decoder skips fields it does not model without checking
        them, so a letter may hold what orjson refuses there (a number beyond a
        double, bytes that are not UTF-8); the standard library reads those.
        """
        try:
            value = orjson.loads(self.raw)
        except orjson.JSONDecodeError:  # an integer past Python's digit limit reads as a float (inf), not an error
            value = json.loads(self.raw.decode("utf-8", "replace"), parse_int=_int_or_float)
        assert isinstance(value, dict)
        return value

    @property
    def is_report(self) -> bool:
        """A field report or receipt (absent kind, ``report``, or a legacy sub-kind)."""
        return self.kind in REPORT_KINDS

    @property
    def is_receipt(self) -> bool:
        """A receipt: class ``triage``, case-insensitively (the fate fold inlines this test)."""
        return self.klass is not None and self.klass.lower() == RECEIPT_CLASS

    @property
    def is_misdelivery(self) -> bool:
        return self.klass == MISDELIVERY_CLASS


_decoder = msgspec.json.Decoder(Letter)
_decode_typed = _decoder.decode


def decode_lines_fast(buf: bytes, lines: list[bytes]) -> list[Letter] | None:
    """Decode many clean lines in one call; None if any line needs the slow path.

    ``lines`` is ``buf`` split at each newline. The caller still sets ``id`` and
    ``raw``. A blank line, a line that is not an object, or a field of the
    wrong type anywhere sends the whole batch back to ``decode_line``, which
    handles each case.

    ``decode_lines`` skips whitespace-only lines and yields two objects for a
    line like ``{..}{..}``, so the two can cancel out in the count and pair a
    letter with the wrong line. So every line must start with ``{`` (the
    smallest line does, hence all do; a C-level ``min`` is far cheaper than a
    scan of the buffer), otherwise the slow path decides.
    """
    if min(lines, default=b"")[:1] != b"{":
        return None
    try:
        out = _decoder.decode_lines(buf)
    except (msgspec.DecodeError, RecursionError):  # too deeply nested: a malformed line
        return None
    return out if len(out) == len(lines) else None
_STR_FIELDS = ("ts", "agent", "kind", "repo", "brain", "tool", "ref", "symptom")


def _lenient(obj: dict[str, Any]) -> Letter:
    """Build a Letter from a dict whose known fields may have the wrong types."""
    kw: dict[str, Any] = {k: obj[k] for k in _STR_FIELDS if isinstance(obj.get(k), str)}
    klass = obj.get("class")
    if isinstance(klass, str):
        kw["klass"] = klass
    answers = obj.get("answers")
    if isinstance(answers, list):
        kw["answers"] = [a for a in answers if isinstance(a, str)]
    return Letter(**kw)


def decode_line(line: bytes) -> Letter | None:
    """Decode one complete line (no newline). None when it is not a JSON object."""
    try:
        letter = _decode_typed(line)
    except msgspec.ValidationError:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(obj, dict):
            return None
        letter = _lenient(obj)
    except (msgspec.DecodeError, RecursionError):  # too deeply nested: a malformed line
        return None
    force_setattr(letter, "id", line_id(line))
    force_setattr(letter, "raw", line)
    return letter


# Field order of the canonical line: the well-known fields first, in the order
# m1nd writes them, then every other key sorted. Nested objects are key-sorted.
CANONICAL_ORDER: tuple[str, ...] = (
    "ts",
    "agent",
    "kind",
    "brain",
    "repo",
    "to",
    "tool",
    "class",
    "symptom",
    "misdelivery_kind",
    "what",
    "expected",
    "snippet",
    "answers",
    "ref",
)


def sorted_deep(value: Any) -> Any:
    """A nested object or array as its compact bytes with every object's keys sorted, at every depth.

    Why orjson's ``OPT_SORT_KEYS`` and a ``Fragment``: the walk runs in C instead
    of rebuilding each nested dict in Python (a send's envelope line: 8.6 -> 6.3 µs
    CPU); it sorts by UTF-8 bytes, which is the order of code points ``sorted`` gives.
    """
    if isinstance(value, (dict, list)):
        return orjson.Fragment(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    return value


def canonical_line(obj: dict[str, Any]) -> bytes:
    """The one compact form dovecote writes, so equal letters get equal ids:
    the known fields first in ``CANONICAL_ORDER``, the rest sorted, every nested object sorted."""
    ordered = {k: sorted_deep(obj[k]) for k in CANONICAL_ORDER if k in obj}
    for k in sorted(obj):
        if k not in ordered:
            ordered[k] = sorted_deep(obj[k])
    return orjson.dumps(ordered)


def make_letter(obj: dict[str, Any]) -> Letter:
    """Canonicalize a dict and decode it as the Letter a reader would see."""
    letter = decode_line(canonical_line(obj))
    assert letter is not None
    return letter

"""What Gas City reads and writes: its message JSON, its send body, its count.

gc decodes a message with Go's ``encoding/json`` into its ``mail.Message``: ``id`` a
string, ``created_at`` an RFC 3339 time *with* a zone (a naive one fails the whole
call), ``priority`` an integer, ``cc`` a list of strings, ``thread_id`` and
``reply_to`` left out when empty; unknown keys are ignored. An empty list is printed
as nothing at all: gc reads that as no messages (its ``nil``), while ``[]`` would be
an empty list its conformance suite tells apart.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from dovecote.errors import Refusal
from dovecote.handle.mailbox import Piece, owner_name

#: dovecote's priorities as gc's integers (a bead's P0..P3; gc's default is 2, dovecote's ``normal``).
PRIORITY = {"urgent": 0, "high": 1, "normal": 2, "low": 3}
#: How far a message id's UUIDv7 clock may be from the letter's second and still be its creation time.
_SKEW_S = 5.0


def entity_of(gc_name: str) -> str:
    """The dovecote entity a gc name is: gc names its agents by path (``gastown/mayor``,
    ``myrig/polecats/polecat-1``, ``deacon/``), an entity name is one path component, so each
    ``/`` becomes ``.`` (``gastown.mayor``), as Gas Town writes an identity as a mail address.
    A gc name with a ``.`` of its own would read back as another name, so it is refused
    ``invalid_name`` (as is any name dovecote cannot hold once mapped)."""
    if "." in gc_name:
        raise Refusal("invalid_name", f"gc name {gc_name!r}: a '.' stands for '/' in a dovecote entity name, "
                                      "so a gc name cannot hold one")
    return owner_name(gc_name.replace("/", "."))


def gc_name_of(entity: str) -> str:
    """The gc name of a dovecote entity (``entity_of`` undone): every ``.`` is a ``/``."""
    return entity.replace(".", "/")


class Incoming(msgspec.Struct):
    """The JSON gc writes on stdin for ``send`` and ``reply`` (Go's ``json.Marshal``: every key present)."""

    sender: str = msgspec.field(default="", name="from")
    subject: str = ""
    body: str = ""


def incoming(data: bytes) -> Incoming:
    """The sender, subject and body gc sent; a ``ValueError`` (msgspec's) saying what is wrong otherwise."""
    return msgspec.json.decode(data, type=Incoming)


def _instant(text: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)  # no zone: UTC, as dovecote reads it


def _uuid7_ms(text: str) -> int | None:
    """The Unix milliseconds of a UUIDv7 written out (``xxxxxxxx-xxxx-7xxx-...``); None for anything else.
    (Read by hand: the ``uuid`` module costs a cold start more than the whole parse.)"""
    digits = text.replace("-", "")
    if len(digits) != 32 or len(text) != 36 or digits[12] != "7":
        return None
    try:
        return int(digits[:12], 16)
    except ValueError:
        return None


def created_at(ts: str, message_id: str | None) -> str | None:
    """The creation time gc wants: RFC 3339, zone ``Z``, to the millisecond.

    A letter's ``ts`` is to the second; the message id dovecote gives every message it
    makes (``msg_<uuid7>``) carries the same moment to the millisecond, so that is used
    when it agrees with ``ts``. A letter with no such id keeps its second (a time is
    never made up); one with no readable time is left without one (gc reads year 1).
    """
    t = _instant(ts) if ts else None
    stamp = _uuid7_ms(message_id[4:]) if message_id and message_id.startswith("msg_") else None
    if stamp is not None:
        exact = datetime.fromtimestamp(stamp / 1000, UTC)
        if t is None or abs((exact - t).total_seconds()) < _SKEW_S:
            return f"{_second(exact)}.{exact.microsecond // 1000:03d}Z"
    return None if t is None else f"{_second(t)}Z"


def _second(t: datetime) -> str:
    """``t`` (UTC) to the second, RFC 3339 without the zone (written out: ``strftime`` costs a list of a
    thousand messages a tenth of a second)."""
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"


def message(p: Piece) -> dict[str, Any]:
    """One message as gc's ``mail.Message``."""
    out: dict[str, Any] = {"id": p.id, "from": gc_name_of(p.sender), "to": gc_name_of(p.recipient),
                           "subject": p.subject, "body": p.body}
    when = created_at(p.ts, p.message_id)
    if when is not None:
        out["created_at"] = when
    out["read"] = p.read
    if p.thread_id:
        out["thread_id"] = p.thread_id
    if p.reply_to:
        out["reply_to"] = p.reply_to
    out["priority"] = PRIORITY.get(p.priority, 2)
    out["cc"] = []
    return out


def sort_key(row: dict[str, Any]) -> tuple[str, str]:
    """gc's order for a list: by creation time, then id."""
    return row.get("created_at", ""), row["id"]


def one(p: Piece) -> str:
    return msgspec.json.encode(message(p)).decode()


def many(pieces: list[Piece]) -> str:
    """A list, oldest first; nothing at all when it is empty."""
    if not pieces:
        return ""
    return msgspec.json.encode(sorted((message(p) for p in pieces), key=sort_key)).decode()


def count(total: int, unread: int) -> str:
    return msgspec.json.encode({"total": total, "unread": unread}).decode()

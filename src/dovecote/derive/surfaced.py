"""What was surfaced to which agent session: the fold of ``surfaced`` letters.

A ``surfaced`` letter sits in the entity's own box and says that a hook showed
the items it names (``items``, letter ids) to one session (``session``). It is
kept apart from ``seen``: being shown an item in a prompt is not reading it,
so ``seen`` stays an explicit act and the lifecycle fold ignores these letters
(``derive.inbox`` plays no part with kinds it does not know). Because the
record is a letter in a ledger, what a session was told survives the deletion
of every cache.

Pure: fed letters, it answers; no file, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dovecote.letters import Letter, is_letter_id

KIND = "surfaced"


def surfaced_letter(entity: str, session: str, hook: str, items: Iterable[str], ts: str) -> dict[str, Any]:
    """The record of one announcement (ids sorted, so a replay of it is the same line)."""
    return {"ts": ts, "agent": entity, "kind": KIND, "session": session, "hook": hook, "items": sorted(set(items))}


def surfaced_to(letters: Iterable[Letter], session: str) -> set[str]:
    """The item ids announced to ``session`` so far.

    Only that session's records are looked into, so a box that has told many
    sessions about many items costs one small parse per record.
    """
    out: set[str] = set()
    for letter in letters:
        if letter.kind != KIND:
            continue
        d = letter.data()
        items = d.get("items")
        if d.get("session") == session and isinstance(items, list):
            out.update(i for i in items if is_letter_id(i))
    return out

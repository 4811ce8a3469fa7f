"""What was surfaced to which agent session: the fold of ``surfaced`` letters.

A ``surfaced`` letter sits in the entity's own box and says that a hook showed
the items it names (``items``, letter ids) to one session (``session``). It is
kept apart from ``seen``: being shown an item in a prompt is not reading it,
so ``seen`` stays an explicit act and the lifecycle fold ignores these letters
(``derive.inbox.book`` keeps them apart, in ``InboxBook.told``, read through
``told_in``, and no item's state depends on them). Because the
record is a letter in a ledger, what a session was told survives the deletion
of every cache.

Pure: fed letters, it answers; no file, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dovecote.model.letters import Letter, is_letter_id

KIND = "surfaced"


def surfaced_letter(entity: str, session: str, hook: str, items: Iterable[str], ts: str) -> dict[str, Any]:
    """The record of one announcement (ids sorted, so a replay of it is the same line)."""
    return {"ts": ts, "agent": entity, "kind": KIND, "session": session, "hook": hook, "items": sorted(set(items))}


def told_in(letter: Letter) -> tuple[str, list[str]] | None:
    """The session a ``surfaced`` letter speaks of and the item ids it names; None for any other letter."""
    if letter.kind != KIND:
        return None
    d = letter.data()
    session, items = d.get("session"), d.get("items")
    if not isinstance(session, str) or not isinstance(items, list):
        return None
    return session, [i for i in items if is_letter_id(i)]


def surfaced_to(letters: Iterable[Letter], session: str) -> set[str]:
    """The item ids announced to ``session`` so far (one small parse per record)."""
    out: set[str] = set()
    for letter in letters:
        told = told_in(letter)
        if told is not None and told[0] == session:
            out.update(told[1])
    return out

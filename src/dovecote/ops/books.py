"""Warm folds of entity boxes, shared by every use case that reads one.

A handle keeps one ``InboxBook`` per entity and feeds it only the letters
appended since the last call; if the ledger was replaced, the book is built
again from scratch. Called under a box lock (inside ``store.guarded``), it sees
exactly what the lock holder sees, which is what makes a transition a
compare-and-swap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dovecote.derive.inbox import InboxBook
from dovecote.errors import Refusal
from dovecote.names import Address, entity

if TYPE_CHECKING:
    from dovecote.context import Context


def entity_address(dc: Context, entity_id: str) -> Address:
    """The box of a registered entity; refuses an unknown one."""
    addr = entity(entity_id)
    if dc.roster.entity(entity_id) is None:
        raise Refusal("unknown_entity", f"no entity {entity_id!r} in the roster (dovecote entity add)")
    return addr


def book_for(dc: Context, entity_id: str) -> InboxBook:
    """The entity's fold, brought up to date with its ledger."""
    addr = entity_address(dc, entity_id)
    read = dc.store.read(addr)
    key = f"inbox:{entity_id}"
    warm = dc.warm.get(key)
    if warm is None or warm[0] != read.generation or warm[1] > len(read.letters):
        book = InboxBook(entity_id)
        count = 0
    else:
        _, count, book = warm
    if count < len(read.letters):
        book.add(read.letters[count:])
    dc.warm[key] = (read.generation, len(read.letters), book)
    return book

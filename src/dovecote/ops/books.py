"""Warm folds of entity boxes, shared by every use case that reads one.

A handle keeps one ``InboxBook`` per entity with the store cursor it has read
to, and feeds it only the letters after that cursor; if the ledger was
replaced, the book is built again from scratch. Called under a box lock, it is
given the ``Guard`` and is fed from what the guard read, which is what makes a
transition a compare-and-swap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dovecote.addresses import Address, entity
from dovecote.derive.inbox import InboxBook
from dovecote.errors import Refusal

if TYPE_CHECKING:
    from dovecote.context import Context
    from dovecote.store import Guard


def entity_address(dc: Context, entity_id: str) -> Address:
    """The box of a registered entity; refuses an unknown one."""
    addr = entity(entity_id)
    if dc.roster.entity(entity_id) is None:
        raise Refusal("unknown_entity", f"no entity {entity_id!r} in the roster (dovecote entity add)")
    return addr


def book_for(dc: Context, entity_id: str, held: Guard | None = None) -> InboxBook:
    """The entity's fold, brought up to date with its ledger (with what ``held``,
    the entity's box under its lock, read there)."""
    addr = entity_address(dc, entity_id)
    key = f"inbox:{entity_id}"
    warm = dc.warm.get(key)
    after = warm[0] if warm is not None else None
    read = held.read(after) if held is not None else dc.store.read(addr, after=after)
    book = warm[1] if warm is not None and not read.fresh else InboxBook(entity_id)
    if read.letters:
        book.add(read.letters)
    dc.warm[key] = (read.cursor, book)
    return book

"""The inbox fold of an entity box, kept warm: the ``InboxBook`` every inbox read and move asks.

One kind of warm fold (``INBOX``) in the handle's registry (``folds.Registry``),
as ``trackbook`` keeps the trackers of the same box: fed the letters after its
position, started from its snapshot in ``cache/folds`` (``foldcache``) when the
handle has no fold of the box yet, and snapshotted again after a read that
changed enough of it.

The inbox fold and its snapshot codec are imported inside ``inbox``, so
importing this module (a search resolves an entity's box with
``entity_address``) never loads them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from dovecote.addresses import Address, entity
from dovecote.errors import Refusal
from dovecote.folds import Kind

if TYPE_CHECKING:
    from dovecote.context import Context
    from dovecote.derive.inbox import InboxBook
    from dovecote.store import Guard

INBOX: Kind[InboxBook] = Kind("inbox")


def entity_address(ctx: Context, entity_id: str) -> Address:
    """The box of a registered entity; refuses an unknown one (``unknown_entity``)."""
    addr = entity(entity_id)
    if ctx.roster.entity(entity_id) is None:
        raise Refusal("unknown_entity", f"no entity {entity_id!r} in the roster (dovecote entity add)")
    return addr


@contextmanager
def inbox(ctx: Context, entity_id: str, held: Guard | None = None) -> Iterator[InboxBook]:
    """The entity's ``InboxBook``, up to date with its ledger (with what ``held``, the
    box under its lock, read there), yielded under the box's fold lock.

    A handle with no fold of the box yet starts from its snapshot in
    ``cache/folds`` when one is usable, reading only the letters after its mark.
    """
    from dovecote import foldcache
    from dovecote.derive.inbox import InboxBook  # here: a context (and a search) never loads the inbox fold

    addr = entity_address(ctx, entity_id)
    with ctx.warm.fed(
        ctx.store, addr, INBOX, lambda: InboxBook(entity_id), InboxBook.add, held,
        lambda: foldcache.load_inbox(ctx, entity_id),
    ) as rec:
        yield rec.fold
        foldcache.after_read(ctx, entity_id, rec)


def book_for(ctx: Context, entity_id: str, held: Guard | None = None) -> InboxBook:
    """``inbox`` for a caller that reads the book once, alone (no other thread feeds this box meanwhile)."""
    with inbox(ctx, entity_id, held) as b:
        return b

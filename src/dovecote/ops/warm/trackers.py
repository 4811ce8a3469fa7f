"""The warm tracker fold of an entity's box (``derive.delivery.trackers.TrackerBook``), fed incrementally.

A handle keeps one fold per box and feeds it only the letters appended since
its cursor, so a mailman loop or a status view reads what is new, never the
whole history again. Under a compare-and-swap the fold is fed from the box as
read under its lock (``held``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from dovecote.derive.delivery.trackers import TrackerBook
from dovecote.model.addresses import entity
from dovecote.ops.warm.registry import Kind

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Guard

TRACKERS: Kind[TrackerBook] = Kind("trackers")


@contextmanager
def book(ctx: Context, entity_id: str, held: Guard | None = None) -> Iterator[TrackerBook]:
    """The entity's tracker fold, up to date with its ledger (or with ``held``), under the box's fold lock."""
    with ctx.warm.fed(ctx.store, entity(entity_id), TRACKERS, lambda: TrackerBook(entity_id), TrackerBook.add,
                      held) as rec:
        yield rec.fold


def book_of(ctx: Context, entity_id: str, held: Guard | None = None) -> TrackerBook:
    """``book`` for a caller that reads it once, alone."""
    with book(ctx, entity_id, held) as b:
        return b

"""The inbox fold of an entity box, kept warm and persisted: the ``InboxBook`` every inbox read
and move asks (``inbox``), and its snapshot in ``cache/folds/<box>.msgpack``.

One kind of warm fold (``INBOX``) in the handle's registry (``folds.Registry``,
which knows folds only by their kind), as ``ops.warm.trackers`` keeps the trackers of
the same box: fed the letters after its position, started from its snapshot
when the handle has no fold of the box yet, and snapshotted again after a read
that changed enough of it. The inbox fold and its codec are imported inside the
functions that use them, so importing this module (a search resolves an
entity's box with ``entity_address``) never loads them.

A cold process loads the snapshot, asks the store for the letters after its
``Mark`` (``Store.tail``: the store checks the mark first, and a failed check
means the whole box, folded from nothing) and answers; it reads only the
bytes appended since the snapshot was written.

A cache like every other (DESIGN 1.1): deletable at any time, written whole
(tmp + rename, through ``Layout.cache_dir``, so never through a symlink, and
read with ``O_NOFOLLOW``), never an authority. A file that does not decode, of
another version, another roster or another entity is ignored. Not fsynced: a
snapshot lost in a crash (or torn: it then fails to decode) costs one full
read, nothing more. ``verify`` answers every inbox from the snapshots, then
from nothing, and requires the same bytes.

When to write (cheaply, never on a read that changed nothing): after a read
that folded the box from nothing, after one that rebuilt the view whole (a new
tic or thresholds: the snapshot's rows would be stale), and once the letters
folded since the last write, or the rows placed again because their own moment
to change came (``ViewState.replaced``: a read with no tic, whose ages in
hours tick over), reach ``REWRITE_AFTER`` (until then a cold process simply
reads that short tail again, and places those few rows again). A view read
with no tic is patched row by row (``inbox_view.current_view``), so it is worth
a file however soon its first row changes: the next cold process places again
only the rows whose moment came, where it once rebuilt all ten thousand.

A book folded from nothing is replaced, in the handle, by the snapshot just
written, decoded: the same state (a cold process starts from exactly that),
laid out together in memory. The folded book's rows and their strings lie
scattered among the letters and links the fold made, and every read copies
each row (results are snapshots): on a box of 10,000 messages a warm read was
16.4 ms plus 11.1 ms of JSON from the folded book, 10.7 plus 4.8 ms from the
decoded one, for one decode of the snapshot (tens of ms) on the first read.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec

from dovecote.errors import Refusal, StoreError
from dovecote.model.addresses import Address, entity
from dovecote.ops.warm.registry import Kind
from dovecote.store.core import Mark
from dovecote.util import fileops
from dovecote.util.osutil import collector_paused

if TYPE_CHECKING:
    from pathlib import Path

    from dovecote.derive.inbox.book import InboxBook
    from dovecote.ops.context import Context
    from dovecote.ops.warm.registry import Fed
    from dovecote.store.core import Guard

#: 2: the book keeps the box's cursor; 3: items packed inline, rows with their lines; 4: as msgpack bins;
#: 5: tasks and responses are items; 6: the folded ids packed (``inbox.pack_ids``);
#: 7: the alias map unpacked on first use; 8: the view's rows each with their own moment
#: to change, and what hooks told each session
VERSION = 8
FOLDER = "folds"
#: Letters folded past the snapshot's mark (or rows of its view placed again) before a read writes it again.
REWRITE_AFTER = 256


INBOX: Kind[InboxBook] = Kind("inbox")


def entity_address(ctx: Context, entity_id: str) -> Address:
    """The box of a registered entity; refuses an unknown one (``unknown_entity``)."""
    addr = entity(entity_id)
    if ctx.roster.entity(entity_id) is None:
        raise Refusal("unknown_entity", f"no entity {entity_id!r} in the roster (dovecote entity add)")
    return addr


@contextlib.contextmanager
def inbox(ctx: Context, entity_id: str, held: Guard | None = None) -> Iterator[InboxBook]:
    """The entity's ``InboxBook``, up to date with its ledger (with what ``held``, the
    box under its lock, read there), yielded under the box's fold lock.

    A handle with no fold of the box yet starts from its snapshot in
    ``cache/folds`` when one is usable, reading only the letters after its mark.
    """
    from dovecote.derive.inbox.book import InboxBook  # here: a context (and a search) never loads the inbox fold

    addr = entity_address(ctx, entity_id)
    with ctx.warm.fed(
        ctx.store, addr, INBOX, lambda: InboxBook(entity_id), InboxBook.add, held, lambda: load_inbox(ctx, entity_id)
    ) as rec:
        yield rec.fold
        after_read(ctx, entity_id, rec)


def book_for(ctx: Context, entity_id: str, held: Guard | None = None) -> InboxBook:
    """``inbox`` for a caller that reads the book once, alone (no other thread feeds this box meanwhile)."""
    with inbox(ctx, entity_id, held) as b:
        return b


# -- the snapshot -------------------------------------------------------------------

class Head(msgspec.Struct, array_like=True):
    version: int
    roster: str
    entity: str
    mark: Mark
    view_key: str  # which view the snapshot's rows are for ("": none)


_encode = msgspec.msgpack.Encoder().encode
_decode_head = msgspec.msgpack.Decoder(Head).decode


def path_of(ctx: Context, entity_id: str, *, create: bool) -> Path:
    return ctx.layout.cache_dir(FOLDER, create=create) / f"entity:{entity_id}.msgpack"


def _view_key(book: InboxBook) -> str:
    vs = book.view_state
    return "" if vs is None else repr((vs.key, vs.since))  # which whole build: patches keep it


def dumps(ctx: Context, book: InboxBook, mark: Mark) -> bytes:
    from dovecote.derive.inbox import snapshot as inbox_snapshot

    head = _encode(Head(VERSION, ctx.roster.signature, book.entity, mark, _view_key(book)))
    return len(head).to_bytes(4, "little") + head + inbox_snapshot.dumps(book)


def _split(data: bytes) -> tuple[Head, memoryview]:
    view = memoryview(data)  # slices of a view copy nothing
    size = int.from_bytes(view[:4], "little")
    return _decode_head(view[4 : 4 + size]), view[4 + size :]


def _book(head: Head, body: memoryview) -> InboxBook:
    from dovecote.derive.inbox import snapshot as inbox_snapshot

    with collector_paused():  # tens of thousands of objects, none of them cyclic garbage
        book = inbox_snapshot.loads(body)
    book.saved_view = head.view_key
    return book


def load_inbox(ctx: Context, entity_id: str) -> tuple[InboxBook, Mark] | None:
    """The entity's book and mark from its snapshot, or None (absent, garbage, stale)."""
    try:
        path = path_of(ctx, entity_id, create=False)
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
            head, body = _split(f.read())
        if head.version != VERSION or head.roster != ctx.roster.signature or head.entity != entity_id:
            return None
        book = _book(head, body)
    except (OSError, StoreError, msgspec.DecodeError, ValueError, TypeError, KeyError):
        return None
    if book.entity != entity_id:
        return None
    return book, head.mark


def save(ctx: Context, book: InboxBook, mark: Mark) -> bytes | None:
    """Write the snapshot whole, and return it; a cache that cannot be written is simply not written (None)."""
    data = dumps(ctx, book, mark)
    with contextlib.suppress(OSError, StoreError):
        fileops.replace_cache(path_of(ctx, book.entity, create=True), data)
        book.saved_view = _view_key(book)
        return data
    return None


def after_read(ctx: Context, entity_id: str, rec: Fed[InboxBook]) -> None:
    """Snapshot the book if this read changed enough of it (see the module docstring)."""
    if rec.mark is None or not persistable(ctx, rec.mark):
        return
    book = rec.fold
    vs = book.view_state
    rebuilt = vs is not None and _view_key(book) != book.saved_view
    drifted = vs is not None and vs.replaced >= REWRITE_AFTER
    if rec.since_saved < 0 or rec.since_saved >= REWRITE_AFTER or rebuilt or drifted:
        data = save(ctx, book, rec.mark)
        if rec.since_saved < 0 and data is not None:
            rec.fold = _book(*_split(data))  # see the module docstring: a book folded from nothing
        rec.since_saved = 0
        if vs is not None:
            vs.replaced = 0


def persistable(ctx: Context, mark: Mark) -> bool:
    """A mark only a store in this process can trust (a memory store's) is not worth a file."""
    return not mark.origin.startswith("memory:")

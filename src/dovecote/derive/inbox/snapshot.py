"""An ``InboxBook`` as bytes and back: the state a cold process resumes from.

Pure (no files): ``dumps(book)`` and ``loads(data)``, with the law that a book
restored from its bytes and fed the letters after them answers exactly what a
book fed every letter answers (tests fold random letters both ways, split at
random points). msgpack through msgspec, for speed:

* each item is packed on its own (its letter's line, its links, its replay:
  ``inbox_item.pack_item``, the item's own codec)
  and wrapped in a msgpack ``bin``, unpacked only when a new letter or a
  question touches it, so restoring ten thousand items costs ten thousand
  short byte slices that the decoder steps over by their length (never
  through their contents), not ten thousand decoded envelopes; an item never
  unpacked is written back as the same bytes;
* the last view (``ViewState``) is kept whole, each row packed on its own
  in a ``bin`` the same way (decoded when a face asks for it) beside its injection lines, so a read at
  the same tic and thresholds redoes only the items new letters touched, and
  the injection block reads no row at all.

``loads`` raises ``msgspec.DecodeError`` (or ``ValueError``/``TypeError``) for
bytes that are not a snapshot; the caller ignores such a file.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from dovecote.derive.inbox.book import Draft, InboxBook, SentRecord, pack_ids
from dovecote.derive.inbox.item import Item, letter_of, link_tuple, pack_item, wrap
from dovecote.derive.inbox.state import Lines, Order, ViewState
from dovecote.derive.lifecycle import Link
from dovecote.model.envelope import Envelope
from dovecote.roster.config import Limits

#: 7: the view keeps each row's own moment to change and when a row was last placed, and the book
#: what each session was told;
#: 6: the alias map read when first used; 5: the folded ids packed in one bytes;
#: 4: items and rows wrapped in bins (3: embedded, so every decode walked them)
VERSION = 7

class View(msgspec.Struct, array_like=True):
    tic: int | None
    limits: list[int]
    include_terminal: bool
    since: datetime
    placed: datetime
    until: datetime | None
    untils: dict[str, datetime]
    buckets: dict[str, str]
    rows: list[tuple[str, Order, msgspec.Raw, Lines]]  # in view order; each row packed, read when first asked
    counts: dict[str, int]
    flags: dict[str, int]
    ordered: bool


class Book(msgspec.Struct, array_like=True):
    entity: str
    items: dict[str, Item]  # each ``[id, packed]``: built in C, ``packed`` sliced, not copied; unpacked on first use
    alias: msgspec.Raw  # a map, decoded only when a read needs it (``InboxBook.alias``)
    drafts: list[bytes]
    sent: list[tuple[str, str | None, str | None, str | None, str | None, str | None]]
    replies: dict[str, list[str]]
    orphans: dict[str, list[list[Any]]]
    told: dict[str, list[str]]
    folded: bytes  # every letter id folded, ``pack_ids``: one bytes to read, not 40,000 strings in a set
    odd_ids: list[str]  # folded ids that are not letter ids (none, from any store)
    touched: list[str]
    view: View | None
    count: int
    last: str | None


_encode = msgspec.msgpack.Encoder().encode
_decode_book = msgspec.msgpack.Decoder(Book).decode
_decode_alias = msgspec.msgpack.Decoder(dict[str, str]).decode
_LIMITS = list(Limits.__struct_fields__)


def _raw(row: dict[str, Any] | msgspec.Raw) -> msgspec.Raw:
    """A row packed on its own (a row never read since its restore is written back as it was)."""
    return row if isinstance(row, msgspec.Raw) else wrap(_encode(row))


def _view(vs: ViewState) -> View:
    tic, limits, include_terminal = vs.key
    rows = sorted(((iid, order, _raw(row), lines) for iid, (order, row, lines) in vs.rows.items()),
                  key=lambda t: t[1])
    return View(tic, [getattr(limits, n) for n in _LIMITS], include_terminal, vs.since, vs.placed, vs.until,
                vs.untils, vs.buckets, rows, vs.counts, vs.flags, vs.ordered is not None)


def dumps(book: InboxBook) -> bytes:
    """The book's whole state (see the module docstring)."""
    folded, odd = pack_ids(book.ids | book.other_ids, book.folded_before)
    snap = Book(
        book.entity,
        {iid: Item(iid, pack_item(item)) for iid, item in book.items.items()},
        msgspec.Raw(_encode(book.alias)),
        [d.letter.raw for d in book.drafts.values()],
        [(s.id, s.message, s.draft, s.to, s.reply_to, s.ts) for s in book.sent],
        book.replies,
        {ref: [list(link_tuple(lk)) for lk in links] for ref, links in book._orphans.items()},
        {session: sorted(ids) for session, ids in book.told.items()},
        folded,
        odd,
        sorted(book.touched),
        None if book.view_state is None else _view(book.view_state),
        book.count,
        book.last,
    )
    return _encode(snap)


def loads(data: bytes | memoryview) -> InboxBook:
    """Inverse of ``dumps``: items stay packed until first used."""
    snap = _decode_book(data)
    book = InboxBook(snap.entity)
    book.items = snap.items
    alias = snap.alias
    book.restore_alias(lambda: _decode_alias(alias))
    for raw in snap.drafts:
        lt = letter_of(raw)
        book.drafts[lt.id] = Draft(lt.id, lt, Envelope(lt.data()))
    book.sent = [SentRecord(*s) for s in snap.sent]
    for rec in book.sent:
        if rec.draft:
            book.delivered.setdefault(rec.draft, rec)
    book.replies = snap.replies
    book._orphans = {ref: [Link(*t) for t in links] for ref, links in snap.orphans.items()}
    book.told = {session: set(ids) for session, ids in snap.told.items()}
    book.folded_before = snap.folded
    book.ids = set(snap.odd_ids)
    book.touched = set(snap.touched)
    book.count, book.last = snap.count, snap.last
    v = snap.view
    if v is not None:
        limits = Limits(**dict(zip(_LIMITS, v.limits, strict=True)))
        vs = ViewState((v.tic, limits, v.include_terminal), v.since, v.placed, v.until, v.buckets,
                       {iid: (order, row, lines) for iid, order, row, lines in v.rows}, v.counts, v.flags,
                       untils=v.untils)
        if v.ordered:
            vs.ordered = [iid for iid, _, _, _ in v.rows]
        book.view_state = vs
    return book

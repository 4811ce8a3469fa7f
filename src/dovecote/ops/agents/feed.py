"""The letter feed: every new letter in every box, from a cursor that outlives the process.

Law: a feed position is a **count vector**, how many letters of each box
(and of the spool) the reader has been given. Ledgers only grow and keep their
order (DESIGN 1.3), so "the first n letters of box b" names the same letters
in every process, today and after a restart; a reader that resumes from a
vector is given exactly the letters after it, none missed, none twice. The
vector is written as an opaque token (``encode_cursor``), which the server
uses as the SSE event id, so ``Last-Event-ID`` resumes.

Between polls a ``Watch`` keeps one store cursor per box, so a poll reads only
what was appended since (through the handle's warm readers: a size check when
nothing is new), never a whole ledger again. A watch with no cursor for a box
yet (its first poll after a resume) takes the box from the warm reader, which
read the file once for the whole process, and skips the letters it counted.

For entity mail each event also carries the item's state, read from the warm
inbox fold after the poll: the state now, which is the state after that
letter unless a later letter in the same poll moved it again.

A watch may be narrowed to one entity's box (``only``: an agent's stream,
which the one authorization rule keeps to its own box); it then watches that
box alone, and its cursor keeps that box's count alone, whatever the cursor it
resumed from named. A cursor is checked against the boxes before a watch
starts from it: a count past a box's end (or past 2^53, the largest a JSON
reader keeps exact) was never written by this feed, so it is ``invalid_field``.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

import msgspec

from dovecote.derive.inbox.book import Clock
from dovecote.derive.lifecycle import LINK_KINDS, effective
from dovecote.errors import Refusal
from dovecote.model.addresses import HOME, SPOOL, Address, entity, project
from dovecote.model.results import Result
from dovecote.model.vocab_delivery import DELIVERY_KINDS
from dovecote.ops.reports.tics import current_tic
from dovecote.ops.warm.inbox import book_for

if TYPE_CHECKING:
    from dovecote.model.letters import Letter
    from dovecote.ops.context import Context
    from dovecote.store.core import Cursor, Where

#: The largest count a cursor may hold: 2^53, past which a JavaScript reader of the event id loses digits.
MAX_COUNT = 2**53
#: A cursor token is short text; anything longer is not one this feed wrote.
MAX_CURSOR = 64 * 1024

_counts = msgspec.json.Decoder(dict[str, int])


def encode_cursor(counts: dict[str, int]) -> str:
    """The token for a count vector: url-safe base64 of its JSON, zero counts left out."""
    doc = msgspec.json.encode({k: v for k, v in sorted(counts.items()) if v})
    return base64.urlsafe_b64encode(doc).decode().rstrip("=")


def decode_cursor(token: str) -> dict[str, int]:
    """The count vector of a token; refuses ``invalid_field`` for anything ``encode_cursor`` did not write."""
    try:
        if len(token) > MAX_CURSOR:
            raise ValueError("too long")
        counts = _counts.decode(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (ValueError, binascii.Error, msgspec.DecodeError, msgspec.ValidationError) as e:
        raise Refusal("invalid_field", f"the event cursor {token[:40]!r} is not one this server wrote") from e
    if any(v < 0 or v > MAX_COUNT for v in counts.values()):
        raise Refusal("invalid_field", f"an event cursor holds counts from 0 to 2^53 ({MAX_COUNT})")
    return counts


class Watch(msgspec.Struct):
    """One reader's place in the feed: letters given per box, where each box's last read stopped, and the
    entity whose box alone it watches (None: every box)."""

    counts: dict[str, int]
    cursors: dict[str, Cursor] = msgspec.field(default_factory=dict)
    only: str | None = None

    @property
    def cursor(self) -> str:
        return encode_cursor(self.counts)


def sources(ctx: Context, only: str | None = None) -> list[tuple[str, Where]]:
    """Every box the feed watches, by label: the spool, home, each reachable project, each entity; or
    (``only``) that entity's box alone, if the roster has it."""
    if only is not None:
        boxes: list[Address] = [entity(e.id) for e in ctx.roster.entities if e.id == only]
        return [(str(a), a) for a in boxes if ctx.store.reachable(a)]
    boxes = [HOME, *(project(p.name) for p in ctx.roster.projects)]
    boxes += [entity(e.id) for e in ctx.roster.entities]
    out: list[tuple[str, Where]] = [(SPOOL, SPOOL)]
    return out + [(str(a), a) for a in boxes if ctx.store.reachable(a)]


def start(ctx: Context, cursor: str | None, only: str | None = None) -> Watch:
    """A watch at ``cursor`` (a token), or at the end of every box now (only later letters are new); ``only``
    narrows it to one entity's box. A count past its box's end is ``invalid_field`` (see the module docstring)."""
    if cursor is not None:
        counts = decode_cursor(cursor)
        watched = sources(ctx, only)
        for label, where in watched:
            held = len(ctx.store.read(where).letters)  # the warm reader's: the first poll reads it again for free
            if counts.get(label, 0) > held:
                raise Refusal("invalid_field", f"the event cursor counts {counts[label]} letters in {label}, "
                                               f"which holds {held}: not a cursor this server wrote")
        if only is not None:  # an agent's cursor carries its own box's count alone
            counts = {label: counts[label] for label, _ in watched if label in counts}
        return Watch(counts, only=only)
    w = Watch({}, only=only)
    for label, where in sources(ctx, only):
        read = ctx.store.read(where)
        w.counts[label], w.cursors[label] = len(read.letters), read.cursor
    return w


def _new(ctx: Context, w: Watch, label: str, where: Where) -> list[Letter]:
    """The letters of one box past the watch's count, advancing its cursor."""
    cursor = w.cursors.get(label)
    read = ctx.store.read(where, after=cursor)
    w.cursors[label] = read.cursor
    if cursor is None or read.fresh:  # the whole box: skip what the reader was given
        return list(read.letters[w.counts.get(label, 0):])
    return list(read.letters)


def _kind(letter: Letter) -> str:
    if letter.kind:
        return letter.kind
    return "receipt" if letter.is_receipt else "report"


class Event(Result, frozen=True):
    """One letter appended to a box: ``id`` is the cursor after it (the SSE event id); a letter of entity mail
    that is or moves an item also names the item and its state now."""

    id: str
    letter: str
    box: str
    kind: str
    agent: str | None
    ts: str | None
    item: str | msgspec.UnsetType = msgspec.UNSET
    state: str | msgspec.UnsetType = msgspec.UNSET


def _states(ctx: Context, entity_id: str, letters: list[Letter]) -> dict[str, tuple[str, str]]:
    """For each letter of an entity box that is or moves an item: that item's id and state now."""
    book = book_for(ctx, entity_id)
    tic, _ = current_tic(ctx, None)
    clock = Clock(tic, ctx.now())
    out: dict[str, tuple[str, str]] = {}
    for letter in letters:
        target = letter.id if letter.kind in DELIVERY_KINDS else letter.ref if letter.kind in LINK_KINDS else None
        item = book.items.get(target) if target else None
        if item is not None:
            out[letter.id] = (item.id, effective(book.replay_of(item), clock.tic, clock.now).value)
    return out


def poll(ctx: Context, w: Watch) -> list[Event]:
    """Every letter appended since the watch's place, oldest first per box; advances the watch."""
    events: list[Event] = []
    for label, where in sources(ctx, w.only):
        letters = _new(ctx, w, label, where)
        if not letters:
            continue
        states = _states(ctx, where.name, letters) if isinstance(where, Address) and where.kind == "entity" else {}
        for letter in letters:
            w.counts[label] = w.counts.get(label, 0) + 1
            item, state = states.get(letter.id, (msgspec.UNSET, msgspec.UNSET))
            events.append(Event(w.cursor, letter.id, label, _kind(letter), letter.agent, letter.ts, item, state))
    return events

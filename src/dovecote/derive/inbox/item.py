"""One inbound item of an entity box: its message and its replayed lifecycle, and its codec.

Pure. An item either holds its state (letter, links, replay) or, restored from
a fold snapshot (``inbox_snapshot``), holds it packed until first used. The item
owns how it is packed (``pack_item``) and unpacked (``unpack_item``): the
snapshot of the whole book packs each item with these, and an item unpacks
itself with them, so this module imports none of the book's.
"""

from __future__ import annotations

from operator import attrgetter

import msgspec

from dovecote.derive.lifecycle import Link, Replay, State, replay
from dovecote.model.envelope import Envelope
from dovecote.model.letters import Letter, decode_line


def initial(defer_until_tic: int | None) -> tuple[State, int | None]:
    """An item's state before any link, and its due tic: DEFER to the message's
    ``defer_until_tic`` when it names one, else WAIT (the search index asks this too)."""
    return (State.DEFER, defer_until_tic) if defer_until_tic is not None else (State.WAIT, None)


#: The ``packed`` of an item whose state is unpacked.
UNPACKED = msgspec.Raw(b"")


class Item(msgspec.Struct, array_like=True):
    """An inbound message and its replayed lifecycle.

    An item restored from a fold snapshot holds its state packed (``packed``:
    msgspec builds ten thousand of these in C) and unpacks it on first use, so a
    cold read pays only for the items new letters touch; ``env`` is decoded
    from the letter on first use.
    """

    id: str
    #: the item's msgpack wrapped in a msgpack ``bin``, a zero-copy slice of the snapshot
    #: (decoding the snapshot steps over it by its length); empty: unpacked
    packed: msgspec.Raw = UNPACKED
    letter_: Letter | None = None
    env_: Envelope | None = None
    links_: list[Link] | None = None  # None, not []: a default list is copied into each of 10k items
    r_: Replay | None = None

    def _unpack(self) -> None:
        self.letter_, self.links_, self.r_ = unpack_item(self.packed)
        self.packed = UNPACKED

    @property
    def letter(self) -> Letter:
        if self.packed:
            self._unpack()
        assert self.letter_ is not None
        return self.letter_

    @property
    def env(self) -> Envelope:
        if self.env_ is None:
            self.env_ = Envelope(self.letter.data())
        return self.env_

    @property
    def links(self) -> list[Link]:
        if self.packed:
            self._unpack()
        if self.links_ is None:
            self.links_ = []
        return self.links_

    @property
    def r(self) -> Replay | None:
        if self.packed:
            self._unpack()
        return self.r_

    @r.setter
    def r(self, value: Replay | None) -> None:
        if self.packed:
            self._unpack()
        self.r_ = value

    def initial(self) -> tuple[State, int | None]:
        return initial(self.env.defer_until_tic)

    def recompute(self) -> Replay:
        state, due = self.initial()
        self.r = replay(
            self.id, state, self.links, entered_ts=self.env.created_at, entered_tic=self.env.source_tic, due_tic=due
        )
        return self.r


# -- the codec: an item as msgpack, wrapped in a ``bin`` ---------------------------

_encode = msgspec.msgpack.Encoder().encode
_decode_any = msgspec.msgpack.Decoder().decode
_decode_bin = msgspec.msgpack.Decoder(bytes).decode
#: A link as the tuple of its fields, in C (every field is a string, a number or None).
link_tuple = attrgetter(*Link.__struct_fields__)


def wrap(packed: bytes) -> msgspec.Raw:
    """``packed`` as one msgpack ``bin``: a decoder skips it by its length."""
    return msgspec.Raw(_encode(packed))


def unwrap(data: msgspec.Raw) -> bytes:
    """The bytes ``wrap`` wrapped."""
    return _decode_bin(data)


def letter_of(raw: bytes) -> Letter:
    """The letter of a packed line; raises ``ValueError`` for bytes that are not a JSON object."""
    letter = decode_line(raw)
    if letter is None:
        raise ValueError("a packed letter is not a JSON object")
    return letter


def pack_item(item: Item) -> msgspec.Raw:
    """One item's letter, links and replay (links by id inside the replay)."""
    if item.packed:
        return item.packed
    r = item.r
    replay = None if r is None else [
        str(r.state), r.head, r.seen, r.entered_ts, r.entered_tic, r.due_tic, r.due_time,
        [lk.id for lk in r.applied], [[lk.id, why] for lk, why in r.conflicts],
    ]
    return wrap(_encode([item.letter.raw, [link_tuple(lk) for lk in item.links], replay]))


def unpack_item(data: msgspec.Raw) -> tuple[Letter, list[Link], Replay | None]:
    """Inverse of ``pack_item``."""
    raw, links_t, rep = _decode_any(unwrap(data))
    links = [Link(*t) for t in links_t]
    if rep is None:
        return letter_of(raw), links, None
    by_id = {lk.id: lk for lk in links}
    state, head, seen, entered_ts, entered_tic, due_tic, due_time, applied, conflicts = rep
    r = Replay(State(state), head, seen, entered_ts, entered_tic, due_tic, due_time,
               [by_id[i] for i in applied], [(by_id[i], why) for i, why in conflicts])
    return letter_of(raw), links, r

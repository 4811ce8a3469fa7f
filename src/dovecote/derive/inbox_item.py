"""One inbound item of an entity box: its message and its replayed lifecycle.

Pure. An item either holds its state (letter, links, replay) or, restored from
a fold snapshot (``inbox_snapshot``), holds it packed until first used.
"""

from __future__ import annotations

import msgspec

from dovecote.derive.lifecycle import Link, Replay, State, replay
from dovecote.envelope import Envelope
from dovecote.letters import Letter


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
        from dovecote.derive.inbox_snapshot import unpack_item

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



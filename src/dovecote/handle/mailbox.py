"""Mailboxes as a plain mail client sees them: letters to an owner, read or not, open or archived.

A client such as Gas City's mail (``dovecote.gc``) knows a message by its id alone and
an owner by a bare name, and asks for flat answers: the messages to an owner, whether
each was read, whether it is still open. This module answers those from the same
entity-box fold every other face reads (``ops.warm.inbox``), and makes each change
with the lifecycle's own guarded moves (``ops.mail.transitions``), so nothing here
is a second implementation of mail:

* *read* is the item's read mark: a ``seen`` link sets it, an ``unseen`` link clears it;
* *open* is every state but the terminal ones (DONE, NACK); *archiving* an open item is
  ``seen`` (when unread) then ``nack`` from WAIT, ``complete`` from ACTIVE, ``undefer``
  then ``nack`` from DEFER: one final link, so of two archivers of one item exactly one
  succeeds and the other is refused, and the item stays in its ledger, found by id.

Owners join the roster on first mention through its locked edit (``adopt``), so many
processes naming new owners at once lose none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from dovecote.derive.lifecycle import TERMINAL, State, effective
from dovecote.errors import Refusal
from dovecote.model.addresses import check_name
from dovecote.model.vocab import LetterKind
from dovecote.ops.mail.transitions import transition
from dovecote.ops.warm import inbox as foldcache

if TYPE_CHECKING:
    from dovecote.derive.inbox.book import InboxBook, Item
    from dovecote.handle.api import Dovecote

#: The reason an archiving ``nack`` carries, so a reader of the box sees why it closed.
ARCHIVED = "archived by its reader (mail archive)"


class Piece(msgspec.Struct, frozen=True):
    """One message as a plain mail client sees it: who wrote it to whom, what it says, when,
    its thread and what it answers, its priority, whether it was read and whether it is still open."""

    id: str
    sender: str
    recipient: str
    subject: str
    body: str
    ts: str
    message_id: str | None
    thread_id: str | None
    reply_to: str | None
    priority: str
    read: bool
    open: bool


def _piece(dc: Dovecote, book: InboxBook, item: Item) -> Piece:
    r = book.replay_of(item)
    env = item.env
    state = effective(r, None, dc.context.now())
    return Piece(item.id, env.sender or "", env.recipient or book.entity, env.subject, env.body,
                 env.created_at or "", env.message_id, env.thread_id, env.reply_to, env.priority, r.seen,
                 state not in TERMINAL)


def owner_name(name: str) -> str:
    """``name`` if dovecote can hold it as a mailbox owner; refused ``invalid_name`` otherwise."""
    return check_name(name, "mailbox owner")


def adopt(dc: Dovecote, names: list[str]) -> None:
    """Register every name of ``names`` the roster lacks, in one locked edit of the roster as it is on
    disk then (another process's additions meanwhile are kept, and a name it added is not added twice)."""
    from dovecote.roster import edit as roster_edit
    from dovecote.roster import members
    from dovecote.roster.config import Entity, Roster

    wanted = [owner_name(n) for n in dict.fromkeys(names)]
    dc.refresh()
    if all(dc.roster.entity(n) is not None for n in wanted):
        return

    def change(r: Roster, doc: Any) -> Roster:
        for name in wanted:
            if r.entity(name) is None:
                r = members.with_entity(r, Entity(name, None))
                roster_edit.append_table(doc, "entities", roster_edit.entity_fields(Entity(name, None)))
        return r

    dc._edit_roster(change)


def pieces(dc: Dovecote, owner: str, *, open_only: bool = False, unread_only: bool = False) -> list[Piece]:
    """The messages in ``owner``'s box (only the open ones, only the unread ones, or all), in ledger order; none
    for a name the roster lacks. An item left out is never decoded: its read mark and state come from its replay."""
    if dc.roster.entity(owner_name(owner)) is None:
        return []
    now = dc.context.now()
    with foldcache.inbox(dc.context, owner) as book:
        out = []
        for item in book.items.values():
            r = book.replay_of(item)
            if (unread_only and r.seen) or (open_only and effective(r, None, now) in TERMINAL):
                continue
            out.append(_piece(dc, book, item))
        return out


def counts(dc: Dovecote, owner: str) -> tuple[int, int]:
    """How many messages in ``owner``'s box are open, and how many of those unread (none for an unknown name)."""
    if dc.roster.entity(owner_name(owner)) is None:
        return 0, 0
    now = dc.context.now()
    total = unread = 0
    with foldcache.inbox(dc.context, owner) as book:
        for item in book.items.values():
            r = book.replay_of(item)
            if effective(r, None, now) not in TERMINAL:
                total += 1
                unread += not r.seen
    return total, unread


def owners(dc: Dovecote) -> list[str]:
    """Every mailbox owner the roster names."""
    return [e.id for e in dc.roster.entities]


def find(dc: Dovecote, ref: str, first: str | None = None) -> Piece:
    """The message whose letter id (or message id) is ``ref``, in whichever box holds it (``first``'s is
    looked in first); refused ``unknown_letter`` when no box does."""
    order = owners(dc)
    if first is not None and first in order:
        order.remove(first)
        order.insert(0, first)
    for owner in order:
        with foldcache.inbox(dc.context, owner) as book:
            lid = ref if ref in book.items else book.alias.get(ref)
            if lid is not None and lid in book.items:
                return _piece(dc, book, book.items[lid])
    raise Refusal("unknown_letter", f"no message {ref!r} in any mailbox")


def _state(dc: Dovecote, owner: str, lid: str) -> tuple[State, bool]:
    with foldcache.inbox(dc.context, owner) as book:
        r = book.replay_of(book.items[lid])
        return effective(r, None, dc.context.now()), r.seen


def mark(dc: Dovecote, piece: Piece, read: bool) -> Piece:
    """Set the read mark of an open message (a ``seen`` or ``unseen`` link; none when it is set so already).

    An archived message is always read (archiving needs it); making one unread is refused ``illegal_transition``.
    """
    state, seen = _state(dc, piece.recipient, piece.id)
    if state in TERMINAL:
        if read:
            return piece
        raise Refusal("illegal_transition", f"message {piece.id} is archived ({state}); it stays read")
    if seen != read:
        kind = LetterKind.seen if read else LetterKind.unseen
        transition(dc.context, piece.recipient, piece.id, kind.value)
    return msgspec.structs.replace(piece, read=read)


def close(dc: Dovecote, piece: Piece) -> Piece:
    """Archive an open message (see the module docstring); one already closed is refused ``illegal_transition``
    with ``already archived`` in its words, also when another process closed it a moment before."""
    state, seen = _state(dc, piece.recipient, piece.id)
    if state not in TERMINAL:
        try:  # the seen too: another process may close it between the read above and any letter here
            if not seen:
                transition(dc.context, piece.recipient, piece.id, LetterKind.seen.value)
            if state is State.DEFER:
                transition(dc.context, piece.recipient, piece.id, LetterKind.undefer.value, reason=ARCHIVED)
                state = State.WAIT
            final = LetterKind.complete if state is State.ACTIVE else LetterKind.nack
            transition(dc.context, piece.recipient, piece.id, final.value, reason=ARCHIVED)
            return msgspec.structs.replace(piece, read=True, open=False)
        except Refusal as e:
            if e.reason not in ("illegal_transition", "already_claimed"):
                raise
            state, _ = _state(dc, piece.recipient, piece.id)
            if state not in TERMINAL:
                raise
    raise Refusal("illegal_transition", f"message {piece.id} is already archived ({state})")


def thread(dc: Dovecote, thread_id: str) -> list[Piece]:
    """Every message of the thread ``thread_id``, open or archived, in every box."""
    found: list[Piece] = []
    for owner in owners(dc):
        found += [p for p in pieces(dc, owner) if p.thread_id == thread_id]
    return found

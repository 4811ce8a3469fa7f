"""Each Gas City mail operation as one call into the handle.

The rules of mail (what is unread, what archiving writes, who a reply goes to) live in
``handle.mailbox`` and below it; this module turns gc's argument and stdin into that
call and the answer into gc's JSON (``wire``). The semantics are gc's own, as its
conformance suite and its bead-backed provider define them: ``inbox`` is open unread mail
to the owner, ``check`` the same without side effects, ``all`` open mail read or not,
``get`` changes nothing and finds archived mail too, ``read`` marks read, ``archive`` and
``delete`` close a message and keep it, ``reply`` goes to the original's sender in its
thread, ``thread`` lists a thread oldest first, ``count`` counts open and open unread mail.
An owner named for the first time joins the roster when mail is sent to or by it; a
reading of a name never seen answers empty.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from dovecote.errors import Refusal
from dovecote.gc import wire
from dovecote.handle import mailbox
from dovecote.handle.api import Actor, Dovecote
from dovecote.verbs import Message

Reader = Callable[[], bytes]


def _owners(dc: Dovecote, name: str) -> list[str]:
    """Whose boxes a listing reads: the one named, or every owner for gc's empty name ("no filter")."""
    return mailbox.owners(dc) if name == "" else [wire.entity_of(name)]


def _listing(dc: Dovecote, name: str, *, unread_only: bool = False) -> list[mailbox.Piece]:
    return [p for who in _owners(dc, name) for p in mailbox.pieces(dc, who, open_only=True, unread_only=unread_only)]


#: How much of a body's first line stands in for a subject gc left empty (gc's bead store does the same).
SUBJECT_FROM_BODY = 80


def subject_of(given: wire.Incoming) -> str:
    """The subject: the one given, else the body's first line (at most ``SUBJECT_FROM_BODY`` characters), as gc's
    own store makes one; a message with neither is refused by the send (``missing_field``)."""
    if given.subject:
        return given.subject
    lines = given.body.strip().splitlines()
    return lines[0].strip()[:SUBJECT_FROM_BODY] if lines else ""


def _deliver(dc: Dovecote, to: str, given: wire.Incoming, original: mailbox.Piece | None) -> mailbox.Piece:
    """Send ``given`` to ``to`` (as a reply to ``original``), the sender and recipient adopted first."""
    sender = wire.entity_of(given.sender) if given.sender else "human"
    mailbox.adopt(dc, [sender, to])
    # the reply link names an item in the replier's own box: a reply by the original's recipient carries it;
    # anyone else's reply joins the thread without it (the letter claims nothing it cannot show)
    linked = original is not None and original.recipient == sender
    m = Message(
        recipient=to, subject=subject_of(given), body=given.body, sender=sender,
        reply_to=original.id if original is not None and linked else None,
        thread_id=original.thread_id if original is not None and not linked else None,
    )
    sent = dc.send(m)
    return mailbox.find(dc, sent.id, first=to)


def _thread(dc: Dovecote, arg: str) -> list[mailbox.Piece]:
    """The thread ``arg`` names; later gc may name it by one of its messages' ids, so an id that names no
    thread but a message is read as that message's thread (an id naming neither: an empty thread)."""
    found = mailbox.thread(dc, arg)
    if found:
        return found
    try:
        piece = mailbox.find(dc, arg)
    except Refusal:
        return []
    return mailbox.thread(dc, piece.thread_id) if piece.thread_id else [piece]


def run(home: Path, op: str, arg: str, stdin: Reader | None) -> str:
    """Do ``op`` on ``arg`` in the home at ``home``; what to print (empty: nothing)."""
    dc = Dovecote(home, actor=Actor())
    if op in ("inbox", "check"):
        return wire.many(_listing(dc, arg, unread_only=True))
    if op == "all":
        return wire.many(_listing(dc, arg))
    if op == "count":
        tallies = [mailbox.counts(dc, who) for who in _owners(dc, arg)]
        return wire.count(sum(t for t, _ in tallies), sum(u for _, u in tallies))
    if op == "thread":
        return wire.many(_thread(dc, arg))
    if op == "send":
        assert stdin is not None
        return wire.one(_deliver(dc, wire.entity_of(arg), wire.incoming(stdin()), None))
    agent = os.environ.get("GC_AGENT", "")
    piece = mailbox.find(dc, arg, first=agent.replace("/", ".") or None)  # where to look first: only a hint
    if op == "get":
        return wire.one(piece)
    if op == "read":
        return wire.one(mailbox.mark(dc, piece, read=True))
    if op in ("mark-read", "mark-unread"):
        mailbox.mark(dc, piece, read=op == "mark-read")
        return ""
    if op in ("archive", "delete"):
        mailbox.close(dc, piece)
        return ""
    if op == "reply":
        assert stdin is not None
        return wire.one(_deliver(dc, piece.sender, wire.incoming(stdin()), piece))
    raise AssertionError(f"no operation {op}")  # main() lets only OPERATIONS through

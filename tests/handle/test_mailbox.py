"""``handle.mailbox``: mailboxes as a plain mail client sees them, over the lifecycle's own moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from dovecote.errors import Refusal
from dovecote.handle import mailbox
from dovecote.model.addresses import entity
from dovecote.verbs import Move
from mailhelpers import ENTITY, mail_home, send


def _kinds(dc: object, ref: str) -> list[str]:
    return [x.data()["kind"] for x in dc.store.read(entity(ENTITY)).letters  # type: ignore[attr-defined]
            if x.data().get("ref") == ref]


def test_read_marks_are_seen_and_unseen_letters_written_only_when_they_change_something(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    ref = send(dc, "hello")
    piece = mailbox.find(dc, ref)
    assert (piece.read, piece.open, piece.recipient) == (False, True, ENTITY)
    assert mailbox.mark(dc, piece, read=True).read
    mailbox.mark(dc, piece, read=True)  # already read: nothing more is written
    assert mailbox.counts(dc, ENTITY) == (1, 0)
    mailbox.mark(dc, piece, read=False)
    assert _kinds(dc, ref) == ["seen", "unseen"]
    assert mailbox.counts(dc, ENTITY) == (1, 1)
    assert [p.id for p in mailbox.pieces(dc, ENTITY, unread_only=True)] == [ref]


def test_archive_closes_from_every_open_state_with_one_final_link(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    waiting, claimed, deferred = send(dc, "w"), send(dc, "c"), send(dc, "d")
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=claimed))
    dc.move(Move(kind="defer", entity_id=ENTITY, ref=deferred, until="2099-01-01T00:00:00Z"))
    for ref in (waiting, claimed, deferred):
        closed = mailbox.close(dc, mailbox.find(dc, ref))
        assert (closed.open, closed.read) == (False, True)
    assert _kinds(dc, waiting) == ["seen", "nack"]
    assert _kinds(dc, claimed) == ["claim", "seen", "complete"]  # claimed in dovecote: it is completed
    assert _kinds(dc, deferred) == ["defer", "seen", "undefer", "nack"]
    assert mailbox.counts(dc, ENTITY) == (0, 0) and mailbox.pieces(dc, ENTITY, open_only=True) == []
    assert len(mailbox.pieces(dc, ENTITY)) == 3  # closed, never gone
    with pytest.raises(Refusal, match="already archived"):
        mailbox.close(dc, mailbox.find(dc, waiting))
    with pytest.raises(Refusal, match="illegal_transition"):
        mailbox.mark(dc, mailbox.find(dc, waiting), read=False)  # an archived message stays read
    assert dc.verify().ok


def test_unknown_ids_and_names(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    with pytest.raises(Refusal, match="unknown_letter"):
        mailbox.find(dc, "nonexistent")
    assert mailbox.pieces(dc, "never-seen") == [] and mailbox.counts(dc, "never-seen") == (0, 0)
    with pytest.raises(Refusal, match="invalid_name"):
        mailbox.pieces(dc, "rig/agent")
    mailbox.adopt(dc, ["newcomer", "newcomer", "other"])
    mailbox.adopt(dc, ["newcomer"])  # already there: the roster is not edited again
    assert [e.id for e in dc.roster.entities].count("newcomer") == 1

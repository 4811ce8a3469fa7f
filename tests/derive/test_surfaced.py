"""``surfaced`` records: durable, apart from ``seen``, and invisible to every state and count."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.derive.inbox import snapshot as inbox_snapshot
from dovecote.derive.inbox.book import Clock, InboxBook
from dovecote.derive.inbox.surfaced import surfaced_letter, surfaced_to
from dovecote.derive.inbox.view import inbox_audit
from dovecote.model.addresses import entity
from dovecote.model.letters import Letter, canonical_line, decode_line, make_letter
from dovecote.model.results import builtins
from dovecote.roster.config import Limits
from dovecote.verbs import Inbox, Message, Move
from helpers import open_home
from mailhelpers import ENTITY, mail_home, send

pytestmark = pytest.mark.both_stores

NOW = datetime(2026, 7, 5, 12, 0, tzinfo=UTC)


def _busy_box(tmp: Path) -> list[Letter]:
    """A box with an item in every state, and a draft."""
    dc = mail_home(tmp)
    wait, active, deferred, done, nacked = (send(dc, s, priority=p) for s, p in (
        ("waiting", "urgent"), ("active", "high"), ("deferred", "normal"), ("done", "low"), ("nacked", "normal")))
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=active))
    dc.move(Move(kind="defer", entity_id=ENTITY, ref=deferred, until_tic=200))
    for item in (done, nacked):
        dc.move(Move(kind="seen", entity_id=ENTITY, ref=item))
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=done))
    dc.move(Move(kind="complete", entity_id=ENTITY, ref=done))
    dc.move(Move(kind="nack", entity_id=ENTITY, ref=nacked))
    dc.draft(Message(sender=ENTITY, recipient="ent_ops", subject="draft"))
    assert wait
    return list(dc.store.read(entity(ENTITY)).letters)


def _view(letters: list[Letter]) -> dict[str, object]:
    book = InboxBook(ENTITY)
    book.add(letters)
    view, _ = inbox_audit(book, Clock(150, NOW), limits=Limits(), include_terminal=True)
    return view


def _surfaced(session: str, items: list[str], n: int) -> Letter:
    letter = decode_line(canonical_line(surfaced_letter(ENTITY, session, "prompt", items, f"2026-07-05T1{n % 10}:00Z")))
    assert letter is not None
    return letter


def test_surfaced_letters_change_no_state_count_or_seen_flag(tmp_path: Path) -> None:
    letters = _busy_box(tmp_path)
    items = [x.id for x in letters if x.kind == "message"]
    base = _view(letters)

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.tuples(st.integers(0, len(letters)), st.sampled_from(["s1", "s2", "-"]),
                              st.lists(st.sampled_from(items), max_size=5)), max_size=8))
    def check(inserts: list[tuple[int, str, list[str]]]) -> None:
        mixed = list(letters)
        for n, (at, session, ids) in enumerate(sorted(inserts, key=lambda x: x[0], reverse=True)):
            mixed.insert(at, _surfaced(session, ids, n))
        assert _view(mixed) == base
        for _, session, ids in inserts:
            assert set(ids) <= surfaced_to(mixed, session)
        # the inbox fold keeps the same answer (what a hook asks first), through a snapshot taken part-way
        cut = len(mixed) // 2
        book = InboxBook(ENTITY)
        book.add(mixed[:cut])
        book = inbox_snapshot.loads(inbox_snapshot.dumps(book))
        book.add(mixed[cut:])
        for session in ("s1", "s2", "-", "other"):
            assert book.told.get(session, set()) == surfaced_to(mixed, session)

    check()
    seen = {i["subject"]: i["seen"] for i in base["items"]}  # type: ignore[attr-defined]
    assert seen == {"waiting": False, "active": False, "deferred": False, "done": True, "nacked": True}


def test_the_fold_skips_what_is_not_a_surfaced_record() -> None:
    good = make_letter(surfaced_letter(ENTITY, "s", "stop", ["0123456789ab"], "2026-07-05T10:00:00Z"))
    odd = [
        make_letter({"kind": "surfaced", "session": 7, "items": ["0123456789ab"]}),
        make_letter({"kind": "surfaced", "session": "t", "items": "0123456789ab"}),
        make_letter({"kind": "surfaced", "session": "u", "items": ["not-an-id", 5]}),
        make_letter({"kind": "seen", "ref": "0123456789ab", "session": "s", "items": ["aaaaaaaaaaaa"]}),
    ]
    assert surfaced_to([good, *odd], "s") == {"0123456789ab"}
    assert surfaced_to([good, *odd], "u") == surfaced_to([good, *odd], "t") == surfaced_to([good], "other") == set()
    book = InboxBook(ENTITY)
    book.add([good, *odd])
    assert book.told == {"s": {"0123456789ab"}, "u": set()}


def test_what_a_session_was_told_survives_deleting_every_cache(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    send(dc, "first", priority="high")
    start = dc.hook("session-start", ENTITY, {"session_id": "s1"})
    assert "[HIGH] first" in start.stdout and len(start.announce) == 1
    shutil.rmtree(dc.layout.cache, ignore_errors=True)
    cold = open_home(dc.layout.root)
    assert cold.hook("prompt", ENTITY, {"session_id": "s1"}).stdout == ""  # told already, by the ledger
    assert cold.hook("prompt", ENTITY, {"session_id": "s2"}).stdout != ""  # another session was not
    item = builtins(cold.inbox(Inbox(entity_id=ENTITY)))["items"][0]
    assert item["seen"] is False and item["state"] == "WAIT"  # being told is not reading

"""The PostgreSQL store's guarded sections: how few times a send waits on the server, and that a
section which fails leaves nothing of what it wrote, on the database or in the warm boxes."""

from __future__ import annotations

import contextlib
from pathlib import Path

import psycopg
import pytest

from dovecote.errors import StoreError
from dovecote.handle import api
from dovecote.handle.api import Dovecote
from dovecote.model.addresses import Address
from dovecote.model.letters import canonical_line, letter_id
from dovecote.store.postgres.store import PostgresStore
from dovecote.store.postgres.write import SCALARS
from dovecote.verbs import EntityAdd, Message
from pghelpers import round_trips, statements

A, B = Address("entity", "ent_a"), Address("entity", "ent_b")
#: A warm send on PostgreSQL: one round trip for BEGIN, both boxes' locks and their new rows, one for
#: the delivery, the sent record, their notices and COMMIT (it was 13 before the sections were pipelined).
SEND_TRIPS = 2
#: And the statements those trips carry: BEGIN, one call locking and reading both boxes
#: (``dovecote_hold``), one insert of both rows with both notices, COMMIT (it was 11: the generation
#: and the rows read apart, the notices one statement each; then 7: each box's lock and read apart).
SEND_STATEMENTS = 4


def line(what: str) -> bytes:
    return canonical_line({"ts": "2026-07-05T10:00:00Z", "agent": "probe", "what": what})


def rows(url: str, box: str) -> list[bytes]:
    with psycopg.connect(url) as conn:
        got = conn.execute("SELECT l.line FROM dovecote_letters l JOIN dovecote_boxes b ON l.box = b.id "
                           "WHERE b.box = %s ORDER BY l.seq", (box,)).fetchall()
    return [bytes(r[0]) for r in got]


def test_a_warm_send_waits_on_the_server_twice_and_commits_delivery_and_record_together(
    tmp_path: Path, url: str
) -> None:
    home = tmp_path / ".dovecote"
    api.init(home, store=url)
    admin = api.open_home(home)
    admin.add_entity(EntityAdd(entity_id="ent_a"))
    admin.add_entity(EntityAdd(entity_id="ent_b"))
    st = PostgresStore(url, pool_size=1)  # one connection: every send's statements are on it
    try:
        dc = Dovecote(home, store=st)
        dc.send(Message(recipient="ent_a", sender="ent_b", subject="warm", body="b"))
        with st._conn() as conn, round_trips(conn, tmp_path / "trace") as trips:
            sent = [dc.send(Message(recipient="ent_a", sender="ent_b", subject=f"#{n}", body="b")) for n in range(5)]
            assert trips() <= SEND_TRIPS * 5, f"{trips() / 5:.1f} round trips a send (the pool's check counts too)"
        ran = statements(tmp_path / "trace")
        assert ran <= SEND_STATEMENTS * 5, f"{ran / 5:.1f} statements a send"
    finally:
        st.close()
    delivered = {letter_id(x) for x in rows(url, "entity:ent_a")}
    assert {s.id for s in sent} <= delivered
    assert all(s.sent_record in {letter_id(x) for x in rows(url, "entity:ent_b")} for s in sent)


def test_a_failed_section_leaves_nothing_of_either_box_in_the_database_or_the_warm_boxes(url: str) -> None:
    st, other = PostgresStore(url), PostgresStore(url)
    try:
        st.append(A, [line("kept")])
        with pytest.raises(RuntimeError), st.guarded(A) as a, st.guarded(B) as b:
            a.append([line("a, rolled back")])
            b.append([line("b, rolled back")])
            assert [x.raw for x in a.letters] == [line("kept"), line("a, rolled back")]
            raise RuntimeError("the caller's CAS failed after writing")
        assert [x.raw for x in st.read(A).letters] == [line("kept")]
        assert st.read(B).letters == [] and other.read(B).letters == []
        assert rows(url, "entity:ent_a") == [line("kept")]
        assert st.append(A, [line("a, rolled back")]) == [(letter_id(line("a, rolled back")), True)], (
            "the letter a rolled-back section staged is new again"
        )
    finally:
        st.close()
        other.close()


def test_a_row_written_around_the_lock_fails_the_send_instead_of_being_dropped(url: str) -> None:
    st = PostgresStore(url)
    try:
        st.append(A, [line("one")])
        with pytest.raises(StoreError, match="duplicate key"), st.guarded(A) as a:
            assert len(a.letters) == 1  # locked and read: the next row is 2
            with psycopg.connect(url) as conn:  # a writer that skips the lock takes row 2 meanwhile
                conn.execute("INSERT INTO dovecote_letters SELECT box, generation, 2, 'x', 'x' FROM dovecote_letters")
            a.append([line("two")])
        assert st.append(A, [line("two")]) == [(letter_id(line("two")), True)], "read again, then appended"
        assert rows(url, "entity:ent_a") == [line("one"), b"x", line("two")]
    finally:
        st.close()


def test_a_section_over_more_boxes_than_go_as_scalars_writes_and_reads_every_one(url: str) -> None:
    many = [Address("entity", f"ent_m{n:02d}") for n in range(SCALARS + 4)]  # the arrays' path, both ways
    st, other = PostgresStore(url), PostgresStore(url)
    try:
        with contextlib.ExitStack() as stack:
            guards = [stack.enter_context(st.guarded(b)) for b in many]
            for n, g in enumerate(guards):
                assert g.append([line(f"{n} a"), line(f"{n} b")]) == [
                    (letter_id(line(f"{n} a")), True), (letter_id(line(f"{n} b")), True)]
        for n, b in enumerate(many):  # one box at a time: the scalars' path
            assert [x.raw for x in other.read(b).letters] == [line(f"{n} a"), line(f"{n} b")]
        with contextlib.ExitStack() as stack:
            guards = [stack.enter_context(other.guarded(b)) for b in many]
            assert [len(g.letters) for g in guards] == [2] * len(many)
            guards[-1].append([line("last")])
        assert rows(url, "entity:ent_m19")[-1] == line("last")
    finally:
        st.close()
        other.close()

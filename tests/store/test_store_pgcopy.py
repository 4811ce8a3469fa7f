"""The PostgreSQL store's big batches (``store_pgcopy``): a binary COPY encoded by hand, sent a slice
at a time, the warm box absorbing each slice; every row exactly what an INSERT would have written."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from dovecote.errors import StoreError
from dovecote.model.addresses import Address
from dovecote.model.letters import canonical_line, letter_id
from dovecote.store.postgres.copy import CHUNK, COPY_FROM, encode
from dovecote.store.postgres.store import PostgresStore
from pghelpers import round_trips

A = Address("entity", "ent_a")


def line(n: int) -> bytes:
    return canonical_line({"ts": "2026-07-05T10:00:00Z", "agent": "probe", "what": f"letter #{n}"})


def stored(url: str) -> list[tuple[int, str, bytes]]:
    with psycopg.connect(url) as conn:
        got = conn.execute("SELECT seq, id, line FROM dovecote_letters ORDER BY seq").fetchall()
    return [(int(s), str(i), bytes(b)) for s, i, b in got]


def mixed(n: int) -> list[bytes]:
    """``n`` lines of every kind a batch may hold: twins, odd bytes, a line that is no letter,
    a blank one, one ending in a CR (its id and its letter without it, its row with it)."""
    lines = [line(i) for i in range(n)]
    lines[3] = lines[1]  # a twin inside the batch
    lines[5] = b'{"what":"odd",  "spaced":true}'  # not canonical: kept as it is
    lines[7] = b"not json"
    lines[9] = b""
    lines[11] = line(-11) + b"\r"
    lines[-1] = lines[0]  # a twin, in the last slice, of the first line
    return lines


@pytest.mark.parametrize("size", [COPY_FROM + 11, CHUNK + COPY_FROM + 2, 2 * CHUNK + 3])
def test_a_big_batch_writes_the_exact_rows_an_insert_would_and_reads_the_same_warm_and_cold(
    url: str, size: int
) -> None:
    st, cold = PostgresStore(url), PostgresStore(url)
    try:
        st.append(A, [line(2)])  # already in the box: not new
        lines = mixed(size)
        got = st.append(A, lines)
        seen = {letter_id(line(2))}
        want = []
        for ln in lines:
            want.append((letter_id(ln), letter_id(ln) not in seen))
            seen.add(letter_id(ln))
        assert got == want
        new = [ln for ln, (_, fresh) in zip(lines, got, strict=True) if fresh]
        # before any read (the batch's letters still undecoded): its ids are held, a new line goes after it
        assert st.append(A, [new[-1], line(-5)]) == [(letter_id(new[-1]), False), (letter_id(line(-5)), True)]
        new.append(line(-5))
        assert stored(url) == [(i + 1, letter_id(ln), ln) for i, ln in enumerate([line(2), *new])]
        warm, again = st.read(A), cold.read(A)
        assert [x.raw for x in warm.letters] == [x.raw for x in again.letters]
        assert [x.id for x in warm.letters] == [x.id for x in again.letters] == [
            letter_id(x) for x in [line(2), *new] if x not in (b"not json", b"")]
        assert [(d.line, d.kind) for d in warm.defects] == [(d.line, d.kind) for d in again.defects] == [
            (1 + new.index(b"not json") + 1, "malformed")]
        assert warm.cursor == again.cursor and set(warm.index) == set(again.index)
        assert not any(fresh for _, fresh in st.append(A, lines)), "the same batch again appends nothing"
        assert not any(fresh for _, fresh in cold.append(A, list(reversed(lines)))), "nor from another handle"
        assert len(stored(url)) == 1 + len(new)
    finally:
        st.close()
        cold.close()


def test_the_copy_opens_only_once_enough_lines_are_new(url: str, tmp_path: Path) -> None:
    st = PostgresStore(url, pool_size=1)
    try:
        old = [line(i) for i in range(CHUNK)]
        st.append(A, old)
        for n, copies in ((COPY_FROM - 1, 0), (COPY_FROM, 1)):
            batch = old + [line(-1000 * n - i) for i in range(n)]  # the new ones come after a slice of old ones
            with st._conn() as conn, round_trips(conn, tmp_path / f"trace{n}"):
                assert sum(fresh for _, fresh in st.append(A, batch)) == n
            trace = (tmp_path / f"trace{n}").read_text()
            assert trace.count("COPY dovecote_letters") == copies, f"{n} new lines"
        assert len(stored(url)) == CHUNK + 2 * COPY_FROM - 1
    finally:
        st.close()


def test_a_big_batch_failing_on_a_row_written_around_the_lock_leaves_nothing_of_it(url: str) -> None:
    st = PostgresStore(url)
    try:
        st.append(A, [line(0)])
        lines = [line(i) for i in range(1, CHUNK + 10)]
        with pytest.raises(StoreError, match="duplicate key"), st.guarded(A) as a:
            assert len(a.letters) == 1
            with psycopg.connect(url) as conn:  # a writer that skips the lock takes an id of the second slice
                conn.execute("INSERT INTO dovecote_letters SELECT box, generation, 99999, %s, 'x' "
                             "FROM dovecote_letters", (letter_id(lines[CHUNK + 5]),))
            a.append(lines)
        assert [x.raw for x in st.read(A).letters] == [line(0)], "the warm box started over"
        assert [ln for _, _, ln in stored(url)] == [line(0), b"x"]
    finally:
        st.close()


def test_an_id_that_is_not_twelve_characters_is_refused_not_cut_or_padded() -> None:
    assert encode(1, 0, 1, [("0123456789ab", b"{}")]).endswith(b"0123456789ab\x00\x00\x00\x02{}")
    for bad in ("0123456789a", "0123456789abc"):
        with pytest.raises(ValueError, match="12 characters"):
            encode(1, 0, 1, [(bad, b"{}")])

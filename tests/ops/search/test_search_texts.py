"""The search index's partial read of a message answers what the whole line answers.

``read_message`` decodes a few typed leaves of a message line; ``Indexed.of``
the envelope over the whole line is the reference. Fixed shapes (foreign,
legacy, malformed blocks, duplicate keys, huge numbers) and a property over
random lines built from every kind of value at every key the reader looks at.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.model.envelope import Envelope, build_message
from dovecote.model.letters import Letter, canonical_line, decode_line
from dovecote.ops.search import index as search_index
from dovecote.ops.search import texts as search_texts


def reference(letter: Letter) -> search_texts.Indexed:
    return search_texts.Indexed.of(Envelope(letter.data()))

SHAPES: list[dict[str, Any]] = [
    build_message(ts="2026-07-05T10:00:00Z", sender="ent_b", recipient="ent_a", subject="s", body="b",
                  defer_until_tic=4, source_tic=2),
    {"ts": "2026-07-05T10:00:00Z", "kind": "message", "from": "ent_c", "subject": "flat", "body": "legacy"},
    {"kind": "message", "sender": "not a block", "content": {"subject": 7, "body_ref": "sha256:" + "0" * 64,
                                                              "artifact_refs": ["sha256:" + "1" * 64, 3]}},
    {"kind": "message", "lifecycle": {"defer_until_tic": "12"}, "content": {"artifacts": [{"ref": "x", "name": "n"}]}},
    {"kind": "message", "routing": {"subject": "not here"}, "provenance": {"created_at": "2026-07-05T10:00:00Z"}},
]


@pytest.mark.parametrize("shape", SHAPES)
def test_the_partial_envelope_reads_what_the_whole_one_reads(shape: dict[str, Any]) -> None:
    letter = decode_line(canonical_line(shape))
    assert letter is not None
    assert search_texts.read_message(letter) == reference(letter)


def test_duplicate_keys_and_huge_numbers_read_as_the_whole_line_reads() -> None:
    raw = b'{"kind":"message","subject":"first","subject":"last","lifecycle":{"defer_until_tic":' + b"9" * 40 + b"}}"
    letter = decode_line(raw)
    assert letter is not None
    part = search_texts.read_message(letter)
    assert part == reference(letter)
    assert part.subject == "last"


def test_a_block_keeps_every_text_and_cuts_one_out() -> None:
    texts = [(f"body {i} ünïcode", f"attach {i}") for i in range(search_texts.BLOCK)]
    z = search_texts.pack(texts)
    assert len(z) < len(orjson.dumps(texts))
    for part, (body, attach) in enumerate(texts):
        assert search_texts.text_of(1, z, part, 0) == body
        assert search_texts.text_of(1, z, part, 1) == attach
    other = search_texts.pack([("another", "")])
    assert search_texts.text_of(1, other, 0, 0) == "another"  # same number, other bytes: decoded again


_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6), st.sampled_from(["", "12", "-3", " 4", "sha256:" + "2" * 64]),
    st.lists(st.one_of(st.text(max_size=4), st.integers(), st.fixed_dictionaries({"ref": st.text(max_size=4)})),
             max_size=3),
)


def _block(keys: tuple[str, ...]) -> st.SearchStrategy[Any]:
    """A block as a letter may hold it: an object of some of ``keys`` (and a stranger), or not an object."""
    obj = st.dictionaries(st.sampled_from([*keys, "other"]), _LEAF, max_size=len(keys) + 1)
    return st.one_of(obj, _LEAF)


_LINE = st.dictionaries(
    st.sampled_from(["sender", "from", "content", "subject", "body", "lifecycle", "routing", "ts"]),
    st.one_of(_block(("entity_id",)), _block(("subject", "body", "body_ref", "artifacts", "artifact_refs")),
              _block(("defer_until_tic", "source_tic")), _LEAF),
    max_size=8,
)


@settings(max_examples=400, deadline=None)
@given(line=_LINE)
def test_the_typed_read_of_any_line_equals_the_whole_envelope(line: dict[str, Any]) -> None:
    letter = decode_line(json.dumps({"kind": "message", **line}, separators=(",", ":")).encode())
    assert letter is not None
    assert search_texts.read_message(letter) == reference(letter)


def _two_boxes() -> list[search_texts.Doc]:
    """Two boxes' messages, their rowids interleaved in time, each box more than a block."""
    return [(k * 10 + (5 if box == "e2" else 0), f"{box}m{k}", f"2026-07-05T10:{k:02d}:00Z", "ent_b", f"subject {k}",
             f"body {box} w{k % 7}", f"attach {k}" if k % 3 else "", box)
            for box in ("e1", "e2") for k in range(search_texts.BLOCK + 9)]


def _answers(conn: sqlite3.Connection) -> tuple[list[Any], ...]:
    docs = conn.execute("SELECT rowid, id, ts, sender, subject, ent FROM docs ORDER BY rowid").fetchall()
    content = conn.execute("SELECT rid, subject, body, attach, ent FROM content ORDER BY rid").fetchall()
    hits = [conn.execute("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid DESC", (q,)).fetchall()
            for q in ("subject", "w3", "e2", "attach", "e1 AND w0")]
    return docs, content, hits


def test_a_first_build_written_box_by_box_on_a_second_thread_holds_what_one_insert_holds() -> None:
    one, boxed = search_index.connect(None)[0], search_index.connect(None)[0]
    docs = _two_boxes()
    search_texts.insert_docs(one, list(docs))
    after: list[tuple[str, int]] = []  # what the boxes' other writes see: every full-text row in

    def then() -> None:
        (n,) = boxed.execute("SELECT count(*) FROM fts WHERE fts MATCH 'subject'").fetchone()
        after.append((threading.current_thread().name, n))

    with search_texts.BoxWriter(boxed) as writer:
        for box in ("e2", "e1"):
            writer.box([d for d in docs if d[7] == box])
        writer.finish(then=[then])
    assert _answers(boxed) == _answers(one)
    assert after == [(threading.current_thread().name, len(docs))]
    assert len(_answers(one)[1]) == len(docs) and all(_answers(one)[2])


def test_the_box_writer_raises_its_threads_error_and_gives_the_connection_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conn = search_index.connect(None)[0]
    threads: list[str] = []

    def failing(c: sqlite3.Connection, docs: list[search_texts.Doc]) -> None:
        threads.append(threading.current_thread().name)
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(search_texts, "_insert_fts", failing)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"), search_texts.BoxWriter(conn) as writer:
        writer.box(_two_boxes())
        writer.finish()
    assert threads and threads[0].startswith("dovecote-index")
    assert conn.execute("SELECT count(*) FROM docs").fetchone() == (0,)  # nothing written past the failure


def test_an_error_of_the_reading_thread_waits_for_the_box_writer_before_the_connection_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The build's own thread fails while the worker is inside the connection: the worker is
    joined before the error leaves the writer, so no thread outlives the build (or its rollback)."""
    conn = search_index.connect(None)[0]
    done = threading.Event()
    real = search_texts._insert_fts

    def slow(c: sqlite3.Connection, docs: list[search_texts.Doc]) -> None:
        time.sleep(0.3)
        real(c, docs)
        done.set()

    monkeypatch.setattr(search_texts, "_insert_fts", slow)
    with pytest.raises(RuntimeError, match="reading"), search_texts.BoxWriter(conn) as writer:
        writer.box(_two_boxes())
        raise RuntimeError("reading the next box failed")
    assert done.is_set()  # the worker's statement ended before the error came out
    assert not [t for t in threading.enumerate() if t.name.startswith("dovecote-index")]


_ANY_TEXT = st.text(alphabet=st.sampled_from("ab ü\x00\\\"\n\t\u2028🐦ﬁ-"), max_size=12)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.tuples(_ANY_TEXT, _ANY_TEXT, _ANY_TEXT), min_size=1, max_size=7),
       chunk=st.integers(min_value=1, max_value=4))
def test_full_text_rows_written_through_json_hold_what_rows_bound_one_by_one_hold(
    texts: list[tuple[str, str, str]], chunk: int
) -> None:
    docs = [(k + 1, f"m{k}", "", "", s, b, a, "e1") for k, (s, b, a) in enumerate(texts)]
    through, bound = search_index.connect(None)[0], search_index.connect(None)[0]
    search_texts.FTS_CHUNK, was = chunk, search_texts.FTS_CHUNK  # several statements, rows split across them
    try:
        search_texts._insert_fts(through, docs)
    finally:
        search_texts.FTS_CHUNK = was
    bound.executemany(search_texts._FTS_ROW, [(d[0], d[4], d[5], d[6], d[7]) for d in docs])
    terms = []
    for conn in (through, bound):
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, fts, instance)")
        terms.append(sorted(conn.execute("SELECT term, doc, col FROM temp.v").fetchall()))
    assert terms[0] == terms[1]

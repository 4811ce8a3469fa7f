"""``search``: full text over entity mail through an FTS5 index that is only a cache."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import zlib
from pathlib import Path

import msgspec
import msgspec.structs
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dovecote.errors import Refusal, StoreError
from dovecote.handle.api import Dovecote
from dovecote.model.addresses import entity
from dovecote.model.results import builtins
from dovecote.ops.search import index as search_index
from dovecote.ops.search import query as search_mod
from dovecote.ops.search import sync as search_sync
from dovecote.ops.search import texts as search_texts
from dovecote.util.timeutil import order_key, order_ms
from dovecote.verbs import Message, Move, Search
from helpers import open_home, rewrite_roster, run_cli, snapshot
from searchhelpers import T, decline, finish, ids, mail_home, put_message

pytestmark = pytest.mark.both_stores

MATCH_KEYS = ["id", "entity", "state", "subject", "sender", "ts", "snippet"]


def index_path(dc: Dovecote) -> Path:
    return dc.layout.cache / "search.sqlite"


def stats(dc: Dovecote) -> dict[str, int]:
    return dict(dc.warm[search_index.WARM_KEY].stats)


# -- what is searched ---------------------------------------------------------------


def test_the_json_shape_and_a_subject_match(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    mid = put_message(dc, "ent_a", "quarterly kestrel review", body="numbers inside", sender="ent_b")
    out = builtins(dc.search(Search(query="kestrel")))
    assert list(out) == ["query", "count", "limit", "truncated", "matches"]
    assert out["query"] == "kestrel" and out["count"] == 1 and out["truncated"] is False
    (m,) = out["matches"]
    assert list(m) == MATCH_KEYS
    assert m == {
        "id": mid, "entity": "ent_a", "state": "WAIT", "subject": "quarterly kestrel review",
        "sender": "ent_b", "ts": T(), "snippet": "quarterly **kestrel** review",
    }
    assert orjson.loads(orjson.dumps(out)) == out


def test_inline_body_is_searched(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    mid = put_message(dc, "ent_a", "hello", body="the pelican landed on the roof")
    assert ids(builtins(dc.search(Search(query="pelican")))) == [mid]
    assert "**pelican**" in builtins(dc.search(Search(query="pelican")))["matches"][0]["snippet"]
    assert dc.search(Search(query="albatross")).count == 0


def test_body_stored_as_an_artifact_is_searched(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    dc = rewrite_roster(dc, limits=msgspec.structs.replace(dc.roster.limits, body_inline_max=64))
    body = "filler words " * 20 + "the marmoset escaped"
    sent = dc.send(Message(recipient="ent_a", sender="ent_b", subject="long one", body=body))
    letter = dc.store.read(entity("ent_a")).index[sent.id].data()
    assert letter["content"]["body"] == "" and letter["content"]["body_ref"].startswith("sha256:")
    assert ids(builtins(dc.search(Search(query="marmoset")))) == [sent.id]


def test_text_artifacts_are_searched_binary_ones_only_by_name(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    text = tmp_path / "notes.txt"
    text.write_text("the narwhal report, in full\n")
    binary = tmp_path / "photo.raw"
    binary.write_bytes(b"\xff\xfe\x00narwhal\x00" * 10)
    a = dc.send(Message(
        recipient="ent_a", sender="ent_b", subject="see attached", artifact_paths=[str(text)]
    )).id
    b = dc.send(Message(
        recipient="ent_a", sender="ent_b", subject="a picture", artifact_paths=[str(binary)]
    )).id
    assert ids(builtins(dc.search(Search(query="narwhal")))) == [a]  # the binary blob's bytes are not text
    assert ids(builtins(dc.search(Search(query="photo")))) == [b]  # its name is
    assert ids(builtins(dc.search(Search(query="notes")))) == [a]


def test_outbound_drafts_are_not_searched(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    dc.draft(Message(recipient="ent_b", sender="ent_a", subject="unsent gazelle"))
    assert dc.search(Search(query="gazelle")).count == 0


@pytest.mark.parametrize(
    "key", ["subject", "routing", "content", "body", "entity_id", "priority", "lifecycle", "thread_id", "message"]
)
def test_a_json_key_name_matches_only_text_holding_that_word(tmp_path: Path, key: str) -> None:
    dc = mail_home(tmp_path)
    for n in range(3):
        put_message(dc, "ent_a", f"plain note {n}", body="nothing special here", ts=T(hour=10 + n))
    holder = put_message(dc, "ent_b", "about the envelope", body=f"the {key} word, once", ts=T(hour=9))
    out = builtins(dc.search(Search(query=key)))
    assert ids(out) == [holder] and out["count"] == 1


def test_diacritics_and_case_are_folded(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    mid = put_message(dc, "ent_a", "Meeting at the Café")
    assert ids(builtins(dc.search(Search(query="cafe")))) == [mid]
    assert ids(builtins(dc.search(Search(query="CAFÉ")))) == [mid]


# -- the query is plain words --------------------------------------------------------


@pytest.fixture
def words_home(tmp_path: Path) -> tuple[Dovecote, dict[str, str]]:
    dc = mail_home(tmp_path)
    docs = {
        "alpha": put_message(dc, "ent_a", "alpha gamma", ts=T(hour=1)),
        "beta": put_message(dc, "ent_a", "beta only", ts=T(hour=2)),
        "both": put_message(dc, "ent_a", "alpha or beta", ts=T(hour=3)),
        "prefix": put_message(dc, "ent_a", "alphabet soup", ts=T(hour=4)),
        "near": put_message(dc, "ent_a", "we stood near alpha then beta", ts=T(hour=5)),
        "col": put_message(dc, "ent_a", "subject alpha", ts=T(hour=6)),
    }
    return dc, docs


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("alpha OR beta", ["both"]),  # OR is a word, not an operator
        ("alpha AND beta", []),  # so is AND ("and" is in no message)
        ("alpha NOT beta", []),
        ("alpha*", ["col", "near", "both", "alpha"]),  # no prefix search: alphabet stays out
        ("-alpha", ["col", "near", "both", "alpha"]),  # no exclusion either
        ('"alpha', ["col", "near", "both", "alpha"]),  # a stray quote cannot open a phrase
        ('alpha" OR "beta', ["both"]),
        ("NEAR(alpha beta)", ["near"]),  # the words near, alpha, beta
        ("subject:alpha", ["col"]),  # no column filter: the words subject and alpha
        ("{subject}:beta", []),
        ("^alpha", ["col", "near", "both", "alpha"]),
        ("alpha -", ["col", "near", "both", "alpha"]),  # a token without a word is dropped
    ],
)
def test_fts_operators_in_user_input_are_plain_words(
    words_home: tuple[Dovecote, dict[str, str]], query: str, expected: list[str]
) -> None:
    dc, docs = words_home
    assert ids(builtins(dc.search(Search(query=query)))) == [docs[k] for k in expected]


@pytest.mark.parametrize("query", ["", "   ", '"', "*", "-", "NEAR(", '" * - ()'])
def test_a_query_without_a_word_is_refused(words_home: tuple[Dovecote, dict[str, str]], query: str) -> None:
    dc, _ = words_home
    if query.strip() == "NEAR(":
        assert dc.search(Search(query=query)).count == 1  # NEAR is a word: the message that holds it
        return
    with pytest.raises(Refusal) as e:
        builtins(dc.search(Search(query=query)))
    assert e.value.reason == "missing_field"


def test_fts_query_quotes_every_term() -> None:
    assert search_mod.fts_query(["a", '"b"', "OR", "c*"]) == '"a" """b""" "OR" "c*"'
    assert search_mod.query_words('NEAR( x " *') == ["NEAR(", "x"]


def test_words_are_cut_into_terms_by_the_index_tokenizer(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    both = put_message(dc, "ent_a", "the entity_id field", ts=T(hour=1))
    apart = put_message(dc, "ent_a", "an id for the entity", ts=T(hour=2))
    put_message(dc, "ent_a", "the entity alone", ts=T(hour=3))
    assert ids(builtins(dc.search(Search(query="entity_id")))) == [apart, both]  # both terms, anywhere in the text
    assert ids(builtins(dc.search(Search(query="ENTITY-ID")))) == [apart, both]
    assert ids(builtins(dc.search(Search(query="Déjà-vu")))) == []
    cafe = put_message(dc, "ent_a", "deja vu at the café", ts=T(hour=4))
    assert ids(builtins(dc.search(Search(query="Déjà-vu café")))) == [cafe]


# -- order, filters, terminal states ---------------------------------------------------


def test_newest_first_by_letter_ts_across_boxes(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    # ledger order and box order disagree with time order on purpose
    late_a = put_message(dc, "ent_a", "heron late", ts=T(day=9))
    early_a = put_message(dc, "ent_a", "heron early", ts=T(day=1))
    mid_b = put_message(dc, "ent_b", "heron middle", ts=T(day=5))
    offset = put_message(dc, "ent_b", "heron offset", ts="2026-07-07T12:00:00+02:00")  # 10:00Z on the 7th
    sub = put_message(dc, "ent_b", "heron subsecond", ts="2026-07-05T10:00:00.500Z")
    assert ids(builtins(dc.search(Search(query="heron")))) == [late_a, offset, sub, mid_b, early_a]


@pytest.mark.files_only
def test_equal_times_are_ordered_by_id_and_stable_across_rebuilds(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    same = [put_message(dc, "ent_a", f"ibis {n}", ts=T()) for n in range(6)]
    first = ids(builtins(dc.search(Search(query="ibis"))))
    assert first == sorted(same, key=lambda i: int(i[:5], 16), reverse=True)
    os.unlink(index_path(dc))
    assert ids(builtins(dc.search(Search(query="ibis")))) == first


def test_colliding_rowids_take_the_next_free_slot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_sync, "ts_key", lambda ts, lid: 1_000_000)
    dc = mail_home(tmp_path)
    made = {put_message(dc, "ent_a", f"crane {n}", ts=T(hour=n)) for n in range(4)}
    out = builtins(dc.search(Search(query="crane")))
    assert out["count"] == 4 and set(ids(out)) == made


def test_entity_filter(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, "ent_a", "ent_b", "ent.c-1")
    a = put_message(dc, "ent_a", "osprey one", ts=T(hour=1))
    b = put_message(dc, "ent_b", "osprey two", ts=T(hour=2))
    c = put_message(dc, "ent.c-1", "osprey three", ts=T(hour=3))
    assert ids(builtins(dc.search(Search(query="osprey")))) == [c, b, a]
    assert ids(builtins(dc.search(Search(query="osprey", entity_id="ent_a")))) == [a]
    assert ids(builtins(dc.search(Search(query="osprey", entity_id="ent.c-1")))) == [c]
    assert dc.search(Search(query="osprey", entity_id="ent_b")).count == 1
    with pytest.raises(Refusal) as e:
        builtins(dc.search(Search(query="osprey", entity_id="ent_nobody")))
    assert e.value.reason == "unknown_entity"
    with pytest.raises(Refusal) as e:
        builtins(dc.search(Search(query="osprey", entity_id="../etc")))
    assert e.value.reason == "invalid_name"


def test_an_entity_gone_from_the_roster_is_no_longer_searched(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    put_message(dc, "ent_a", "puffin a")
    b = put_message(dc, "ent_b", "puffin b")
    assert dc.search(Search(query="puffin")).count == 2
    kept = tuple(e for e in dc.roster.entities if e.id == "ent_b")
    dc2 = rewrite_roster(dc, entities=kept)
    assert ids(builtins(dc2.search(Search(query="puffin")))) == [b]
    assert ids(builtins(dc.search(Search(query="puffin", entity_id="ent_a"))))  # the old handle still has its roster


def test_terminal_items_are_excluded_unless_asked(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    done = put_message(dc, "ent_a", "stork done", ts=T(hour=1))
    nacked = put_message(dc, "ent_a", "stork declined", ts=T(hour=2))
    active = put_message(dc, "ent_a", "stork active", ts=T(hour=3))
    deferred = put_message(dc, "ent_a", "stork deferred", ts=T(hour=4))
    waiting = put_message(dc, "ent_a", "stork waiting", ts=T(hour=5))
    finish(dc, "ent_a", done)
    decline(dc, "ent_a", nacked)
    dc.move(Move(kind="claim", entity_id="ent_a", ref=active))
    dc.move(Move(kind="defer", entity_id="ent_a", ref=deferred, until="2099-01-01T00:00:00Z"))
    out = builtins(dc.search(Search(query="stork")))
    assert ids(out) == [waiting, deferred, active] and out["count"] == 3
    assert [m["state"] for m in out["matches"]] == ["WAIT", "DEFER", "ACTIVE"]
    every = builtins(dc.search(Search(query="stork", include_terminal=True)))
    assert ids(every) == [waiting, deferred, active, nacked, done] and every["count"] == 5
    assert [m["state"] for m in every["matches"]] == ["WAIT", "DEFER", "ACTIVE", "NACK", "DONE"]


def test_an_item_finished_after_the_index_was_built_drops_out(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    a = put_message(dc, "ent_a", "swift a", ts=T(hour=1))
    b = put_message(dc, "ent_a", "swift b", ts=T(hour=2))
    assert ids(builtins(dc.search(Search(query="swift")))) == [b, a]
    other = open_home(dc.layout.root)  # another handle finishes it
    finish(other, "ent_a", b)
    assert ids(builtins(dc.search(Search(query="swift")))) == [a]
    assert ids(builtins(dc.search(Search(query="swift", include_terminal=True)))) == [b, a]
    # a message and its completion arriving together, after a search with the filter off
    c = put_message(dc, "ent_a", "swift c", ts=T(hour=3))
    assert ids(builtins(dc.search(Search(query="swift", include_terminal=True)))) == [c, b, a]
    finish(other, "ent_a", c)
    d = put_message(dc, "ent_a", "swift d", ts=T(hour=4))
    finish(other, "ent_a", d)
    assert ids(builtins(dc.search(Search(query="swift")))) == [a]


@pytest.mark.files_only
def test_the_text_is_stored_once_and_entities_by_number(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    mid = put_message(dc, "ent_a", "wren", body="a wren sang")
    finish(dc, "ent_a", mid)
    builtins(dc.search(Search(query="wren")))
    conn = sqlite3.connect(index_path(dc))
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    cols = {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in ("docs", "boxes", "items")}
    (doc,) = conn.execute("SELECT * FROM docs").fetchall()
    assert "fts_content" not in tables and "fts_docsize" not in tables  # FTS5 keeps no copy of the text
    assert cols["docs"] == ["rowid", "id", "ts", "sender", "subject", "ent", "blk", "part"]
    assert cols["boxes"] == ["n", "entity", "mark"] and cols["items"] == ["n", "id", "doc", "fold"]
    assert doc[1:6] == (mid, T(), "ent_x", "wren", "e1")  # the entity id is in boxes only
    (z,) = conn.execute("SELECT z FROM texts WHERE blk = ?", (doc[6],)).fetchone()
    conn.close()
    assert msgspec.msgpack.decode(zlib.decompress(z))[doc[7]] == ["a wren sang", ""]


def test_limit_and_truncation(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    made = [put_message(dc, "ent_a", f"tern {n}", ts=T(hour=n)) for n in range(7)]
    out = builtins(dc.search(Search(query="tern", limit=3)))
    assert ids(out) == made[::-1][:3] and out["count"] == 7 and out["truncated"] is True and out["limit"] == 3
    assert dc.search(Search(query="tern", limit=7)).truncated is False
    for bad in (0, -1):
        with pytest.raises(Refusal) as e:
            builtins(dc.search(Search(query="tern", limit=bad)))
        assert e.value.reason == "invalid_field"


# -- the index is a cache ------------------------------------------------------------------


@pytest.mark.files_only
def test_the_index_lives_in_the_cache_folder_and_on_the_warm_handle(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    put_message(dc, "ent_a", "loon")
    assert not index_path(dc).exists()
    builtins(dc.search(Search(query="loon")))
    assert index_path(dc).is_file()
    conn = dc.warm[search_index.WARM_KEY].conn
    builtins(dc.search(Search(query="loon")))
    assert dc.warm[search_index.WARM_KEY].conn is conn


@pytest.mark.files_only
def test_a_deleted_index_is_rebuilt_with_the_same_answer(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    for n in range(5):
        put_message(dc, "ent_a" if n % 2 else "ent_b", f"plover {n}", body=f"shore {n}", ts=T(hour=n))
    finish(dc, "ent_b", ids(builtins(dc.search(Search(query="plover", entity_id="ent_b"))))[0])
    before = dc.search(Search(query="plover")), dc.search(Search(query="shore", include_terminal=True))
    assert stats(dc)["rebuilds"] == 1
    for f in index_path(dc).parent.glob("search*"):
        f.unlink()
    same_handle = dc.search(Search(query="plover")), dc.search(Search(query="shore", include_terminal=True))
    after_warm = same_handle
    assert after_warm == before and stats(dc)["rebuilds"] == 2
    for f in index_path(dc).parent.glob("search*"):
        f.unlink()
    cold = Dovecote(dc.layout.root)
    assert (cold.search(Search(query="plover")), cold.search(Search(query="shore", include_terminal=True))) == before
    assert stats(cold)["rebuilds"] == 1 and stats(cold)["indexed"] == 5


@pytest.mark.files_only
@pytest.mark.parametrize("garbage", [b"", b"not a database at all" * 100, b"SQLite format 3\x00" + b"\x00" * 200])
def test_a_corrupt_index_file_is_rebuilt(tmp_path: Path, garbage: bytes) -> None:
    dc = mail_home(tmp_path)
    mid = put_message(dc, "ent_a", "gannet")
    before = builtins(dc.search(Search(query="gannet")))
    for f in index_path(dc).parent.glob("search*"):
        f.unlink()
    index_path(dc).write_bytes(garbage)
    cold = Dovecote(dc.layout.root)
    assert builtins(cold.search(Search(query="gannet"))) == before and ids(before) == [mid]


@pytest.mark.files_only
def test_an_index_row_lost_behind_its_back_means_a_rebuild(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    made = [put_message(dc, "ent_a", f"grebe {n}", ts=T(hour=n)) for n in range(3)]
    before = builtins(dc.search(Search(query="grebe")))
    assert ids(before) == made[::-1]
    conn = sqlite3.connect(index_path(dc))
    conn.execute("DELETE FROM docs WHERE rowid = (SELECT max(rowid) FROM docs)")  # the text table loses a row
    conn.commit()
    conn.close()
    assert builtins(dc.search(Search(query="grebe"))) == before and stats(dc)["rebuilds"] == 2


@pytest.mark.files_only
def test_an_index_of_another_schema_is_rebuilt(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    put_message(dc, "ent_a", "shag")
    before = builtins(dc.search(Search(query="shag")))
    conn = sqlite3.connect(index_path(dc))
    conn.execute("UPDATE meta SET value = 'dovecote-search-v0' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    cold = Dovecote(dc.layout.root)
    assert builtins(cold.search(Search(query="shag"))) == before and stats(cold)["rebuilds"] == 1


@pytest.mark.files_only
def test_an_appended_message_is_indexed_alone_without_a_rebuild(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    for n in range(4):
        put_message(dc, "ent_a", f"curlew {n}", ts=T(hour=n))
    builtins(dc.search(Search(query="curlew")))
    s0 = stats(dc)
    assert s0["indexed"] == 4
    writer = Dovecote(dc.layout.root)
    new = writer.send(Message(recipient="ent_a", sender="ent_b", subject="curlew arrives", body="godwit too")).id
    out = builtins(dc.search(Search(query="godwit")))
    assert ids(out) == [new]
    s1 = stats(dc)
    assert s1["indexed"] - s0["indexed"] == 1  # only the new letter
    assert s1["rebuilds"] == s0["rebuilds"] and s1["box_rebuilds"] == 0
    # a brand-new handle on the existing index file: nothing to rebuild, one letter to add
    cold = Dovecote(dc.layout.root)
    assert cold.search(Search(query="curlew")).count == 5
    assert stats(cold) == {"rebuilds": 0, "box_rebuilds": 0, "indexed": 0}
    writer.send(Message(recipient="ent_b", sender="ent_a", subject="dunlin"))
    assert cold.search(Search(query="dunlin")).count == 1
    assert stats(cold) == {"rebuilds": 0, "box_rebuilds": 0, "indexed": 1}


def test_a_first_build_writes_on_a_second_thread_and_a_failure_there_commits_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dc = mail_home(tmp_path)
    for n in range(6):
        put_message(dc, "ent_a" if n % 2 else "ent_b", f"plover {n}", body=f"shore {n}", ts=T(hour=n))
    real, threads = search_texts._insert_fts, []

    def failing(conn: sqlite3.Connection, docs: list[search_texts.Doc]) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    def spy(conn: sqlite3.Connection, docs: list[search_texts.Doc]) -> None:
        threads.append(threading.current_thread().name)
        real(conn, docs)

    monkeypatch.setattr(search_texts, "_insert_fts", failing)
    with pytest.raises(StoreError, match="disk I/O error"):
        builtins(dc.search(Search(query="plover")))
    monkeypatch.setattr(search_texts, "_insert_fts", spy)
    out = builtins(dc.search(Search(query="plover")))  # nothing was kept of the failed build: all of it again
    assert [m["subject"] for m in out["matches"]] == [f"plover {n}" for n in range(5, -1, -1)]
    assert len(threads) == 2 and all(t.startswith("dovecote-index") for t in threads)  # a box each, off this thread
    put_message(dc, "ent_a", "plover late", ts=T(hour=9))
    assert dc.search(Search(query="late")).count == 1
    assert threads[2:] == [threading.current_thread().name]  # an append is written here


@pytest.mark.files_only
def test_a_replaced_ledger_is_indexed_again(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    keep = put_message(dc, "ent_a", "avocet kept", ts=T(hour=1))
    put_message(dc, "ent_a", "avocet dropped", ts=T(hour=2))
    other = put_message(dc, "ent_b", "avocet elsewhere", ts=T(hour=3))
    assert dc.search(Search(query="avocet")).count == 3
    path = dc.store.path(entity("ent_a"))
    assert path is not None
    first_line = path.read_bytes().split(b"\n")[0] + b"\n"
    tmp = path.with_name("replacement.tmp")
    tmp.write_bytes(first_line)
    os.replace(tmp, path)  # another inode (e.g. a git checkout)
    out = builtins(dc.search(Search(query="avocet")))
    assert ids(out) == [other, keep]
    assert stats(dc)["box_rebuilds"] == 1 and stats(dc)["rebuilds"] == 1
    cold = Dovecote(dc.layout.root)
    assert builtins(cold.search(Search(query="avocet"))) == out


@pytest.mark.files_only
def test_a_ledger_shrunk_in_place_is_indexed_again(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    keep = put_message(dc, "ent_a", "sanderling kept", ts=T(hour=1))
    put_message(dc, "ent_a", "sanderling dropped", ts=T(hour=2))
    builtins(dc.search(Search(query="sanderling")))
    path = dc.store.path(entity("ent_a"))
    assert path is not None
    first = len(path.read_bytes().split(b"\n")[0]) + 1
    os.truncate(path, first)  # same inode, shorter
    cold = Dovecote(dc.layout.root)
    assert ids(builtins(cold.search(Search(query="sanderling")))) == [keep]
    assert stats(cold)["box_rebuilds"] == 1


def test_search_writes_nothing_but_its_cache(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    put_message(dc, "ent_a", "merlin")
    before = snapshot(dc.layout.root)
    builtins(dc.search(Search(query="merlin")))
    after = snapshot(dc.layout.root)
    assert {k: v for k, v in after.items() if not k.startswith("cache/")} == before


# -- the command line ----------------------------------------------------------------------


@pytest.mark.files_only
def test_cli_search_json_and_text(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    a = put_message(dc, "ent_a", "kittiwake colony", ts=T(hour=1), sender="ent_b")
    b = put_message(dc, "ent_b", "kittiwake count", body="colony of forty", ts=T(hour=2))
    home = dc.layout.root
    r = run_cli(tmp_path, "search", "kittiwake", "colony", "--json", home=home)
    assert r.returncode == 0, r.stderr
    out = orjson.loads(r.stdout)
    assert out["query"] == "kittiwake colony" and ids(out) == [b, a]
    r = run_cli(tmp_path, "search", "kittiwake", "--entity", "ent_a", "--json", home=home)
    assert ids(orjson.loads(r.stdout)) == [a]
    r = run_cli(tmp_path, "search", "colony", home=home)
    assert r.returncode == 0
    text = r.stdout.decode()
    assert f"{a}  [WAIT] ent_a" in text and "**colony**" in text and text.endswith("2 matches for 'colony'\n")
    finish(dc, "ent_a", a)
    r = run_cli(tmp_path, "search", "colony", "--json", home=home)
    assert ids(orjson.loads(r.stdout)) == [b]
    r = run_cli(tmp_path, "search", "colony", "--include-terminal", "--limit", "1", "--json", home=home)
    out = orjson.loads(r.stdout)
    assert ids(out) == [b] and out["count"] == 2 and out["truncated"] is True


@pytest.mark.files_only
@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("search", ""), "missing_field"),
        (("search", '"', "*"), "missing_field"),
        (("search", "x", "--entity", "ent_nobody"), "unknown_entity"),
        (("search", "x", "--limit", "0"), "invalid_field"),
    ],
)
def test_cli_refusals_exit_2_and_write_nothing(tmp_path: Path, args: tuple[str, ...], reason: str) -> None:
    dc = mail_home(tmp_path)
    put_message(dc, "ent_a", "x marks")
    before = snapshot(dc.layout.root)
    r = run_cli(tmp_path, *args, home=dc.layout.root)
    assert r.returncode == 2
    assert r.stderr.decode().startswith(f"Error: {reason}:")
    assert r.stdout == b""
    assert snapshot(dc.layout.root) == before


@pytest.mark.files_only
def test_cli_search_without_a_query_is_a_usage_error(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    r = run_cli(tmp_path, "search", home=dc.layout.root)
    assert r.returncode == 2 and b"QUERY" in r.stderr


def _same_size_edit(path: Path, old: bytes, new: bytes) -> None:
    """Rewrite the ledger in place (same inode, same size): one word of the last letter swapped."""
    assert len(old) == len(new)
    data = path.read_bytes()
    assert data.count(old) == 1
    edited = data.replace(old, new)
    with open(path, "r+b") as f:
        f.write(edited)
    assert len(path.read_bytes()) == len(data)


@pytest.mark.files_only
def test_a_same_size_rewrite_in_place_is_indexed_again_by_a_cold_process(tmp_path: Path) -> None:
    # issue 6, item 11: the index trusted its checkpoint (it checked one byte)
    dc = mail_home(tmp_path)
    keep = put_message(dc, "ent_a", "curlew kept", ts=T(hour=1))
    put_message(dc, "ent_a", "curlew plover", ts=T(hour=2))
    assert dc.search(Search(query="plover")).count == 1
    path = dc.store.path(entity("ent_a"))
    assert path is not None
    _same_size_edit(path, b"plover", b"dunlin")
    cold = Dovecote(dc.layout.root)
    assert cold.search(Search(query="plover")).count == 0, "answered from a stale index"
    edited = builtins(cold.search(Search(query="dunlin")))
    assert edited["count"] == 1 and edited["matches"][0]["id"] != keep
    assert stats(cold)["box_rebuilds"] == 1
    r = run_cli(tmp_path, "search", "plover", "--json", home=dc.layout.root)
    assert orjson.loads(r.stdout)["count"] == 0
    assert Dovecote(dc.layout.root).search(Search(query="curlew")) == cold.search(Search(query="curlew"))


@pytest.mark.files_only
def test_a_same_size_rewrite_in_place_is_noticed_by_a_warm_handle(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    put_message(dc, "ent_a", "godwit kept", ts=T(hour=1))
    put_message(dc, "ent_a", "godwit plover", ts=T(hour=2))
    assert dc.search(Search(query="plover")).count == 1
    path = dc.store.path(entity("ent_a"))
    assert path is not None
    time.sleep(0.05)  # a later edit: its mtime differs from the last read's (ledger.py names the same-tick blind spot)
    _same_size_edit(path, b"plover", b"dunlin")
    assert dc.search(Search(query="plover")).count == 0
    assert dc.search(Search(query="dunlin")).count == 1
    assert dc.search(Search(query="godwit")) == Dovecote(dc.layout.root).search(Search(query="godwit"))


@pytest.mark.files_only  # it runs once, on the memory store it opens itself (a replace is the memory store's own)
def test_a_memory_box_replaced_is_indexed_again_and_each_handle_keeps_its_own_index(tmp_path: Path) -> None:
    from dovecote.store.memory import MemoryStore
    from helpers import stores

    with stores("memory"):
        dc = mail_home(tmp_path)
        assert isinstance(dc.store, MemoryStore)
        keep = put_message(dc, "ent_a", "avocet kept", ts=T(hour=1))
        put_message(dc, "ent_a", "avocet dropped", ts=T(hour=2))
        assert dc.search(Search(query="avocet")).count == 2
        assert dc.warm[search_index.WARM_KEY].path is None and not (dc.layout.root / "cache" / "search.sqlite").exists()
        line = dc.store.read(entity("ent_a")).index[keep].raw
        dc.store.replace(entity("ent_a"), [line])
        assert ids(builtins(dc.search(Search(query="avocet")))) == [keep] and stats(dc)["box_rebuilds"] == 1
        other = open_home(dc.layout.root)
        assert builtins(other.search(Search(query="avocet"))) == builtins(dc.search(Search(query="avocet")))
        assert other.warm[search_index.WARM_KEY] is not dc.warm[search_index.WARM_KEY]


_TIME_PARTS = st.sampled_from(["0", "1", "2", "5", "9", "6", "٣", " ", "-", ":", "T", "Z", "+"])


@pytest.mark.files_only
@given(
    st.tuples(
        st.integers(1, 9999), st.integers(0, 13), st.integers(0, 32), st.integers(0, 25), st.integers(0, 61),
        st.integers(0, 61),
    ),
    st.lists(st.tuples(st.integers(0, 19), _TIME_PARTS), max_size=2),
)
def test_a_letters_time_in_ms_is_order_keys(parts: tuple[int, ...], spoil: list[tuple[int, str]]) -> None:
    """The hour-cached reading of dovecote's own time form equals ``order_key``'s, for good
    times and for near misses (a digit or separator changed, an hour or second out of range)."""
    y, mo, d, h, mi, s = parts
    chars = list(f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}Z")
    for at, ch in spoil:
        chars[at] = ch
    text = "".join(chars)
    assert order_ms(text) == int(order_key(text).timestamp() * 1000)
    assert order_ms(text) == int(order_key(text).timestamp() * 1000)  # from the cached hour too

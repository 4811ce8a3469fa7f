"""``search``: full text over entity mail through an FTS5 index that is only a cache."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import time
from pathlib import Path

import orjson
import pytest

from dovecote.api import Dovecote
from dovecote.errors import Refusal
from dovecote.names import entity
from dovecote.ops import search as search_mod
from dovecote.ops import search_index
from helpers import rewrite_roster, run_cli, snapshot
from searchhelpers import T, decline, finish, ids, mail_home, put_message

MATCH_KEYS = ["id", "entity", "state", "subject", "sender", "ts", "snippet"]


def index_path(dc: Dovecote) -> Path:
    return dc.layout.cache / "search.sqlite"


def stats(dc: Dovecote) -> dict[str, int]:
    return dict(dc.warm[search_index.WARM_KEY].stats)


# -- what is searched ---------------------------------------------------------------


def test_the_json_shape_and_a_subject_match(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    mid = put_message(dc, "ent_a", "quarterly kestrel review", body="numbers inside", sender="ent_b")
    out = dc.search("kestrel")
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
    assert ids(dc.search("pelican")) == [mid]
    assert "**pelican**" in dc.search("pelican")["matches"][0]["snippet"]
    assert dc.search("albatross")["count"] == 0


def test_body_stored_as_an_artifact_is_searched(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    dc = rewrite_roster(dc, limits=dataclasses.replace(dc.roster.limits, body_inline_max=64))
    body = "filler words " * 20 + "the marmoset escaped"
    sent = dc.send(to="ent_a", sender="ent_b", subject="long one", body=body)
    letter = dc.store.read(entity("ent_a")).index[sent.id].data()
    assert letter["content"]["body"] == "" and letter["content"]["body_ref"].startswith("sha256:")
    assert ids(dc.search("marmoset")) == [sent.id]


def test_text_artifacts_are_searched_binary_ones_only_by_name(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    text = tmp_path / "notes.txt"
    text.write_text("the narwhal report, in full\n")
    binary = tmp_path / "photo.raw"
    binary.write_bytes(b"\xff\xfe\x00narwhal\x00" * 10)
    a = dc.send(to="ent_a", sender="ent_b", subject="see attached", artifact_paths=[text]).id
    b = dc.send(to="ent_a", sender="ent_b", subject="a picture", artifact_paths=[binary]).id
    assert ids(dc.search("narwhal")) == [a]  # the binary blob's bytes are not text
    assert ids(dc.search("photo")) == [b]  # its name is
    assert ids(dc.search("notes")) == [a]


def test_outbound_drafts_are_not_searched(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    dc.draft(to="ent_b", sender="ent_a", subject="unsent gazelle")
    assert dc.search("gazelle")["count"] == 0


@pytest.mark.parametrize(
    "key", ["subject", "routing", "content", "body", "entity_id", "priority", "lifecycle", "thread_id", "message"]
)
def test_a_json_key_name_matches_only_text_holding_that_word(tmp_path: Path, key: str) -> None:
    dc = mail_home(tmp_path)
    for n in range(3):
        put_message(dc, "ent_a", f"plain note {n}", body="nothing special here", ts=T(hour=10 + n))
    holder = put_message(dc, "ent_b", "about the envelope", body=f"the {key} word, once", ts=T(hour=9))
    out = dc.search(key)
    assert ids(out) == [holder] and out["count"] == 1


def test_diacritics_and_case_are_folded(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    mid = put_message(dc, "ent_a", "Meeting at the Café")
    assert ids(dc.search("cafe")) == [mid]
    assert ids(dc.search("CAFÉ")) == [mid]


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
    assert ids(dc.search(query)) == [docs[k] for k in expected]


@pytest.mark.parametrize("query", ["", "   ", '"', "*", "-", "NEAR(", '" * - ()'])
def test_a_query_without_a_word_is_refused(words_home: tuple[Dovecote, dict[str, str]], query: str) -> None:
    dc, _ = words_home
    if query.strip() == "NEAR(":
        assert dc.search(query)["count"] == 1  # NEAR is a word: the message that holds it
        return
    with pytest.raises(Refusal) as e:
        dc.search(query)
    assert e.value.reason == "missing_field"


def test_fts_query_quotes_every_token() -> None:
    assert search_mod.fts_query('a "b" OR c*') == '"a" """b""" "OR" "c*"'
    assert search_mod.fts_query("NEAR( x") == '"NEAR(" "x"'


# -- order, filters, terminal states ---------------------------------------------------


def test_newest_first_by_letter_ts_across_boxes(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    # ledger order and box order disagree with time order on purpose
    late_a = put_message(dc, "ent_a", "heron late", ts=T(day=9))
    early_a = put_message(dc, "ent_a", "heron early", ts=T(day=1))
    mid_b = put_message(dc, "ent_b", "heron middle", ts=T(day=5))
    offset = put_message(dc, "ent_b", "heron offset", ts="2026-07-07T12:00:00+02:00")  # 10:00Z on the 7th
    sub = put_message(dc, "ent_b", "heron subsecond", ts="2026-07-05T10:00:00.500Z")
    assert ids(dc.search("heron")) == [late_a, offset, sub, mid_b, early_a]


def test_equal_times_are_ordered_by_id_and_stable_across_rebuilds(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    same = [put_message(dc, "ent_a", f"ibis {n}", ts=T()) for n in range(6)]
    first = ids(dc.search("ibis"))
    assert first == sorted(same, key=lambda i: int(i[:5], 16), reverse=True)
    os.unlink(index_path(dc))
    assert ids(dc.search("ibis")) == first


def test_colliding_rowids_take_the_next_free_slot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_index, "ts_key", lambda ts, lid: 1_000_000)
    dc = mail_home(tmp_path)
    made = {put_message(dc, "ent_a", f"crane {n}", ts=T(hour=n)) for n in range(4)}
    out = dc.search("crane")
    assert out["count"] == 4 and set(ids(out)) == made


def test_entity_filter(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, "ent_a", "ent_b", "ent.c-1")
    a = put_message(dc, "ent_a", "osprey one", ts=T(hour=1))
    b = put_message(dc, "ent_b", "osprey two", ts=T(hour=2))
    c = put_message(dc, "ent.c-1", "osprey three", ts=T(hour=3))
    assert ids(dc.search("osprey")) == [c, b, a]
    assert ids(dc.search("osprey", entity="ent_a")) == [a]
    assert ids(dc.search("osprey", entity="ent.c-1")) == [c]
    assert dc.search("osprey", entity="ent_b")["count"] == 1
    with pytest.raises(Refusal) as e:
        dc.search("osprey", entity="ent_nobody")
    assert e.value.reason == "unknown_entity"
    with pytest.raises(Refusal) as e:
        dc.search("osprey", entity="../etc")
    assert e.value.reason == "invalid_name"


def test_an_entity_gone_from_the_roster_is_no_longer_searched(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    put_message(dc, "ent_a", "puffin a")
    b = put_message(dc, "ent_b", "puffin b")
    assert dc.search("puffin")["count"] == 2
    kept = tuple(e for e in dc.roster.entities if e.id == "ent_b")
    dc2 = rewrite_roster(dc, entities=kept)
    assert ids(dc2.search("puffin")) == [b]
    assert ids(dc.search("puffin", entity="ent_a"))  # the old handle still has its roster


def test_terminal_items_are_excluded_unless_asked(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    done = put_message(dc, "ent_a", "stork done", ts=T(hour=1))
    nacked = put_message(dc, "ent_a", "stork declined", ts=T(hour=2))
    active = put_message(dc, "ent_a", "stork active", ts=T(hour=3))
    deferred = put_message(dc, "ent_a", "stork deferred", ts=T(hour=4))
    waiting = put_message(dc, "ent_a", "stork waiting", ts=T(hour=5))
    finish(dc, "ent_a", done)
    decline(dc, "ent_a", nacked)
    dc.transition("ent_a", active, "claim")
    dc.transition("ent_a", deferred, "defer", until="2099-01-01T00:00:00Z")
    out = dc.search("stork")
    assert ids(out) == [waiting, deferred, active] and out["count"] == 3
    assert [m["state"] for m in out["matches"]] == ["WAIT", "DEFER", "ACTIVE"]
    every = dc.search("stork", include_terminal=True)
    assert ids(every) == [waiting, deferred, active, nacked, done] and every["count"] == 5
    assert [m["state"] for m in every["matches"]] == ["WAIT", "DEFER", "ACTIVE", "NACK", "DONE"]


def test_an_item_finished_after_the_index_was_built_drops_out(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    a = put_message(dc, "ent_a", "swift a", ts=T(hour=1))
    b = put_message(dc, "ent_a", "swift b", ts=T(hour=2))
    assert ids(dc.search("swift")) == [b, a]
    other = Dovecote(dc.layout.root)  # another handle finishes it
    finish(other, "ent_a", b)
    assert ids(dc.search("swift")) == [a]
    assert ids(dc.search("swift", include_terminal=True)) == [b, a]
    # a message and its completion arriving together, after a search with the filter off
    c = put_message(dc, "ent_a", "swift c", ts=T(hour=3))
    assert ids(dc.search("swift", include_terminal=True)) == [c, b, a]
    finish(other, "ent_a", c)
    d = put_message(dc, "ent_a", "swift d", ts=T(hour=4))
    finish(other, "ent_a", d)
    assert ids(dc.search("swift")) == [a]


def test_states_are_never_stored_in_the_index(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    mid = put_message(dc, "ent_a", "wren")
    finish(dc, "ent_a", mid)
    dc.search("wren")
    conn = sqlite3.connect(index_path(dc))
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        cols = {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in ("docs", "boxes", "fts")}
        rows = [row for t in ("docs", "boxes", "meta") for row in conn.execute(f"SELECT * FROM {t}")]
        dumped = b"\n".join(str(row).encode() for row in rows)
    finally:
        conn.close()
    assert "term" not in tables  # the DONE/NACK filter lives in the connection's temp schema only
    assert cols["docs"] == ["rowid", "entity", "id", "ts", "subject", "sender"]
    assert cols["fts"] == ["subject", "body", "attach", "ent"]
    assert b"DONE" not in dumped and b"ACTIVE" not in dumped


def test_limit_and_truncation(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    made = [put_message(dc, "ent_a", f"tern {n}", ts=T(hour=n)) for n in range(7)]
    out = dc.search("tern", limit=3)
    assert ids(out) == made[::-1][:3] and out["count"] == 7 and out["truncated"] is True and out["limit"] == 3
    assert dc.search("tern", limit=7)["truncated"] is False
    for bad in (0, -1):
        with pytest.raises(Refusal) as e:
            dc.search("tern", limit=bad)
        assert e.value.reason == "invalid_field"


# -- the index is a cache ------------------------------------------------------------------


def test_the_index_lives_in_the_cache_folder_and_on_the_warm_handle(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    put_message(dc, "ent_a", "loon")
    assert not index_path(dc).exists()
    dc.search("loon")
    assert index_path(dc).is_file()
    conn = dc.warm[search_index.WARM_KEY].conn
    dc.search("loon")
    assert dc.warm[search_index.WARM_KEY].conn is conn


def test_a_deleted_index_is_rebuilt_with_the_same_answer(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    for n in range(5):
        put_message(dc, "ent_a" if n % 2 else "ent_b", f"plover {n}", body=f"shore {n}", ts=T(hour=n))
    finish(dc, "ent_b", ids(dc.search("plover", entity="ent_b"))[0])
    before = dc.search("plover"), dc.search("shore", include_terminal=True)
    assert stats(dc)["rebuilds"] == 1
    for f in index_path(dc).parent.glob("search*"):
        f.unlink()
    after_warm = dc.search("plover"), dc.search("shore", include_terminal=True)  # same handle
    assert after_warm == before and stats(dc)["rebuilds"] == 2
    for f in index_path(dc).parent.glob("search*"):
        f.unlink()
    cold = Dovecote(dc.layout.root)
    assert (cold.search("plover"), cold.search("shore", include_terminal=True)) == before
    assert stats(cold)["rebuilds"] == 1 and stats(cold)["indexed"] == 5


@pytest.mark.parametrize("garbage", [b"", b"not a database at all" * 100, b"SQLite format 3\x00" + b"\x00" * 200])
def test_a_corrupt_index_file_is_rebuilt(tmp_path: Path, garbage: bytes) -> None:
    dc = mail_home(tmp_path)
    mid = put_message(dc, "ent_a", "gannet")
    before = dc.search("gannet")
    for f in index_path(dc).parent.glob("search*"):
        f.unlink()
    index_path(dc).write_bytes(garbage)
    cold = Dovecote(dc.layout.root)
    assert cold.search("gannet") == before and ids(before) == [mid]


def test_an_index_of_another_schema_is_rebuilt(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    put_message(dc, "ent_a", "shag")
    before = dc.search("shag")
    conn = sqlite3.connect(index_path(dc))
    conn.execute("UPDATE meta SET value = 'dovecote-search-v0' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    cold = Dovecote(dc.layout.root)
    assert cold.search("shag") == before and stats(cold)["rebuilds"] == 1


def test_an_appended_message_is_indexed_alone_without_a_rebuild(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    for n in range(4):
        put_message(dc, "ent_a", f"curlew {n}", ts=T(hour=n))
    dc.search("curlew")
    s0 = stats(dc)
    assert s0["indexed"] == 4
    writer = Dovecote(dc.layout.root)
    new = writer.send(to="ent_a", sender="ent_b", subject="curlew arrives", body="godwit too").id
    out = dc.search("godwit")
    assert ids(out) == [new]
    s1 = stats(dc)
    assert s1["indexed"] - s0["indexed"] == 1  # only the new letter
    assert s1["rebuilds"] == s0["rebuilds"] and s1["box_rebuilds"] == 0
    # a brand-new handle on the existing index file: nothing to rebuild, one letter to add
    cold = Dovecote(dc.layout.root)
    assert cold.search("curlew")["count"] == 5
    assert stats(cold) == {"rebuilds": 0, "box_rebuilds": 0, "indexed": 0}
    writer.send(to="ent_b", sender="ent_a", subject="dunlin")
    assert cold.search("dunlin")["count"] == 1
    assert stats(cold) == {"rebuilds": 0, "box_rebuilds": 0, "indexed": 1}


def test_a_replaced_ledger_is_indexed_again(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    keep = put_message(dc, "ent_a", "avocet kept", ts=T(hour=1))
    put_message(dc, "ent_a", "avocet dropped", ts=T(hour=2))
    other = put_message(dc, "ent_b", "avocet elsewhere", ts=T(hour=3))
    assert dc.search("avocet")["count"] == 3
    path = dc.store.path(entity("ent_a"))
    assert path is not None
    first_line = path.read_bytes().split(b"\n")[0] + b"\n"
    tmp = path.with_name("replacement.tmp")
    tmp.write_bytes(first_line)
    os.replace(tmp, path)  # another inode (e.g. a git checkout)
    out = dc.search("avocet")
    assert ids(out) == [other, keep]
    assert stats(dc)["box_rebuilds"] == 1 and stats(dc)["rebuilds"] == 1
    cold = Dovecote(dc.layout.root)
    assert cold.search("avocet") == out


def test_a_ledger_shrunk_in_place_is_indexed_again(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    keep = put_message(dc, "ent_a", "sanderling kept", ts=T(hour=1))
    put_message(dc, "ent_a", "sanderling dropped", ts=T(hour=2))
    dc.search("sanderling")
    path = dc.store.path(entity("ent_a"))
    assert path is not None
    first = len(path.read_bytes().split(b"\n")[0]) + 1
    os.truncate(path, first)  # same inode, shorter
    cold = Dovecote(dc.layout.root)
    assert ids(cold.search("sanderling")) == [keep]
    assert stats(cold)["box_rebuilds"] == 1


def test_search_writes_nothing_but_its_cache(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    put_message(dc, "ent_a", "merlin")
    before = snapshot(dc.layout.root)
    dc.search("merlin")
    after = snapshot(dc.layout.root)
    assert {k: v for k, v in after.items() if not k.startswith("cache/")} == before


# -- the command line ----------------------------------------------------------------------


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


def test_a_same_size_rewrite_in_place_is_indexed_again_by_a_cold_process(tmp_path: Path) -> None:
    # issue 6, item 11: the index trusted its checkpoint (it checked one byte)
    dc = mail_home(tmp_path)
    keep = put_message(dc, "ent_a", "curlew kept", ts=T(hour=1))
    put_message(dc, "ent_a", "curlew plover", ts=T(hour=2))
    assert dc.search("plover")["count"] == 1
    path = dc.store.path(entity("ent_a"))
    assert path is not None
    _same_size_edit(path, b"plover", b"dunlin")
    cold = Dovecote(dc.layout.root)
    assert cold.search("plover")["count"] == 0, "answered from a stale index"
    edited = cold.search("dunlin")
    assert edited["count"] == 1 and edited["matches"][0]["id"] != keep
    assert stats(cold)["box_rebuilds"] == 1
    r = run_cli(tmp_path, "search", "plover", "--json", home=dc.layout.root)
    assert orjson.loads(r.stdout)["count"] == 0
    assert Dovecote(dc.layout.root).search("curlew") == cold.search("curlew")


def test_a_same_size_rewrite_in_place_is_noticed_by_a_warm_handle(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    put_message(dc, "ent_a", "godwit kept", ts=T(hour=1))
    put_message(dc, "ent_a", "godwit plover", ts=T(hour=2))
    assert dc.search("plover")["count"] == 1
    path = dc.store.path(entity("ent_a"))
    assert path is not None
    time.sleep(0.05)  # a later edit: its mtime differs from the last read's (ledger.py names the same-tick blind spot)
    _same_size_edit(path, b"plover", b"dunlin")
    assert dc.search("plover")["count"] == 0
    assert dc.search("dunlin")["count"] == 1
    assert dc.search("godwit") == Dovecote(dc.layout.root).search("godwit")

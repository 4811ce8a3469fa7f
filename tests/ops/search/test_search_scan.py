"""A search over a freshly built index (the first build of an empty file, which takes its own
journal and merge settings) answers what a plain scan of the messages answers."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.verbs import Search
from searchhelpers import T, mail_home, put_message

WORDS = ("kestrel", "heron", "Owl", "wren", "finch", "raven")
_text = st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join)
_msgs = st.lists(st.tuples(st.sampled_from(("ent_a", "ent_b")), _text, _text), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None)
@given(msgs=_msgs, query=st.sampled_from(WORDS), both=st.booleans())
def test_a_first_build_answers_what_a_plain_scan_answers(msgs: list[tuple[str, str, str]], query: str,
                                                         both: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dc = mail_home(Path(tmp))
        ids = {}
        for k, (to, subject, body) in enumerate(msgs):
            mid = put_message(dc, to, f"{subject} n{k}", body=body, ts=T(minute=k))
            ids[mid] = (to, subject.lower().split() + body.lower().split())
        words = [query, WORDS[0]] if both else [query]
        expect = [(mid, to) for mid, (to, terms) in ids.items() if all(w.lower() in terms for w in words)]
        expect.reverse()  # newest first
        cold = Dovecote(dc.layout.root)  # a new handle: the index file is built from nothing
        out = builtins(cold.search(Search(query=" ".join(words), limit=100)))
        assert [(m["id"], m["entity"]) for m in out["matches"]] == expect
        assert out["count"] == len(expect)
        index = dc.layout.cache / "search.sqlite"
        assert index.exists()
        with sqlite3.connect(index) as conn:  # built through a rollback journal, then kept in WAL mode
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        conn.close()
        # reopened, not rebuilt
        again = builtins(Dovecote(dc.layout.root).search(Search(query=" ".join(words), limit=100)))
        assert again == out

"""The search index's item table answers what a cold fold of the whole box answers.

Random boxes: messages and lifecycle links (forks, orphans, links before their
message, defers with dues) appended in random order, the index brought up to
date at random points in between. After every update, each search answer
(``include_terminal`` both ways) must equal the one derived from a cold
``InboxBook`` fed the whole box: the same items, the same states, the same count.
"""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dovecote.derive.inbox.book import InboxBook
from dovecote.derive.lifecycle import TERMINAL, Link, effective
from dovecote.model.addresses import entity
from dovecote.model.envelope import build_message
from dovecote.model.letters import canonical_line, decode_line, letter_id
from dovecote.model.results import builtins
from dovecote.ops.search.items import LinkRow, link_row
from dovecote.verbs import Search
from searchhelpers import T, mail_home

pytestmark = pytest.mark.both_stores

NOW = datetime(2026, 7, 20, tzinfo=UTC)
KINDS = ("seen", "claim", "complete", "defer", "undefer", "resurface", "nack")


@st.composite
def boxes(draw: st.DrawFn) -> tuple[list[bytes], list[int]]:
    """Lines of one entity box in arrival order, and where the index catches up."""
    n_items = draw(st.integers(1, 5))
    lines: list[bytes] = []
    for k in range(n_items):
        due = draw(st.sampled_from([None, None, 3]))
        msg = build_message(ts=T(hour=k), sender="ent_b", recipient="ent_a", subject=f"heron n{k}",
                            defer_until_tic=due)
        item = letter_id(canonical_line(msg))
        lines.append(canonical_line(msg))
        chain = [item]
        for j in range(draw(st.integers(0, 5))):
            kind = draw(st.sampled_from(KINDS))
            link: dict[str, object] = {
                "ts": T(hour=k, minute=draw(st.integers(0, 59))), "agent": "ent_a", "kind": kind, "ref": item,
                "prev": draw(st.sampled_from(chain)), "n": j,
            }
            if kind == "defer":
                link.update(draw(st.sampled_from([{"until": "2026-07-10T00:00:00Z"}, {"until": "2099-01-01T00:00:00Z"},
                                                  {"until_tic": 2}])))
            line = canonical_line(link)
            chain.append(letter_id(line))
            lines.append(line)
    order = draw(st.permutations(lines))
    cuts = sorted(draw(st.lists(st.integers(0, len(order)), max_size=4)))
    return list(order), cuts


def cold(lines: list[bytes], include_terminal: bool) -> tuple[int, set[tuple[str, str]]]:
    """What a fold of the whole box says the search must answer."""
    book = InboxBook("ent_a")
    book.add([lt for lt in (decode_line(line) for line in lines) if lt is not None])
    rows = set()
    for item in book.items.values():
        r = book.replay_of(item)
        if include_terminal or r.state not in TERMINAL:
            rows.add((item.id, str(effective(r, None, NOW))))
    return len(rows), rows


@settings(max_examples=60, deadline=None)
@given(box=boxes())
def test_search_states_equal_a_cold_fold(box: tuple[list[bytes], list[int]]) -> None:
    lines, cuts = box
    with tempfile.TemporaryDirectory() as tmp:
        dc = mail_home(Path(tmp))
        done = 0
        for cut in [*cuts, len(lines)]:
            if cut > done:
                dc.store.append(entity("ent_a"), lines[done:cut])
                done = cut
            for include_terminal in (False, True):
                out = builtins(dc.search(Search(query="heron", include_terminal=include_terminal, limit=100), now=NOW))
                got = {(m["id"], m["state"]) for m in out["matches"]}
                assert (out["count"], got) == cold(lines[:done], include_terminal)


@pytest.mark.files_only
def test_verify_catches_a_state_table_that_lies(tmp_path: Path) -> None:
    import sqlite3

    from searchhelpers import finish, put_message

    dc = mail_home(tmp_path)
    done = put_message(dc, "ent_a", "kettle descaling", ts=T(hour=1))
    put_message(dc, "ent_a", "kettle warranty", ts=T(hour=2))
    finish(dc, "ent_a", done)
    assert dc.search(Search(query="kettle")).count == 1
    ok = dc.verify()
    assert ok.ok and {"search kettle", "search kettle --include-terminal"} <= set(ok.checked)
    builtins(dc.search(Search(query="kettle")))
    db = sqlite3.connect(dc.layout.cache / "search.sqlite")
    db.execute("DELETE FROM term")  # the DONE item is no longer known to be DONE
    db.commit()
    db.close()
    result = dc.verify()
    assert not result.ok and [d["read"] for d in result.differ] == ["search descaling", "search kettle"]


_ODD = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=1 << 64, max_value=1 << 70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8), st.lists(st.integers(), max_size=2), st.sampled_from(["5", "2026-07-10T00:00:00Z"]),
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(fields=st.dictionaries(st.sampled_from(["kind", "ref", "prev", "ts", "tic", "until_tic", "until", "reason"]),
                              _ODD, max_size=8))
def test_a_link_is_read_as_the_whole_line_reads_it(fields: dict[str, object]) -> None:
    """The typed link reader (only the keys replay needs) gives what ``Link.from_data`` of the
    whole line gives, for any value a foreign writer may put in those keys."""
    line = json.dumps({"agent": "a", "note": {"deep": [1, 2]}, **fields}).encode()  # json: wide numbers too
    letter = decode_line(line)
    assert letter is not None
    link = Link.from_data(letter.id, letter.data())
    assert link_row(letter) == (link.ref, LinkRow.of(link))

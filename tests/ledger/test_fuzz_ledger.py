"""Fuzz: hostile ledger lines (a hand edit, a bad merge, another tool's writer) in the boxes every read walks.

A line may be any bytes: invalid UTF-8, a lone surrogate escaped in JSON, control characters, a value nested
deeper than any decoder allows, a huge string or integer, a letter whose fields have the wrong types. Whatever
the lines, every read (sweep, box, inbox, show, search, verify, doctor) answers or refuses with a keyword, no
byte already on disk changes, and a letter sent afterwards is appended on a line of its own and read back
exactly as it was sent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import strategies as st

from dovecote.handle.api import Dovecote
from dovecote.ledger.jsonl import LedgerReader
from dovecote.model.addresses import entity
from dovecote.model.results import builtins
from dovecote.verbs import Box, Inbox, Search, Show, Sweep
from fuzzhelpers import DEPTHS, TEXT, VALUE, assert_only_grew, dumps, fuzz, refused_or_done
from helpers import snapshot
from mailhelpers import ENTITY, SENDER, mail_home, send

FIELDS = ("ts", "agent", "kind", "class", "repo", "brain", "tool", "answers", "ref", "symptom", "what", "to",
          "subject", "body", "sender", "recipient", "priority", "category", "fingerprint", "disposition")
KINDS = ("message", "claim", "complete", "seen", "defer", "nack", "ack", "task", "response", "mission", "notify",
         "sent", "receipt", "report", "resurface", "undefer", "draft")
#: A letter-shaped object whose fields are anything.
_LETTERS = st.dictionaries(st.sampled_from(FIELDS) | TEXT, VALUE, max_size=8)
_TYPED = st.fixed_dictionaries({"kind": st.sampled_from(KINDS), "ref": VALUE | st.text("0123456789abcdef", min_size=12,
                                max_size=12), "agent": VALUE, "ts": VALUE}, optional={"to": VALUE, "subject": VALUE})

LINES = st.one_of(
    st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" ")),
    _LETTERS.map(dumps),
    _TYPED.map(dumps),
    st.integers(1, 3000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(1, 3000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
    st.sampled_from([
        b'{"agent":"\xff\xfe","what":"bad utf-8"}', b'{"what":"\\ud800"}', b'{"what":"a\x00b\x01\x1b"}',
        b'{"ts":1e999}', b'{"n":' + b"9" * 5000 + b"}", b'{"what":"' + b"x" * 300_000 + b'"}', b"\r", b"\x00" * 10,
        b'{"kind":"claim","ref":{"$ne":1}}', b'{"kind":"message","to":"entity:../../x","subject":["a"]}',
        b'{"a":1}{"b":2}', b'{"a":1', b"null", b"[]", b'"just a string"', b"\xef\xbb\xbf{}",
    ]),
)
#: Several hostile lines, then maybe no final newline (a torn tail).
BATCHES = st.tuples(st.lists(LINES, min_size=1, max_size=4), st.booleans())


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with mail in ENTITY's box (what the hostile lines are written after)."""
    tmp = tmp_path_factory.mktemp("fuzzledger")
    dc = mail_home(tmp)
    send(dc, "first letter")
    return tmp


def _copy(base: Path, tmp: Path) -> Dovecote:
    import shutil

    from helpers import open_home

    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(base, tmp, symlinks=True)
    return open_home(tmp / "owner" / ".dovecote")


def _reads(dc: Dovecote, ref: str) -> None:
    refused_or_done(lambda: dc.sweep(Sweep()))
    refused_or_done(lambda: dc.box(Box(address=str(entity(ENTITY)))))
    refused_or_done(lambda: builtins(dc.inbox(Inbox(entity_id=ENTITY, include_terminal=True))))
    refused_or_done(lambda: dc.show(Show(entity_id=ENTITY, ref=ref)))
    refused_or_done(lambda: builtins(dc.search(Search(query="letter"))))
    refused_or_done(dc.doctor)
    refused_or_done(dc.verify)


@pytest.mark.parametrize("depth", DEPTHS)
def test_no_hostile_line_breaks_a_read_or_loses_a_letter(base: Path, tmp_path: Path, depth: str) -> None:
    def check(batch: tuple[list[bytes], bool]) -> None:
        lines, torn = batch
        dc = _copy(base, tmp_path / "h")
        path = dc.layout.entity_box(ENTITY)
        with path.open("ab") as f:
            f.write(b"\n".join(lines) + (b"" if torn else b"\n"))
        before = snapshot(dc.layout.root)
        reader = LedgerReader(path)
        reader.refresh()  # the reader itself: never raises on content
        good = {x.id for x in reader.letters}
        _reads(dc, next(iter(good)))
        ref = send(dc, "after the storm")
        after = assert_only_grew(before, dc.layout.root)
        again = LedgerReader(path)
        again.refresh()
        assert good | {ref} <= {x.id for x in again.letters}  # nothing readable before is lost
        shown = builtins(dc.show(Show(entity_id=ENTITY, ref=ref)))
        assert shown["envelope"]["subject"] == "after the storm" and shown["envelope"]["sender"] == SENDER
        assert shown["body"] == "body of after the storm"
        assert after[str(path.relative_to(dc.layout.root))].endswith(b"\n")

    fuzz(depth, "ledger lines", BATCHES, check)


@pytest.mark.parametrize("depth", DEPTHS)
def test_the_reader_keeps_object_lines_whole_and_skips_the_rest(tmp_path: Path, depth: str) -> None:
    """A letter is a line of the file that decodes to a JSON object, kept byte for byte, its id its bytes'."""
    from dovecote.model.letters import letter_id

    path = tmp_path / "letters.jsonl"

    def check(lines: list[bytes]) -> None:
        path.write_bytes(b"".join(x + b"\n" for x in lines))
        r = LedgerReader(path)
        r.refresh()
        on_disk = {x.rstrip(b"\r") for x in lines}
        for letter in r.letters:
            assert letter.raw in on_disk and letter.id == letter_id(letter.raw)
            assert isinstance(letter.data(), dict)  # orjson, or the standard library past its limits
        assert len({x.id for x in r.letters}) == len(r.letters)  # each letter once

    fuzz(depth, "ledger reader", st.lists(LINES, min_size=1, max_size=6), check)


def test_a_letter_with_a_5000_digit_number_reads_whole(tmp_path: Path) -> None:
    """Found by the fuzz: ``Letter.data()`` raised ValueError (Python's int digit limit) on such a line."""
    path = tmp_path / "letters.jsonl"
    path.write_bytes(b'{"what":"w","n":' + b"9" * 5000 + b"}\n")
    r = LedgerReader(path)
    r.refresh()
    (letter,) = r.letters
    assert letter.data() == {"what": "w", "n": float("inf")}

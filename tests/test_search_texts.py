"""The search index's partial read of a message answers what the whole line answers.

``read_message`` decodes a few typed leaves of a message line; ``Indexed.of``
the envelope over the whole line is the reference. Fixed shapes (foreign,
legacy, malformed blocks, duplicate keys, huge numbers) and a property over
random lines built from every kind of value at every key the reader looks at.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.envelope import Envelope, build_message
from dovecote.letters import Letter, canonical_line, decode_line
from dovecote.ops import search_texts


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

"""The search index's partial read of a message answers what the whole line answers."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from dovecote.envelope import Envelope, build_message
from dovecote.letters import canonical_line, decode_line
from dovecote.ops import search_texts

PROPERTIES = ("sender", "subject", "body", "body_ref", "artifact_refs", "defer_until_tic")

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
    whole, part = Envelope(letter.data()), search_texts.envelope_of(letter)
    for prop in PROPERTIES:
        assert getattr(part, prop) == getattr(whole, prop), prop
    assert part.data.get("content") == whole.data.get("content")


def test_duplicate_keys_and_huge_numbers_read_as_the_whole_line_reads() -> None:
    raw = b'{"kind":"message","subject":"first","subject":"last","lifecycle":{"defer_until_tic":' + b"9" * 40 + b"}}"
    letter = decode_line(raw)
    assert letter is not None
    whole, part = Envelope(letter.data()), search_texts.envelope_of(letter)
    assert part.subject == whole.subject == "last"
    assert part.defer_until_tic == whole.defer_until_tic


def test_a_block_keeps_every_text_and_cuts_one_out() -> None:
    texts = [(f"body {i} ünïcode", f"attach {i}") for i in range(search_texts.BLOCK)]
    z = search_texts.pack(texts)
    assert len(z) < len(orjson.dumps(texts))
    for part, (body, attach) in enumerate(texts):
        assert search_texts.text_of(1, z, part, 0) == body
        assert search_texts.text_of(1, z, part, 1) == attach
    other = search_texts.pack([("another", "")])
    assert search_texts.text_of(1, other, 0, 0) == "another"  # same number, other bytes: decoded again

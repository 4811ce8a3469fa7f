"""``gc.wire``: the times and shapes gc's Go decoder reads."""

from __future__ import annotations

from dovecote.gc import wire
from dovecote.handle.mailbox import Piece
from gchelpers import RFC3339, decode_message

UUID7 = "msg_01a251aa-d62e-786f-9989-3d4b29b74b64"  # 0x01a251aad62e ms = 2026-12-07T18:01:20.174Z


def test_a_message_ids_uuid7_gives_the_millisecond_when_it_agrees_with_the_letters_second() -> None:
    assert wire.created_at("2026-12-07T18:01:20Z", UUID7) == "2026-12-07T18:01:20.174Z"
    assert wire.created_at("2026-12-07T18:01:21Z", UUID7) == "2026-12-07T18:01:20.174Z"  # ts read a moment later
    assert wire.created_at("2026-07-05T09:00:00Z", UUID7) == "2026-07-05T09:00:00Z"  # disagrees: the ts stands
    assert wire.created_at("", UUID7) == "2026-12-07T18:01:20.174Z"


def test_every_time_written_has_a_zone_or_is_left_out() -> None:
    assert wire.created_at("2026-07-05T09:00:00", None) == "2026-07-05T09:00:00Z"  # naive: UTC, as dovecote reads
    assert wire.created_at("2026-07-05T11:00:00+02:00", "msg_key_abc") == "2026-07-05T09:00:00Z"
    assert wire.created_at("yesterday", "msg_not-a-uuid") is None
    assert wire.created_at("", None) is None
    for text in ("2026-07-05T09:00:00Z", "2026-12-07T18:01:20.174Z"):
        assert RFC3339.match(text)


def test_a_message_decodes_as_gc_decodes_it() -> None:
    p = Piece("546a736bc8f0", "alice", "bob", "s", "b", "2026-12-07T18:01:20Z", UUID7, None, None, "urgent",
              False, True)
    m = decode_message(wire.message(p))
    assert (m.id, m.priority, m.cc, m.thread_id, m.reply_to) == ("546a736bc8f0", 0, [], "", "")
    assert wire.many([]) == "" and wire.count(0, 0) == '{"total":0,"unread":0}'

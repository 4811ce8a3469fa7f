"""Gas City's mail conformance suite (``mailtest.RunProviderTests``), case by case, against ``dovecote-gc-mail``.

Every case of the upstream suite (its 32 at a46ccb1 and the four ``ArchiveMany_*`` added later,
which over exec are loops of ``archive``), each on a fresh city, through ``gchelpers.ExecProvider``:
the installed script run as gc runs it, its answers decoded as gc decodes them. The case names,
and the names, subjects and bodies each case sends (most with an empty subject), are upstream's,
so a failure here names the gc case that would fail.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gchelpers import AlreadyArchived, ExecProvider, ProviderError, provider

pytestmark = pytest.mark.files_only


@pytest.fixture
def p(tmp_path: Path) -> ExecProvider:
    return provider(tmp_path)


def test_send_returns_matching_fields(p: ExecProvider) -> None:
    m = p.send("alice", "bob", "Greetings", "hello")
    assert m.id != ""
    assert (m.from_, m.to, m.subject, m.body) == ("alice", "bob", "Greetings", "hello")


def test_send_assigns_unique_ids(p: ExecProvider) -> None:
    assert p.send("alice", "bob", "", "first").id != p.send("alice", "bob", "", "second").id


def test_send_sets_recent_created_at(p: ExecProvider) -> None:
    before = datetime.now(UTC)
    m = p.send("alice", "bob", "", "timestamped")
    assert abs(m.created_at - before) <= timedelta(minutes=1)


def test_inbox_empty_returns_nil(p: ExecProvider) -> None:
    assert p.inbox("bob") is None


def test_inbox_returns_messages_sent_to_recipient(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "for bob")
    msgs = p.inbox("bob")
    assert msgs is not None and [m.id for m in msgs] == [sent.id]


def test_inbox_filters_by_recipient(p: ExecProvider) -> None:
    p.send("alice", "bob", "", "for bob")
    p.send("alice", "charlie", "", "for charlie")
    msgs = p.inbox("bob")
    assert msgs is not None and len(msgs) == 1 and msgs[0].to == "bob"


def test_inbox_excludes_read_messages(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "will be read")
    p.read(sent.id)
    assert not p.inbox("bob")


def test_check_returns_unread_messages(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "check me")
    msgs = p.check("bob")
    assert msgs is not None and [m.id for m in msgs] == [sent.id]


def test_check_does_not_mark_as_read(p: ExecProvider) -> None:
    p.send("alice", "bob", "", "peek")
    p.check("bob")
    assert len(p.inbox("bob") or []) == 1


def test_read_returns_correct_message(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "Sub", "read me")
    m = p.read(sent.id)
    assert (m.id, m.from_, m.to, m.body) == (sent.id, "alice", "bob", "read me")


def test_read_marks_as_read(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "once")
    p.read(sent.id)
    assert not p.inbox("bob")


def test_read_message_still_accessible(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "still here")
    p.read(sent.id)
    assert p.get(sent.id).body == "still here"


def test_read_unknown_id_returns_error(p: ExecProvider) -> None:
    with pytest.raises(ProviderError):
        p.read("nonexistent")


def test_get_returns_message(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "Hi", "body")
    m = p.get(sent.id)
    assert (m.id, m.body) == (sent.id, "body")


def test_get_does_not_mark_read(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "peek")
    p.get(sent.id)
    assert len(p.inbox("bob") or []) == 1


def test_get_unknown_id_errors(p: ExecProvider) -> None:
    with pytest.raises(ProviderError):
        p.get("nonexistent")


def test_mark_read_filters_from_inbox(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "mark me")
    p.mark_read(sent.id)
    assert not p.inbox("bob")


def test_mark_unread_restores_to_inbox(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "toggle")
    p.mark_read(sent.id)
    p.mark_unread(sent.id)
    assert len(p.inbox("bob") or []) == 1


def test_reply_inherits_thread_id(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "Hello", "first")
    reply = p.reply(sent.id, "bob", "RE: Hello", "reply")
    assert reply.thread_id == sent.thread_id


def test_reply_sets_reply_to(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "Hello", "first")
    assert p.reply(sent.id, "bob", "RE: Hello", "reply").reply_to == sent.id


def test_reply_goes_to_original_sender(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "Hello", "first")
    reply = p.reply(sent.id, "bob", "RE: Hello", "reply")
    assert (reply.to, reply.from_) == ("alice", "bob")


def test_thread_returns_all_in_thread(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "Hello", "first")
    p.reply(sent.id, "bob", "RE: Hello", "second")
    assert len(p.thread(sent.thread_id) or []) == 2


def test_thread_empty(p: ExecProvider) -> None:
    assert not p.thread("nonexistent-thread")


def test_count_total_and_unread(p: ExecProvider) -> None:
    p.send("alice", "bob", "", "msg1")
    second = p.send("alice", "bob", "", "msg2")
    p.mark_read(second.id)
    assert p.count("bob") == (2, 1)


def test_count_empty_inbox(p: ExecProvider) -> None:
    assert p.count("nobody") == (0, 0)


def test_delete_removes_from_all(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "delete me")
    p.delete(sent.id)
    assert not p.inbox("bob")


def test_archive_removes_from_inbox(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "archive me")
    p.archive(sent.id)
    assert not p.inbox("bob")


def test_archive_already_archived_returns_error(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "double archive")
    p.archive(sent.id)
    with pytest.raises(AlreadyArchived):
        p.archive(sent.id)


def test_archive_unknown_id_returns_error(p: ExecProvider) -> None:
    with pytest.raises(ProviderError):
        p.archive("nonexistent")


def test_archive_many_all_succeed(p: ExecProvider) -> None:
    ids = [p.send("alice", "bob", "", "batch").id for _ in range(3)]
    results = p.archive_many(ids)
    assert [mid for mid, _ in results] == ids and all(err is None for _, err in results)
    assert not p.inbox("bob")


def test_archive_many_empty_returns_nil(p: ExecProvider) -> None:
    assert p.archive_many([]) == []
    assert p.calls == []  # over exec an empty batch calls nothing


def test_archive_many_preserves_input_order(p: ExecProvider) -> None:
    one, two, three = (p.send("alice", "bob", "", "order").id for _ in range(3))
    results = p.archive_many([three, one, two])
    assert [mid for mid, _ in results] == [three, one, two] and all(err is None for _, err in results)


def test_archive_many_mixed_open_closed(p: ExecProvider) -> None:
    one, two, three = (p.send("alice", "bob", "", "mixed").id for _ in range(3))
    p.archive(two)
    results = p.archive_many([one, two, three])
    assert [mid for mid, _ in results] == [one, two, three]
    assert results[0][1] is None and results[2][1] is None
    assert isinstance(results[1][1], AlreadyArchived)
    assert not p.inbox("bob")


def test_lifecycle_send_inbox_read_inbox_empty(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "lifecycle")
    assert len(p.inbox("bob") or []) == 1
    assert p.read(sent.id).body == "lifecycle"
    assert not p.inbox("bob")
    assert p.get(sent.id).body == "lifecycle"


def test_lifecycle_send_check_archive_inbox_empty(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "check-archive")
    assert len(p.check("bob") or []) == 1
    p.archive(sent.id)
    assert not p.inbox("bob")


def test_lifecycle_mark_read_unread_toggle(p: ExecProvider) -> None:
    sent = p.send("alice", "bob", "", "toggle")
    p.mark_read(sent.id)
    assert not p.inbox("bob")
    p.mark_unread(sent.id)
    assert len(p.inbox("bob") or []) == 1

"""The response rail (issue 6, item 10): what counts as a response to an item.

An item that expects a response can be completed only once a ``response`` (or a
reply in the item's thread) naming it has been delivered to the item's sender,
or to the entity the item names in ``reply_to`` as ``entity:<id>``. A note to
self, an FYI to a third party, or a draft that was never sent do not count.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.addresses import entity
from dovecote.model.letters import canonical_line
from dovecote.model.results import builtins
from dovecote.verbs import Inbox, Message, Move, OutboxSend
from helpers import run_cli
from mailhelpers import mail_home

A, B, C = "ent_a", "ent_b", "ent_c"  # A asks, B must answer, C is a third party


def asked(tmp: Path, **fields: object) -> tuple[Dovecote, str]:
    """A sent B a query; B has read and claimed it."""
    dc = mail_home(tmp, A, B, C)
    q = dc.send(Message(sender=A, recipient=B, subject="which port?", category="query", **fields)).id
    dc.move(Move(kind="seen", entity_id=B, ref=q))
    dc.move(Move(kind="claim", entity_id=B, ref=q))
    return dc, q


def refused(dc: Dovecote, q: str) -> str:
    with pytest.raises(Refusal) as e:
        dc.move(Move(kind="complete", entity_id=B, ref=q))
    assert e.value.reason == "response_required"
    return e.value.detail


def completes(dc: Dovecote, q: str) -> None:
    assert dc.move(Move(kind="complete", entity_id=B, ref=q)).to_state == "DONE"


def test_a_note_to_self_is_not_a_response(tmp_path: Path) -> None:
    dc, q = asked(tmp_path)
    dc.send(Message(sender=B, recipient=B, subject="note: answer A about the port", category="response", reply_to=q))
    assert f"sent to {A}" in refused(dc, q)


def test_an_fyi_to_a_third_party_is_not_a_response(tmp_path: Path) -> None:
    dc, q = asked(tmp_path)
    dc.send(Message(sender=B, recipient=C, subject="fyi: A asked about the port", category="response", reply_to=q))
    dc.send(Message(sender=B, recipient=C, subject="fyi again", category="notification", reply_to=q))
    refused(dc, q)
    dc.send(Message(sender=B, recipient=A, subject="8080", category="response", reply_to=q))
    completes(dc, q)


def test_a_draft_counts_only_once_it_is_sent(tmp_path: Path) -> None:
    dc, q = asked(tmp_path)
    dc.draft(Message(sender=B, recipient=A, subject="8080", category="response", reply_to=q))
    refused(dc, q)
    (out,) = builtins(dc.outbox_send(OutboxSend(sender=B)))
    assert out["delivered"]
    completes(dc, q)


def test_a_reply_in_the_thread_counts_and_one_that_leaves_it_does_not(tmp_path: Path) -> None:
    dc, q = asked(tmp_path)
    dc.send(Message(
        sender=B, recipient=A, subject="elsewhere", category="notification", reply_to=q, thread_id="thread_other"
    ))
    refused(dc, q)  # names the item, but is neither a response nor in its thread
    dc.send(Message(
        sender=B, recipient=A, subject="8080, see the thread", category="notification", reply_to=q
    ))  # inherits it
    completes(dc, q)


def test_a_response_that_does_not_name_the_item_does_not_count(tmp_path: Path) -> None:
    dc, q = asked(tmp_path)
    thread = builtins(dc.inbox(Inbox(entity_id=B)))["items"][0]["thread_id"]
    dc.send(Message(
        sender=B, recipient=A, subject="in the thread, answering nothing", category="response", thread_id=thread
    ))
    refused(dc, q)


def test_reply_to_an_entity_redirects_where_the_response_must_go(tmp_path: Path) -> None:
    dc, q = asked(tmp_path, reply_to=f"entity:{C}")
    dc.send(Message(sender=B, recipient=A, subject="8080", category="response", reply_to=q))
    assert f"sent to {C}" in refused(dc, q)  # the sender asked for the answer to go to C
    dc.send(Message(sender=B, recipient=C, subject="8080", category="response", reply_to=q))
    completes(dc, q)


def test_a_redirect_to_an_unknown_entity_is_refused(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, A, B)
    with pytest.raises(Refusal, match="unknown_recipient"):
        dc.send(Message(sender=A, recipient=B, subject="q", category="query", reply_to="entity:ent_nobody"))


def test_an_item_from_an_unregistered_sender_has_no_one_to_answer(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, A, B)
    line = canonical_line({"kind": "message", "agent": "ent_gone", "message_id": "msg_foreign",
                           "sender": {"entity_id": "ent_gone"}, "recipient": {"entity_id": B},
                           "routing": {"category": "query", "thread_id": "thread_f"},
                           "content": {"subject": "from outside"}})
    ((q, _),) = dc.store.append(entity(B), [line])
    dc.move(Move(kind="seen", entity_id=B, ref=q))
    dc.move(Move(kind="claim", entity_id=B, ref=q))
    dc.send(Message(sender=B, recipient=B, subject="note", category="response", reply_to=q))  # the old rail took this
    assert "sent to ent_gone" in refused(dc, q)


def test_the_cli_redirect_and_response(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, A, B, C)
    home = dc.layout.root
    r = run_cli(tmp_path, "send", "--from", A, "--to", B, "--subject", "q", "--category", "query",
                "--reply-to", f"entity:{C}", home=home)
    assert r.returncode == 0, r.stderr.decode()
    q = r.stdout.decode().strip()
    for verb in ("seen", "claim"):
        assert run_cli(tmp_path, verb, B, q, home=home).returncode == 0
    run_cli(tmp_path, "send", "--from", B, "--to", A, "--subject", "a", "--category", "response",
            "--reply-to", q, home=home)
    r = run_cli(tmp_path, "complete", B, q, home=home)
    assert r.returncode == 2 and b"response_required" in r.stderr and f"sent to {C}".encode() in r.stderr
    run_cli(tmp_path, "send", "--from", B, "--to", C, "--subject", "a", "--category", "response",
            "--reply-to", q, home=home)
    assert run_cli(tmp_path, "complete", B, q, home=home).returncode == 0

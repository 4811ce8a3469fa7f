"""The item page reads its thread as a conversation (``http/thread.py``): oldest first, each letter's sender,
time and body, its quoted history folded away, and whom the thread waits on; a reply whose box the reader may
not open shows as sent, without its body."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from dovecote.http.app import create_app
from dovecote.http.thread import split_quote
from dovecote.verbs import Message
from mailhelpers import ENTITY, SENDER, mail_home

pytestmark = pytest.mark.files_only


def test_a_quote_is_the_trailing_run_of_quoted_lines_with_its_intro() -> None:
    assert split_quote("yes\n\nOn Monday, ent_a wrote:\n> can you?\n>\n> soon\n") == (
        "yes", "On Monday, ent_a wrote:\n> can you?\n>\n> soon")
    assert split_quote("> a quote that opens\nthen an answer") == ("> a quote that opens\nthen an answer", "")
    assert split_quote("no quote at all") == ("no quote at all", "")


def test_the_thread_reads_oldest_first_with_bodies_quotes_and_who_it_waits_on(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    first = dc.send(Message(recipient=ENTITY, sender=SENDER, subject="can you rebuild?", body="the index, today",
                            thread_id="th-9")).id
    dc.send(Message(recipient=SENDER, sender=ENTITY, subject="re: can you rebuild?", thread_id="th-9",
                    reply_to=first, body="on it\n\nOn Monday, ent_ops wrote:\n> the index, today"))
    with TestClient(create_app(dc)) as c:
        page = c.get(f"/entities/{ENTITY}/items/{first}").text
    section = page[page.index('class="conversation-section"'):page.index('aria-labelledby="h-history"')]
    assert section.index("the index, today") < section.index("on it")  # oldest first
    assert "waiting on <strong>ent_ops</strong>" in section  # the last word was this box's reply
    assert "<details><summary>quoted history (2 lines)</summary>" in section
    assert section.count('<li data-id="thread:') == 2


def test_a_reply_into_a_box_the_reader_may_not_open_shows_without_its_body(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    first = dc.send(Message(recipient=ENTITY, sender=SENDER, subject="hello", body="hi", thread_id="th-1")).id
    dc.send(Message(recipient=SENDER, sender=ENTITY, subject="re: hello", thread_id="th-1", reply_to=first,
                    body="a private answer"))
    token = dc.token_issue(ENTITY, "agent").token
    with TestClient(create_app(dc)) as c:
        page = c.get(f"/entities/{ENTITY}/items/{first}", headers={"Authorization": f"Bearer {token}"}).text
    assert "a private answer" not in page and "its body is in a box you do not read here" in page

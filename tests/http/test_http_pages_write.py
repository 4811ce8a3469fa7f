"""The Human View's writes in process (``pages_write``): compose and reply as the signed-in person, answering the
new state (a redirect to the page that shows it, or the send's JSON for a script); a letter to several goes to all
or to none; the form's refusals carry their keywords; a read-only server writes nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.http.app import create_app
from dovecote.http.pages import person_actor
from dovecote.http.session import COOKIE, Sessions
from dovecote.model.results import builtins
from dovecote.verbs import Inbox, Message, Show, TrustLevel
from serverhelpers import ENTITY, SENDER, served_home

pytestmark = pytest.mark.files_only

ORIGIN = {"Origin": "http://testserver"}


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return served_home(tmp_path)


def signed_in(dc: Dovecote, **options: object) -> tuple[TestClient, str]:
    sessions = Sessions()
    c = TestClient(create_app(dc, sessions=sessions, **options))  # type: ignore[arg-type]
    cookie, _ = sessions.redeem(sessions.issue("alice"))
    c.cookies.set(COOKIE, cookie)
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', c.get("/compose").text)
    assert found, "the compose page has no form"
    return c, found.group(1)


def subjects(dc: Dovecote, entity: str) -> dict[str, str]:
    return {i["subject"]: i["sender"] for i in builtins(dc.inbox(Inbox(entity_id=entity)))["items"]}


def test_compose_to_several_answers_json_for_a_script(dc: Dovecote) -> None:
    c, csrf = signed_in(dc)
    r = c.post("/compose", data={"csrf": csrf, "to": [ENTITY, SENDER], "subject": "both", "body": "b"},
               headers={**ORIGIN, "Accept": "application/json"})
    assert r.status_code == 201, r.text
    sent = r.json()["sent"]
    assert [s["to"] for s in sent] == [ENTITY, SENDER] and all(s["from"] == "human.alice" for s in sent)
    assert r.json()["location"] == f"/entities/{ENTITY}/items/{sent[0]['id']}"
    assert subjects(dc, ENTITY)["both"] == subjects(dc, SENDER)["both"] == "human.alice"
    shown = builtins(dc.show(Show(entity_id=ENTITY, ref=sent[0]["id"])))
    assert shown["envelope"]["trust_level"] == "human"


def test_a_letter_to_several_goes_to_all_or_to_none(dc: Dovecote) -> None:
    c, csrf = signed_in(dc)
    r = c.post("/compose", data={"csrf": csrf, "to": [ENTITY, "ent_nobody"], "subject": "half"}, headers=ORIGIN)
    assert r.status_code == 404 and "unknown_recipient" in r.text
    assert "half" not in subjects(dc, ENTITY)


@pytest.mark.parametrize(("form", "reason"), [
    ({"subject": "to nobody"}, "missing_field"),
    ({"to": ENTITY, "subject": "x", "type": "response"}, "invalid_field"),
    ({"to": ENTITY, "subject": "x", "type": "task", "ack_minutes": "soon"}, "invalid_field"),
    ({"to": ENTITY, "subject": "x", "priority": "whenever"}, "invalid_field"),
])
def test_a_bad_form_is_refused_with_its_keyword_and_sends_nothing(dc: Dovecote, form: dict[str, str],
                                                                   reason: str) -> None:
    c, csrf = signed_in(dc)
    before = subjects(dc, ENTITY)
    r = c.post("/compose", data={"csrf": csrf, **form}, headers=ORIGIN)
    assert 400 <= r.status_code < 500 and f"<code>{reason}</code>" in r.text and "Traceback" not in r.text
    assert subjects(dc, ENTITY) == before


def test_a_form_without_the_sessions_token_is_refused(dc: Dovecote) -> None:
    c, _ = signed_in(dc)
    r = c.post("/compose", data={"csrf": "0" * 64, "to": ENTITY, "subject": "forged"}, headers=ORIGIN)
    assert r.status_code == 403 and "csrf_failed" in r.text
    assert "forged" not in subjects(dc, ENTITY)


def test_a_read_only_server_writes_nothing(dc: Dovecote) -> None:
    c, csrf = signed_in(dc, read_only=True)
    r = c.post("/compose", data={"csrf": csrf, "to": ENTITY, "subject": "ro"}, headers=ORIGIN)
    assert r.status_code == 403 and "read_only" in r.text
    assert "ro" not in subjects(dc, ENTITY)


def test_a_reply_keeps_the_thread_and_answers_the_item_page(dc: Dovecote) -> None:
    c, csrf = signed_in(dc)
    item = next(i for i in builtins(dc.inbox(Inbox(entity_id=ENTITY)))["items"])
    thread = builtins(dc.show(Show(entity_id=ENTITY, ref=item["id"])))["envelope"]["thread_id"]
    page = c.get(f"/entities/{ENTITY}/items/{item['id']}").text
    assert 'id="reply"' in page
    r = c.post(f"/entities/{ENTITY}/items/{item['id']}/reply", data={"csrf": csrf, "subject": "re"}, headers=ORIGIN,
               follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/entities/{ENTITY}/items/{item['id']}"
    reply = next(i for i in builtins(dc.inbox(Inbox(entity_id=item["sender"])))["items"] if i["subject"] == "re")
    env = builtins(dc.show(Show(entity_id=item["sender"], ref=reply["id"])))["envelope"]
    assert (env["thread_id"], env["reply_to"], env["sender"]) == (thread, item["id"], "human.alice")


def test_a_persons_reply_names_the_whole_item_and_its_thread(dc: Dovecote) -> None:
    """A person has no box of its own to find a reply's item in, so a prefix or a missing thread is refused."""
    item = next(i for i in builtins(dc.inbox(Inbox(entity_id=ENTITY)))["items"])
    for reply_to, thread in ((item["id"][:6], "t1"), (item["id"], None)):
        with pytest.raises(Refusal) as refused:
            dc.send(Message(recipient=SENDER, subject="re", reply_to=reply_to, thread_id=thread,
                            trust_level=TrustLevel.human), actor=person_actor("alice"))
        assert refused.value.reason == "invalid_field"


def test_only_a_person_reaches_the_human_trust_level(dc: Dovecote) -> None:
    with pytest.raises(Refusal) as refused:
        dc.send(Message(recipient=ENTITY, sender=SENDER, subject="claimed", trust_level=TrustLevel.human))
    assert refused.value.reason == "forbidden"  # the person at this machine acts as an operator: below a person
    sent = dc.send(Message(recipient=ENTITY, subject="said", trust_level=TrustLevel.human),
                   actor=person_actor("alice"))
    assert sent.sender == "human.alice"


def test_a_cases_task_link_fills_in_the_form_and_keeps_its_thread(dc: Dovecote) -> None:
    c, csrf = signed_in(dc)
    page = c.get("/compose?type=task&subject=Case%20fp%3Ax%2Fcrash&thread=case-7").text
    assert "<option selected>task</option>" in page and 'value="Case fp:x/crash"' in page
    assert '<input type="hidden" name="thread_id" value="case-7">' in page
    r = c.post("/compose", data={"csrf": csrf, "to": ENTITY, "subject": "Case fp:x/crash", "type": "task",
                                 "thread_id": "case-7", "ack_minutes": "45"},
               headers={**ORIGIN, "Accept": "application/json"})
    assert r.status_code == 201, r.text
    (sent,) = r.json()["sent"]
    assert (sent["type"], sent["thread_id"], sent["from"]) == ("task", "case-7", "human.alice")


def test_a_move_answers_its_json_to_a_script_and_a_delivery_offers_no_ack(dc: Dovecote) -> None:
    c, csrf = signed_in(dc)
    ref = next(i["id"] for i in builtins(dc.inbox(Inbox(entity_id=ENTITY)))["items"])
    r = c.post(f"/entities/{ENTITY}/items/{ref}/claim", data={"csrf": csrf},
               headers={**ORIGIN, "Accept": "application/json"})
    assert r.status_code == 200 and (r.json()["from"], r.json()["to"]) == ("WAIT", "ACTIVE"), r.text
    c.post("/compose", data={"csrf": csrf, "to": ENTITY, "subject": "a task", "type": "task"}, headers=ORIGIN)
    page = c.get("/delivery").text
    assert "human.alice" in page  # the person's task is tracked
    assert "/acks" not in page and 'data-act="ack"' not in page  # an ack is the recipient's, never on its behalf


def test_the_rest_twin_of_a_reply_keeps_the_thread_for_an_agents_token(dc: Dovecote) -> None:
    """``POST /api/v1/entities/{entity_id}/items/{ref}/replies``: what the page's reply form does, for a token."""
    token = dc.token_issue(ENTITY, "agent").token
    item = next(i for i in builtins(dc.inbox(Inbox(entity_id=ENTITY)))["items"])
    thread = builtins(dc.show(Show(entity_id=ENTITY, ref=item["id"])))["envelope"]["thread_id"]
    auth = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(dc)) as c:
        r = c.post(f"/api/v1/entities/{ENTITY}/items/{item['id'][:8]}/replies", headers=auth,
                   json={"recipient": SENDER, "subject": "api re", "body": "done"})
        assert r.status_code == 201, r.text
        env = builtins(dc.show(Show(entity_id=SENDER, ref=r.json()["id"])))["envelope"]
        assert (env["thread_id"], env["reply_to"], env["sender"]) == (thread, item["id"], ENTITY)
        r = c.post(f"/api/v1/entities/{ENTITY}/items/{item['id']}/replies", headers=auth,
                   json={"recipient": SENDER, "subject": "api task", "type": "task", "work_item_id": "wi_api",
                         "ack_timeout": 1800})
        assert r.status_code == 201 and r.json()["thread_id"] == thread, r.text
        r = c.post(f"/api/v1/entities/{ENTITY}/items/{item['id']}/replies", headers=auth,
                   json={"recipient": SENDER, "subject": "claimed", "trust_level": "human"})
        assert r.status_code == 403 and r.json()["reason"] == "forbidden"  # a person's level: no token's

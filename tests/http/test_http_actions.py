"""The Human View's actions (in process): the signed-in person moves items with POST forms that carry the
session's CSRF token from this server's own origin; the person is the actor; a token never is a person."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from dovecote.derive.lifecycle import TRANSITIONS
from dovecote.handle.api import Dovecote
from dovecote.http.app import create_app
from dovecote.http.pages import ACTIONS, person_actor
from dovecote.http.session import COOKIE, Sessions
from dovecote.model.results import builtins
from dovecote.verbs import Inbox, Show
from serverhelpers import ENTITY, served_home

pytestmark = pytest.mark.files_only

ORIGIN = {"Origin": "http://testserver"}


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return served_home(tmp_path)


def signed_in(dc: Dovecote, **options: object) -> tuple[TestClient, Sessions]:
    sessions = Sessions()
    c = TestClient(create_app(dc, sessions=sessions, **options))  # type: ignore[arg-type]
    cookie, _ = sessions.redeem(sessions.issue("alice"))
    c.cookies.set(COOKIE, cookie)
    return c, sessions


def first_unseen(dc: Dovecote) -> str:
    return next(i["id"] for i in builtins(dc.inbox(Inbox(entity_id=ENTITY)))["items"] if not i["seen"])


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, "the page has no action form"
    return found.group(1)


def ledgers(dc: Dovecote) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in dc.layout.root.rglob("*.jsonl") if p.name != "tokens.jsonl"}


def history(dc: Dovecote, ref: str) -> list[tuple[str, str]]:
    return [(h["kind"], h["agent"]) for h in builtins(dc.show(Show(entity_id=ENTITY, ref=ref)))["history"]]


def test_the_pages_offer_only_moves_the_lifecycle_table_has() -> None:
    for state, kinds in ACTIONS.items():
        assert set(kinds) <= set(TRANSITIONS[state]), state  # type: ignore[index]


def test_a_claim_from_the_inbox_page_is_the_persons_and_goes_back_to_the_page(dc: Dovecote) -> None:
    c, _ = signed_in(dc)
    ref = first_unseen(dc)
    page = c.get(f"/entities/{ENTITY}").text
    assert f'action="/entities/{ENTITY}/items/{ref}/claim"' in page
    r = c.post(f"/entities/{ENTITY}/items/{ref}/claim", data={"csrf": csrf_of(page), "next": f"/entities/{ENTITY}"},
               headers=ORIGIN, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/entities/{ENTITY}"
    assert history(dc, ref) == [("claim", "human.alice")]
    item = c.get(f"/entities/{ENTITY}/items/{ref}").text
    assert "human.alice" in item and 'data-act="claim"' not in item
    # Claimed but unseen: complete archives the item, so it is offered once the item is seen.
    assert 'data-act="seen"' in item and 'data-act="complete"' not in item
    assert 'data-act="unseen"' not in item  # unread already: marking it unread would say nothing
    c.post(f"/entities/{ENTITY}/items/{ref}/seen", data={"csrf": csrf_of(item)}, headers=ORIGIN)
    read = c.get(f"/entities/{ENTITY}/items/{ref}").text
    assert 'data-act="complete"' in read and 'data-act="unseen"' in read and 'data-act="seen"' not in read
    c.post(f"/entities/{ENTITY}/items/{ref}/unseen", data={"csrf": csrf_of(read)}, headers=ORIGIN)
    assert history(dc, ref)[-1] == ("unseen", "human.alice")
    unread = c.get(f"/entities/{ENTITY}/items/{ref}").text
    assert 'data-act="seen"' in unread and 'data-act="unseen"' not in unread


def test_a_defer_from_the_item_page_takes_its_due(dc: Dovecote) -> None:
    c, _ = signed_in(dc)
    ref = first_unseen(dc)
    page = c.get(f"/entities/{ENTITY}/items/{ref}").text
    r = c.post(f"/entities/{ENTITY}/items/{ref}/defer", data={"csrf": csrf_of(page), "until_tic": "900",
                                                             "next": ""}, headers=ORIGIN, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/entities/{ENTITY}/items/{ref}"
    assert history(dc, ref) == [("defer", "human.alice")]
    back = c.post(f"/entities/{ENTITY}/items/{ref}/undefer", data={"csrf": csrf_of(page), "reason": "now"},
                  headers=ORIGIN, follow_redirects=False)
    assert back.status_code == 303 and history(dc, ref)[-1] == ("undefer", "human.alice")


def test_without_a_session_there_are_no_forms_and_an_action_is_refused(dc: Dovecote) -> None:
    c = TestClient(create_app(dc))
    ref = first_unseen(dc)
    assert 'class="act"' not in c.get(f"/entities/{ENTITY}").text
    before = ledgers(dc)
    r = c.post(f"/entities/{ENTITY}/items/{ref}/claim", data={"csrf": "x"}, headers=ORIGIN)
    assert r.status_code == 403 and "human_gesture_required" in r.text
    assert ledgers(dc) == before


@pytest.mark.parametrize("role", ["agent", "operator"])
def test_a_token_never_reaches_a_human_gesture_even_beside_a_session(dc: Dovecote, role: str) -> None:
    c, _ = signed_in(dc)
    ref = first_unseen(dc)
    csrf = csrf_of(c.get(f"/entities/{ENTITY}").text)
    token = dc.token_issue(ENTITY, role).token
    before = ledgers(dc)
    r = c.post(f"/entities/{ENTITY}/items/{ref}/claim", data={"csrf": csrf},
               headers={**ORIGIN, "Authorization": f"Bearer {token}"})
    assert r.status_code == 403 and "human_gesture_required" in r.text
    assert ledgers(dc) == before


@pytest.mark.parametrize(("csrf", "headers"), [
    ("", ORIGIN),
    ("0" * 64, ORIGIN),
    (None, {"Origin": "http://evil.example"}),
    (None, {}),
    (None, {"Referer": "http://evil.example/entities"}),
], ids=["no-token", "wrong-token", "other-origin", "no-origin", "other-referer"])
def test_a_form_without_the_sessions_token_or_from_elsewhere_is_refused(dc: Dovecote, csrf: str | None,
                                                                        headers: dict[str, str]) -> None:
    c, _ = signed_in(dc)
    ref = first_unseen(dc)
    good = csrf_of(c.get(f"/entities/{ENTITY}").text)
    before = ledgers(dc)
    r = c.post(f"/entities/{ENTITY}/items/{ref}/claim", data={"csrf": good if csrf is None else csrf},
               headers=headers)
    assert r.status_code == 403 and "csrf_failed" in r.text
    assert ledgers(dc) == before


def test_the_csrf_token_is_bound_to_its_session(dc: Dovecote) -> None:
    c, sessions = signed_in(dc)
    ref = first_unseen(dc)
    theirs = csrf_of(c.get(f"/entities/{ENTITY}").text)
    other = TestClient(c.app)
    cookie, _ = sessions.redeem(sessions.issue("bob"))
    other.cookies.set(COOKIE, cookie)
    r = other.post(f"/entities/{ENTITY}/items/{ref}/claim", data={"csrf": theirs}, headers=ORIGIN)
    assert r.status_code == 403 and "csrf_failed" in r.text
    r = c.post(f"/entities/{ENTITY}/items/{ref}/claim", data={"csrf": theirs, "next": "//evil.example/"},
               headers=ORIGIN, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/entities/{ENTITY}/items/{ref}"  # never off-site


def test_read_only_refuses_a_persons_move(dc: Dovecote) -> None:
    c, _ = signed_in(dc, read_only=True)
    ref = first_unseen(dc)
    before = ledgers(dc)
    r = c.post(f"/entities/{ENTITY}/items/{ref}/claim", data={"csrf": csrf_of(c.get(f"/entities/{ENTITY}").text)},
               headers=ORIGIN)
    assert r.status_code == 403 and "read_only" in r.text
    assert ledgers(dc) == before


def test_a_persons_name_is_always_a_valid_actor() -> None:
    assert person_actor("alice").agent == "human.alice"
    assert person_actor("Jean Dupont/ä").agent == "human.Jean_Dupont__"
    assert person_actor("").agent == "human.someone"


@pytest.mark.parametrize("remote", [False, True], ids=["loopback", "remote"])
def test_a_session_reads_the_api_but_writes_only_through_the_pages_forms(dc: Dovecote, remote: bool) -> None:
    c, _ = signed_in(dc, remote=remote)
    assert c.get(f"/api/v1/entities/{ENTITY}/inbox").status_code == 200
    before = ledgers(dc)
    r = c.post(f"/api/v1/entities/{ENTITY}/messages", json={"subject": "s"}, headers=ORIGIN)
    assert r.status_code == 401 and r.json()["reason"] == "unauthorized"
    assert ledgers(dc) == before

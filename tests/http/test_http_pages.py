"""The Human View's pages (in process) and the person at the screen: the one-time login link, the
session it opens, --read-only, and a server open to the network."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from dovecote.handle.api import Dovecote
from dovecote.http.app import SERVER_STATE, create_app
from dovecote.http.session import COOKIE, Sessions
from dovecote.model.results import builtins
from dovecote.verbs import Inbox, Message, Sweep
from serverhelpers import ENTITY, assert_error_shape, served_home

pytestmark = pytest.mark.files_only


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return served_home(tmp_path)


class Counts(HTMLParser):
    """Every element of class ``n`` (a count) on a page: its tag, text and link."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, str | None]] = []
        self._open: tuple[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if "n" in (a.get("class") or "").split():
            self._open = (tag, a.get("href"))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self.found.append((self._open[0], data.strip(), self._open[1]))
            self._open = None


def counts(html: str) -> list[tuple[str, str, str | None]]:
    p = Counts()
    p.feed(html)
    return p.found


def test_the_overview_shows_every_box_inbox_and_the_doctor_and_every_count_is_a_link(client: TestClient,
                                                                                    dc: Dovecote) -> None:
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    html = r.text
    for text in ("project:atlas", "home", ENTITY, "ent_ops", "Doctor", "pending distribution"):
        assert text in html
    found = counts(html)
    assert found, "the overview shows counts"
    for tag, text, href in found:
        assert (tag == "a" and href) or text == "0", (tag, text, href)
    sweep = dc.sweep(Sweep(distribute=False))
    assert ("a", str(sweep.open), "/triage") in found
    assert ("a", "1", "/triage?fate=in_flight") in found


def test_a_count_links_to_exactly_the_letters_it_counts(client: TestClient) -> None:
    for _tag, text, href in counts(client.get("/").text):
        if href and href.startswith("/triage"):
            rows = re.findall(r'<tr data-id="', client.get(href).text)
            assert len(rows) == int(text), href
        elif href and href.startswith("/entities/"):
            page = client.get(href).text
            assert len(re.findall(r'<tr data-id="', page)) == int(text), href


def test_triage_filters_by_fate_and_box(client: TestClient) -> None:
    html = client.get("/triage?fate=in_flight").text
    assert html.count('<tr data-id="') == 1 and "fate-in_flight" in html
    assert client.get("/triage?box=home").text.count('<tr data-id="') == 0
    page = client.get("/triage?fate=soggy")
    assert page.status_code == 400 and "invalid_field" in page.text
    assert page.headers["content-type"].startswith("text/html")


def test_the_inbox_page_lists_the_items_and_links_each_to_its_page(client: TestClient, dc: Dovecote) -> None:
    items = builtins(dc.inbox(Inbox(entity_id=ENTITY)))["items"]
    html = client.get(f"/entities/{ENTITY}").text
    for it in items:
        assert f'href="/entities/{ENTITY}/items/{it["id"]}"' in html and it["subject"] in html
    page = client.get(f"/entities/{ENTITY}/items/{items[0]['id']}")
    assert page.status_code == 200 and "body of index rebuild failed" in page.text and "History (1)" in page.text
    missing = client.get("/entities/ent_nobody")
    assert missing.status_code == 404 and "unknown_entity" in missing.text


def test_search_page_finds_mail(client: TestClient) -> None:
    html = client.get("/search?q=weekly").text
    assert "weekly numbers are in" in html and "<strong>1</strong> match" in html


def test_text_from_letters_is_escaped(client: TestClient, dc: Dovecote) -> None:
    dc.send(Message(recipient=ENTITY, sender="ent_ops", subject="<script>alert(1)</script>", body="x", current_tic=100))
    html = client.get(f"/entities/{ENTITY}").text
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_static_files_ship_in_the_package(client: TestClient) -> None:
    assert "EventSource" in client.get("/static/live.js").text
    assert "@media" in client.get("/static/app.css").text
    assert client.get("/static/nothing.js").status_code == 404


# -- the person at the screen -------------------------------------------------------------


def _app(dc: Dovecote, **options: object) -> tuple[TestClient, Sessions]:
    sessions = Sessions()
    return TestClient(create_app(dc, sessions=sessions, **options)), sessions  # type: ignore[arg-type]


def test_a_login_link_opens_one_session_once(dc: Dovecote) -> None:
    c, sessions = _app(dc)
    token = sessions.issue("alice")
    assert "Not signed in" in c.get("/").text
    r = c.get(f"/login/{token}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert "Signed in as <strong>alice</strong>" in c.get("/").text
    again = TestClient(c.app).get(f"/login/{token}", follow_redirects=False)  # a second browser, the same link
    assert again.status_code == 403 and "invalid_login" in again.text and "set-cookie" not in again.headers


def test_a_bearer_token_is_never_a_human_session(dc: Dovecote) -> None:
    c, sessions = _app(dc)
    c.get(f"/login/{sessions.issue('alice')}")
    assert "Signed in as" in c.get("/").text
    for role in ("agent", "operator"):
        token = dc.token_issue(ENTITY, role).token
        assert "Not signed in" in c.get("/", headers={"Authorization": f"Bearer {token}"}).text
    for token in ("anything", ""):  # a bad token is no one at all
        assert c.get("/", headers={"Authorization": f"Bearer {token}"}).status_code == 401


@pytest.mark.parametrize("remote", [False, True], ids=["loopback", "remote"])
def test_a_request_with_a_bearer_token_neither_redeems_nor_burns_a_login_link(dc: Dovecote, remote: bool) -> None:
    c, sessions = _app(dc, remote=remote)
    link = sessions.issue("alice")
    for role in ("agent", "operator"):
        bearer = {"Authorization": f"Bearer {dc.token_issue(ENTITY, role).token}"}
        r = c.get(f"/login/{link}", headers=bearer, follow_redirects=False)
        assert r.status_code == 403 and "human_gesture_required" in r.text and "set-cookie" not in r.headers
    assert sessions.links, "the link was burnt by a token's request"
    r = TestClient(c.app).get(f"/login/{link}", follow_redirects=False)  # the person's browser, no token
    assert r.status_code == 303 and r.headers["set-cookie"].startswith(f"{COOKIE}=")


def test_an_unknown_login_link_is_refused(client: TestClient) -> None:
    r = client.get("/login/made-up")
    assert r.status_code == 403 and "invalid_login" in r.text


def test_read_only_switches_off_every_write_route(dc: Dovecote) -> None:
    c, sessions = _app(dc, read_only=True)
    token = sessions.issue("alice")
    r = c.get(f"/login/{token}", follow_redirects=False)
    assert r.status_code == 403 and "read_only" in r.text and "set-cookie" not in r.headers
    assert sessions.links, "the link was not burned"
    assert c.get("/api/v1/doctor").status_code == 200 and c.get("/").status_code == 200
    names = {r.name for r in c.app.routes if isinstance(r, Route)}  # type: ignore[attr-defined]
    assert names >= SERVER_STATE, "the deny list names only routes that exist"


def test_a_server_open_to_the_network_needs_a_token_of_the_token_file(dc: Dovecote) -> None:
    c, sessions = _app(dc, remote=True)
    token = dc.token_issue(ENTITY).token
    assert_error_shape(c.get("/api/v1/doctor"), 401, "unauthorized")
    assert_error_shape(c.get("/api/v1/doctor", headers={"Authorization": "Bearer wrong"}), 401, "unauthorized")
    assert c.get("/api/v1/doctor", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert c.get("/").status_code == 401
    c.get(f"/login/{sessions.issue('alice')}")  # the link needs no token, and its session stands for one
    assert c.get("/").status_code == 200 and c.get("/api/v1/doctor").status_code == 200


def test_a_loopback_server_refuses_another_host(dc: Dovecote) -> None:
    c, _ = _app(dc, hosts=["127.0.0.1", "localhost"])
    assert_error_shape(c.get("/api/v1/doctor", headers={"Host": "evil.example"}), 421, "wrong_host")
    assert c.get("/api/v1/doctor", headers={"Host": "127.0.0.1:8765"}).status_code == 200

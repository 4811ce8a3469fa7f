"""The Human View as a web application under its own policy, in a real browser (Playwright driving Debian's
chromium) against a real ``dovecote serve``: a page on another loopback port (the same *site*, so the
SameSite=Strict session cookie would reach it) that frames an item page of the signed-in person is shown no
dovecote page, so no click on it records a move; and the live page still works under the Content-Security-Policy
(its script, its styles, the event stream, its forms), with not one policy violation on the console.

Without /usr/bin/chromium the tests skip, except under CI=true, where a missing browser fails them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from browserhelpers import chromium
from dovecote.handle.api import Dovecote
from serverhelpers import ENTITY, SENDER, Server, served_home, serving

pytestmark = pytest.mark.files_only

UNSEEN = "weekly numbers are in"  # the served home's item nobody has seen yet
#: Every page of the Human View (the inbox and an item are opened on their own).
PAGES = ("/", "/triage?all=true", "/cases", "/delivery", "/missions", "/leases", "/search?q=weekly", "/no/such/page")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return served_home(tmp_path)


@pytest.fixture
def server(tmp_path: Path, dc: Dovecote) -> Iterator[Server]:
    with serving(tmp_path, dc.layout.root) as s:
        yield s


@contextmanager
def hostile_site(html: str) -> Iterator[str]:
    """Another web server on another loopback port, answering ``html`` to every GET: its address."""
    body = html.encode()

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:
            pass

    site = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{site.server_address[1]}/"
    finally:
        site.shutdown()
        site.server_close()
        thread.join(timeout=5)


def item(server: Server, subject: str) -> dict[str, Any]:
    inbox = httpx.get(f"{server.url}/api/v1/entities/{ENTITY}/inbox").json()
    ref = next(i["id"] for i in inbox["items"] if i["subject"] == subject)
    shown: dict[str, Any] = httpx.get(f"{server.url}/api/v1/entities/{ENTITY}/items/{ref}").json()
    return shown


def signed_in(browser: Any, server: Server) -> tuple[Any, list[str]]:
    """A browser context with the person's session, and the console messages of its pages (as they come)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    console: list[str] = []
    context.on("console", lambda m: console.append(m.text))
    context.on("weberror", lambda e: console.append(f"uncaught: {e.error}"))
    context.new_page().goto(server.line("login"))
    assert context.cookies(), "the login link set no cookie"
    return context, console


def test_a_page_of_another_port_cannot_frame_an_item_page(browser: Any, server: Server) -> None:
    target = item(server, UNSEEN)
    ref = target["item"]["id"]
    context, console = signed_in(browser, server)
    framed = f"{server.url}/entities/{ENTITY}/items/{ref}"
    lure = f'<!doctype html><title>a prize</title><iframe id="bait" src="{framed}" width="1000" height="700"></iframe>'
    with hostile_site(lure) as site:
        page = context.new_page()
        page.goto(site)
        page.wait_for_load_state("load")
        (frame,) = [f for f in page.frames if f != page.main_frame]
        # The frame shows no dovecote page: no heading of the item, no button that would record a move.
        assert frame.locator("button[data-act]").count() == 0
        assert frame.locator("main#main").count() == 0
        assert frame.url != framed  # chromium shows its own error page in place of the refused one
        # A person lured into clicking on the frame clicks on nothing of dovecote's.
        page.locator("#bait").click()
    assert any("frame-ancestors 'none'" in m for m in console), console
    context.close()
    after = item(server, UNSEEN)
    assert after["item"]["seen"] is False and after["history"] == target["history"] == []


def test_the_live_page_works_under_the_policy(browser: Any, server: Server, dc: Dovecote) -> None:
    from playwright.sync_api import expect

    token = dc.token_issue(SENDER, "agent").token
    context, console = signed_in(browser, server)
    page = context.new_page()
    answer = page.goto(f"{server.url}/entities/{ENTITY}")
    assert answer is not None and answer.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    with httpx.stream("GET", f"{server.url}/api/v1/events", timeout=10) as events:  # the stream the page opens
        assert events.headers["content-type"].startswith("text/event-stream")
        assert events.headers["x-frame-options"] == "DENY" and events.headers["x-content-type-options"] == "nosniff"
    # Its styles apply (a file, no inline style): the skip link sits off screen as app.css places it.
    assert page.evaluate("getComputedStyle(document.querySelector('.skip')).position") == "absolute"
    # Its script runs: the event stream connects, and a letter sent by REST appears without a reload.
    expect(page.locator("#live")).to_have_text("live", timeout=10_000)
    page.evaluate("window.__same_page = true")
    sent = httpx.post(f"{server.url}/api/v1/entities/{ENTITY}/messages", json={"subject": "arrived under a policy"},
                      headers={"Authorization": f"Bearer {token}"})
    assert sent.status_code == 201, sent.text
    expect(page.locator("#items tbody tr", has_text="arrived under a policy")).to_be_visible(timeout=10_000)
    assert page.evaluate("window.__same_page") is True
    page.keyboard.press("/")  # the script's key
    assert page.evaluate("document.activeElement.id") == "q"
    # Its forms post (the browser names their origin null under no-referrer, and says same-origin).
    page.goto(f"{server.url}/entities/{ENTITY}/items/{item(server, UNSEEN)['item']['id']}")
    with page.expect_navigation():
        page.locator("button[data-act=seen]").click()
    expect(page.locator(".history")).to_contain_text("seen by human.alice")
    for path in PAGES:  # and every other page loads its script and styles without a violation
        page.goto(server.url + path)
        expect(page.locator("#live")).to_have_text("live", timeout=10_000)
    context.close()
    assert not [m for m in console if "Content Security Policy" in m or m.startswith("uncaught")], console

"""The Human View in a real browser (Playwright driving Debian's chromium) against a real ``dovecote serve``:
a message sent from another process (the CLI, or REST with a token) appears on the open inbox page without a
reload; a claim made on the page by the signed-in person shows in the CLI; an agent's or an operator's token
is refused as the login link and at a human gesture; the keyboard reaches the search box; and a screenshot
of each page (kept in docs/screenshots when ``DOVECOTE_SCREENSHOTS`` names that folder: ``make screenshots``).

Without /usr/bin/chromium the tests skip, except under CI=true, where a missing browser fails them.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserhelpers import chromium
from helpers import DOVECOTE_BIN, cli_env
from serverhelpers import ENTITY, SENDER, Server, served_home, serving

pytestmark = pytest.mark.files_only


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    home = served_home(tmp_path).layout.root
    with serving(tmp_path, home) as s:
        yield s


def _page(browser: Any, width: int = 1280, height: int = 800) -> Any:
    return browser.new_page(viewport={"width": width, "height": height})


@pytest.mark.parametrize("via", ["cli", "rest"])
def test_a_message_sent_from_another_process_appears_without_a_reload(browser: Any, server: Server,
                                                                      tmp_path: Path, via: str) -> None:
    import httpx2 as httpx
    from playwright.sync_api import expect

    page = _page(browser)
    page.goto(f"{server.url}/entities/{ENTITY}")
    expect(page.locator("#live")).to_have_text("live", timeout=10_000)
    page.evaluate("window.__same_page = true")
    assert page.locator("#items tbody tr[data-id]").count() == 2
    if via == "cli":
        r = _cli(tmp_path, server, "send", "--to", ENTITY, "--from", SENDER, "--subject", "arrived while you looked",
                 "--body", "b")
        assert r.returncode == 0, r.stderr.decode()
    else:
        token = _cli(tmp_path, server, "token", "issue", SENDER).stdout.decode().strip()
        sent = httpx.post(f"{server.url}/api/v1/entities/{ENTITY}/messages",
                          headers={"Authorization": f"Bearer {token}"},
                          json={"subject": "arrived while you looked", "body": "b"})
        assert sent.status_code == 201, sent.text
    row = page.locator("#items tbody tr", has_text="arrived while you looked")
    expect(row).to_be_visible(timeout=10_000)
    expect(row).to_have_class("prio-normal unseen fresh")
    assert page.locator("#items tbody tr[data-id]").count() == 3
    assert page.evaluate("window.__same_page") is True  # no reload happened
    page.close()


def _cli(tmp_path: Path, server: Server, *args: str) -> subprocess.CompletedProcess[bytes]:
    home = server.lines[0].split(": ", 1)[1]
    return subprocess.run([str(DOVECOTE_BIN), *args], env=cli_env(tmp_path, None, DOVECOTE_HOME=home),
                          capture_output=True, timeout=60, check=False)


def test_a_claim_made_on_the_page_shows_in_the_cli(browser: Any, server: Server, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    page = _page(browser)
    page.goto(server.line("login"))  # the one-time link: a session for the person at the screen (alice)
    expect(page.locator(".who")).to_contain_text("Signed in as alice")
    page.goto(f"{server.url}/entities/{ENTITY}")
    row = page.locator("#items tbody tr", has_text="weekly numbers are in")
    with page.expect_navigation():
        row.locator("button[data-act=claim]").click()
    expect(page.locator("#items tbody tr", has_text="weekly numbers are in")).to_contain_text("ACTIVE")
    page.close()
    r = _cli(tmp_path, server, "inbox", ENTITY, "--json")  # a real process, reading the ledger
    assert r.returncode == 0, r.stderr.decode()
    (item,) = [i for i in json.loads(r.stdout)["items"] if i["subject"] == "weekly numbers are in"]
    assert item["state"] == "ACTIVE"
    shown = _cli(tmp_path, server, "show", ENTITY, item["id"], "--json")
    assert [(h["kind"], h["agent"]) for h in json.loads(shown.stdout)["history"]] == [("claim", "human.alice")]


@pytest.mark.parametrize("role", ["agent", "operator"])
def test_a_token_is_refused_as_the_login_link_and_at_a_human_gesture(browser: Any, server: Server, tmp_path: Path,
                                                                     role: str) -> None:
    import httpx2 as httpx

    issued = _cli(tmp_path, server, "token", "issue", ENTITY, "--role", role)
    assert issued.returncode == 0, issued.stderr.decode()
    token = issued.stdout.decode().strip()
    context = browser.new_context()
    page = context.new_page()
    answer = page.goto(f"{server.url}/login/{token}")
    assert answer is not None and answer.status == 403
    assert "invalid_login" in page.content()
    assert context.cookies() == []  # no session was opened
    page.goto(f"{server.url}/entities/{ENTITY}")
    assert "Not signed in" in page.content() and page.locator("form.act").count() == 0
    context.close()
    inbox = httpx.get(f"{server.url}/api/v1/entities/{ENTITY}/inbox").json()
    ref = inbox["items"][0]["id"]
    r = httpx.post(f"{server.url}/entities/{ENTITY}/items/{ref}/claim", data={"csrf": "x"},
                   headers={"Authorization": f"Bearer {token}", "Origin": server.url})
    assert r.status_code == 403 and "human_gesture_required" in r.text
    after = httpx.get(f"{server.url}/api/v1/entities/{ENTITY}/inbox").json()
    assert [(i["id"], i["state"]) for i in after["items"]] == [(i["id"], i["state"]) for i in inbox["items"]]


def test_the_keyboard_reaches_search_and_the_links(browser: Any, server: Server) -> None:
    page = _page(browser)
    page.goto(server.url + "/")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("weekly")
    page.keyboard.press("Enter")
    page.wait_for_url("**/search?q=weekly")
    page.keyboard.press("Tab")  # the first stop is the skip link
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.close()


PAGES = {
    "overview": "/",
    "triage": "/triage?all=true",
    "inbox": f"/entities/{ENTITY}",
    "item": None,  # the first item of the inbox
    "search": "/search?q=rebuild",
}


@pytest.mark.screenshots  # the docs' pictures: make screenshots, not every make test
def test_a_screenshot_of_each_page(browser: Any, tmp_path: Path) -> None:
    """Of the demo home (``make run``), signed in with the login link, so the docs show what a newcomer
    sees, the actions included."""
    import httpx2 as httpx

    from dovecote.cli.demo import build_demo
    from dovecote.handle.api import open_home

    out = Path(os.environ.get("DOVECOTE_SCREENSHOTS") or tmp_path / "shots")
    out.mkdir(parents=True, exist_ok=True)
    home = build_demo(tmp_path / "demo")
    open_home(home).distribute()  # as `dovecote demo` (make run) does
    with serving(tmp_path, home) as server:
        first = httpx.get(f"{server.url}/api/v1/entities/{ENTITY}/inbox").json()["items"][0]["id"]
        _shoot(browser, server, first, out)


def _shoot(browser: Any, server: Server, first: str, out: Path) -> None:
    login = browser.new_context()
    login.new_page().goto(server.line("login"))
    session = login.cookies()
    login.close()
    assert session, "the login link set no cookie"
    for name, path in PAGES.items():
        for suffix, size in (("", (1280, 800)), ("-phone", (390, 844))):
            if suffix and name not in ("overview", "inbox"):
                continue
            context = browser.new_context(viewport={"width": size[0], "height": size[1]})
            context.add_cookies(session)
            page = context.new_page()
            page.goto(server.url + (path or f"/entities/{ENTITY}/items/{first}"))
            page.wait_for_selector("#live[data-state=live]")
            target = out / f"{name}{suffix}.png"
            page.screenshot(path=str(target), full_page=True)
            assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            # Nothing spills sideways on a phone: the page is as wide as the screen.
            assert page.evaluate("document.documentElement.scrollWidth") <= size[0] + 1, name
            context.close()

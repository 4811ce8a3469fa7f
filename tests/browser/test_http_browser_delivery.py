"""The delivery page in a real browser (Playwright driving Debian's chromium) against a real ``dovecote serve``:
a task sent through the API from another process appears on the open delivery page without a reload, its
counts move and link to its row; and a screenshot of the page over a home with every kind of row (kept in
docs/screenshots when ``DOVECOTE_SCREENSHOTS`` names that folder: ``make screenshots``).

Without /usr/bin/chromium the tests skip, except under CI=true, where a missing browser fails them (the
one way of ``browserhelpers``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserhelpers import chromium
from deliveryhelpers import busy_home, delivery_home
from helpers import DOVECOTE_BIN, cli_env
from serverhelpers import serving

pytestmark = pytest.mark.files_only


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


def _token(tmp_path: Path, home: Path, entity: str) -> str:
    import subprocess

    r = subprocess.run([str(DOVECOTE_BIN), "token", "issue", entity], env=cli_env(tmp_path, None,
                       DOVECOTE_HOME=str(home)), capture_output=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode().strip()


def test_a_task_sent_through_the_api_appears_on_the_open_delivery_page_without_a_reload(
        browser: Any, tmp_path: Path) -> None:
    import httpx2 as httpx
    from playwright.sync_api import expect

    home = delivery_home(tmp_path).layout.root
    token = _token(tmp_path, home, "aya")  # another process: the CLI writes the token file
    with serving(tmp_path, home) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{server.url}/delivery")
        expect(page.locator("#live")).to_have_text("live", timeout=10_000)
        page.evaluate("window.__same_page = true")
        expect(page.locator("#trackers tbody")).to_contain_text("No delivery in this state.")
        expect(page.locator(".card[data-state=pending] .n")).to_have_text("0")
        sent = httpx.post(f"{server.url}/api/v1/entities/tariq/messages", headers={"Authorization": f"Bearer {token}"},
                          json={"type": "task", "work_item_id": "wi-42", "subject": "review the plan"})
        assert sent.status_code == 201, sent.text
        delivery = sent.json()["id"]
        row = page.locator(f'#trackers tbody tr[data-id="{delivery}"]')
        expect(row).to_be_visible(timeout=10_000)
        expect(row).to_contain_text("wi-42")
        expect(row).to_contain_text("pending")
        expect(row).to_have_class("fresh")
        pending = page.locator(".card[data-state=pending] a.n")
        expect(pending).to_have_text("1")
        assert page.evaluate("window.__same_page") is True  # no reload happened
        pending.click()  # the count is a link to the rows it counts
        expect(page).to_have_url(f"{server.url}/delivery?state=pending#trackers")
        assert page.locator("#trackers tbody tr[data-id]").count() == 1
        page.goto(f"{server.url}/delivery?state=acked")
        expect(page.locator("#trackers tbody")).to_contain_text("No delivery in this state.")
        page.close()


@pytest.mark.screenshots  # the docs' pictures: make screenshots, not every make test
def test_a_screenshot_of_the_delivery_page(browser: Any, tmp_path: Path) -> None:
    out = Path(os.environ.get("DOVECOTE_SCREENSHOTS") or tmp_path / "shots")
    out.mkdir(parents=True, exist_ok=True)
    home = busy_home(tmp_path / "busy").layout.root
    with serving(tmp_path, home) as server:
        for suffix, (w, h) in (("", (1280, 800)), ("-phone", (390, 844))):
            page = browser.new_page(viewport={"width": w, "height": h})
            page.goto(f"{server.url}/delivery")
            page.wait_for_selector("#live[data-state=live]")
            for state in ("acked", "rejected", "timed_out", "escalated"):
                assert page.locator(f".card[data-state={state}] a.n").count() == 1, state  # a count, linked
            assert page.locator("#quarantine li[data-id]").count() == 1
            assert page.locator("#agents tbody tr[data-id]").count() == 2
            assert page.locator("#overdue tbody tr[data-id]").count() >= 1
            target = out / f"delivery{suffix}.png"
            page.screenshot(path=str(target), full_page=True)
            assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            if suffix:  # nothing spills sideways on a phone: the page is as wide as the screen
                assert page.evaluate("document.documentElement.scrollWidth") <= w + 1
            page.close()

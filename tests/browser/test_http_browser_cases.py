"""The cases page in a real browser (Playwright driving Debian's chromium) against a real ``dovecote serve``:
a report with a symptom filed through the API shows as a case on the open page without a reload, and a
screenshot of the page with a case, its receipt, a red sentinel and a monitor (kept in docs/screenshots when
``DOVECOTE_SCREENSHOTS`` names that folder: ``make screenshots``).

The browser fixture is test_http_browser's: without /usr/bin/chromium these skip, except under CI=true,
where a missing browser fails them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from test_http_browser import browser  # noqa: F401 (the fixture)

from dovecote import verbs
from helpers import rep
from serverhelpers import SENDER, served_home, serving

pytestmark = pytest.mark.files_only

FP = "fp:north/false_absence"


def test_a_report_with_a_symptom_filed_through_the_api_shows_as_a_case_without_a_reload(
        browser: Any, tmp_path: Path) -> None:  # noqa: F811 (the fixture)
    import httpx2 as httpx
    from playwright.sync_api import expect

    dc = served_home(tmp_path)
    token = dc.token_issue(SENDER).token
    with serving(tmp_path, dc.layout.root) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{server.url}/cases")
        expect(page.locator("#live")).to_have_text("live", timeout=10_000)
        page.evaluate("window.__same_page = true")
        assert page.locator("#cases tbody tr[data-id]").count() == 0
        filed = httpx.post(f"{server.url}/api/v1/reports", headers={"Authorization": f"Bearer {token}"},
                           json={"tool": "north", "class": "honesty", "repo": "atlas",
                                 "what": "empty answer over data that exists", "symptom": "false_absence"})
        assert filed.status_code == 201, filed.text
        row = page.locator(f'#cases tbody tr[data-id="{FP}"]')
        expect(row).to_be_visible(timeout=10_000)
        expect(row).to_have_class("fresh")
        expect(row.locator("td").nth(1)).to_have_text("1")  # one witness, a link to it
        assert row.locator("td").nth(1).locator("a").get_attribute("href") == (
            f"/cases?case={FP.replace(':', '%3A')}&show=witnesses#letters")
        assert page.evaluate("window.__same_page") is True  # no reload happened
        page.close()


@pytest.mark.screenshots  # the docs' pictures: make screenshots, not every make test
def test_a_screenshot_of_the_cases_page(browser: Any, tmp_path: Path) -> None:  # noqa: F811 (the fixture)
    out = Path(os.environ.get("DOVECOTE_SCREENSHOTS") or tmp_path / "shots")
    out.mkdir(parents=True, exist_ok=True)
    dc = served_home(tmp_path)
    filed = dc.report([rep("empty answer over data that exists", tool="north", klass="honesty", repo="atlas",
                           agent="ent_builder", ts=f"2026-07-05T10:0{n}:00Z") for n in range(3)])
    dc.receipt(verbs.Receipt(answers=[lid for lid, _ in filed], disposition=verbs.Disposition.fixed,
                             ref="9f3c2ab", case_id="north-empty", sentinel_probe="false",
                             sentinel_expect=verbs.SentinelExpect.exit0))
    dc.sentinels()
    dc.report([rep("seek found a file that is gone", tool="seek", klass="honesty", repo="atlas",
                   symptom="stale_claim")])
    dc.monitor_add(verbs.MonitorAdd(name="nightly-index", expect="tool=seek", every="1d"))
    dc.monitor_add(verbs.MonitorAdd(name="weekly-numbers", expect="tool=numbers", every="7d", paused=True))
    dc.distribute()
    with serving(tmp_path, dc.layout.root) as server:
        for suffix, (width, height) in (("", (1280, 800)), ("-phone", (390, 844))):
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(f"{server.url}/cases?case={FP}&show=witnesses")
            page.wait_for_selector("#live[data-state=live]")
            target = out / f"cases{suffix}.png"
            page.screenshot(path=str(target), full_page=True)
            assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert page.evaluate("document.documentElement.scrollWidth") <= width + 1  # nothing spills sideways
            page.close()

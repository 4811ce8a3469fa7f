"""The missions page in a real browser (Playwright driving Debian's chromium) against a real ``dovecote serve``:
an agent posts judging -> executing -> gate -> merge_wait over REST with its token; the person signed in by the
login link imports the receipt on the page (typing the mission id to confirm and the gesture passphrase, without
which the session alone is refused); the agent posts landed; the person archives it on the page. The agent's token
is refused on both gestures, and a screenshot of the page is taken (kept in docs/screenshots when
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
from dovecote.model.results import builtins
from missionhelpers import PASSPHRASE, VECTOR, for_phase, keyed
from serverhelpers import SENDER, served_home, serving

pytestmark = pytest.mark.files_only
MID = VECTOR["mission_id"]


def settled(page: Any, url: str) -> None:
    """Open ``url`` and wait for live.js's first refresh (on connecting it fetches the page again and swaps
    its <main>), so a confirmation typed next is not swapped away."""
    with page.expect_response(lambda r: r.request.resource_type == "fetch" and "/missions" in r.url):
        page.goto(url)
    page.evaluate("() => new Promise(done => setTimeout(done, 150))")


def test_the_full_flow_with_both_gestures_on_the_page(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    import httpx2 as httpx
    from playwright.sync_api import expect

    dc = keyed(served_home(tmp_path))
    dc.block_add(verbs.BlockAdd(block_id="sb_alpha", project="atlas"))
    auth = {"Authorization": f"Bearer {dc.token_issue(SENDER).token}"}
    with serving(tmp_path, dc.layout.root) as server:
        api = f"{server.url}/api/v1"

        def agent_posts(phase: str, seq: int, prev: str | None) -> str:
            r = httpx.post(f"{api}/missions", headers=auth, json={
                "letter": for_phase(phase, seq, prev, brain_ref="atlas"), "as_project": "atlas"})
            assert r.status_code == 201, r.text
            return str(r.json()["letter_id"])

        ids: list[str] = []
        for seq, phase in enumerate(["judging", "executing", "gate", "merge_wait"], 1):
            ids.append(agent_posts(phase, seq, ids[-1] if ids else None))
        for which in ("receipt-import", "archive"):  # the agent's token never reaches a gesture
            r = httpx.post(f"{server.url}/missions/{MID}/{which}", headers={**auth, "Origin": server.url},
                           data={"confirm": MID})
            assert r.status_code == 403 and "human_gesture_required" in r.text, r.text
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(server.line("login"))
        expect(page.locator(".who")).to_contain_text("Signed in as alice")
        settled(page, f"{server.url}/missions")
        expect(page.locator("#landing .n")).to_have_text("1")
        row = page.locator(f'#mission-heads tr[data-id="{MID}"]')
        expect(row).to_contain_text("merge_wait")
        row.locator('input[name="confirm"]').fill(MID)
        row.locator('input[name="passphrase"]').fill("not the passphrase")
        with page.expect_navigation():
            row.locator('button[data-gesture="receipt-import"]').click()
        expect(page.locator("main")).to_contain_text("human_gesture_required")
        assert dc.blocks(verbs.Blocks()).blocks[0].store_version == 0
        settled(page, f"{server.url}/missions")
        row.locator('input[name="confirm"]').fill(MID)
        row.locator('input[name="passphrase"]').fill(PASSPHRASE)
        with page.expect_navigation():
            row.locator('button[data-gesture="receipt-import"]').click()
        expect(page.locator("#blocks")).to_contain_text("sb_alpha")
        assert dc.blocks(verbs.Blocks()).blocks[0].store_version == 1
        ids.append(agent_posts("landed", 5, ids[-1]))
        settled(page, f"{server.url}/missions?mission={MID}")
        expect(page.locator("#landing")).to_contain_text("0")
        chain = page.locator("#chain")
        chain.locator('input[name="confirm"]').fill(MID)
        chain.locator('input[name="passphrase"]').fill(PASSPHRASE)
        with page.expect_navigation():
            chain.locator('button[data-gesture="archive"]').click()
        expect(page.locator(f'#mission-heads tr[data-id="{MID}"]')).to_contain_text("archived")
        expect(page.locator("#chain-rows tbody tr")).to_have_count(6)
        shots = Path(os.environ.get("DOVECOTE_SCREENSHOTS") or tmp_path / "shots")
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "missions.png"), full_page=True)
        page.close()
    chain_rows = builtins(dc.mission(verbs.Mission(mission_id=MID)))["chain"]
    assert [e["phase"] for e in chain_rows] == ["judging", "executing", "gate", "merge_wait", "landed", "archived"]
    assert chain_rows[-1]["agent"] == "human.alice" and chain_rows[3]["agent"] == SENDER

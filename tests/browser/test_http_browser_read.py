"""The Human View read by a person, in a real browser against a real ``dovecote serve``: what needs a person
(the page, the overview's card, the title count and the tab icon, all live as letters arrive), the keyboard
map, sortable and filterable tables, an inbox of 100,000 letters paged fast, and axe-core on every page.

axe-core comes from the npm registry into a cache folder (``AXE_CACHE``), never from a CDN: the test injects
its ``axe.min.js`` with Playwright's ``add_script_tag``. Without npm (or chromium) the tests skip, except under
CI=true, where a missing part fails them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from browserhelpers import chromium
from helpers import DOVECOTE_BIN, cli_env
from serverhelpers import ENTITY, SENDER, Server, served_home, serving

pytestmark = pytest.mark.files_only

#: Where axe-core is installed from the npm registry (once; reused by every later run).
AXE_CACHE = Path(os.environ.get("DOVECOTE_AXE_CACHE", str(Path.home() / ".cache" / "dovecote-axe")))
AXE_VERSION = "4"
#: The impacts a page may not have (axe's own words): every one but "minor".
FORBIDDEN = ("moderate", "serious", "critical")
#: The first page of an inbox of BIG letters renders in under BUDGET_MS (measured in the browser).
BIG, BUDGET_MS = 100_000, 200.0


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    home = served_home(tmp_path).layout.root
    with serving(tmp_path, home) as s:
        yield s


def _missing(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(what)
    pytest.skip(what)


def axe_source() -> str:
    """axe-core's ``axe.min.js``, installed from the npm registry into ``AXE_CACHE`` the first time."""
    target = AXE_CACHE / "node_modules" / "axe-core" / "axe.min.js"
    if not target.exists():
        npm = shutil.which("npm")
        if npm is None:
            _missing("npm is missing: axe-core cannot be installed (apt-get install npm)")
        r = subprocess.run([str(npm), "install", "--prefix", str(AXE_CACHE), "--no-audit", "--no-fund",
                            f"axe-core@{AXE_VERSION}"], capture_output=True, timeout=300, check=False)
        if r.returncode != 0 or not target.exists():
            _missing(f"npm could not install axe-core: {r.stderr.decode(errors='replace')[-500:]}")
    return target.read_text("utf-8")


def _cli(tmp_path: Path, server: Server, *args: str) -> subprocess.CompletedProcess[bytes]:
    home = server.lines[0].split(": ", 1)[1]
    return subprocess.run([str(DOVECOTE_BIN), *args], env=cli_env(tmp_path, None, DOVECOTE_HOME=home),
                          capture_output=True, timeout=60, check=False)


def _token(tmp_path: Path, server: Server, entity: str) -> dict[str, str]:
    issued = _cli(tmp_path, server, "token", "issue", entity)
    assert issued.returncode == 0, issued.stderr.decode()
    return {"Authorization": f"Bearer {issued.stdout.decode().strip()}"}


def _blocked(tmp_path: Path, server: Server, subject: str) -> None:
    """A task from ENTITY to SENDER, and SENDER's blocked response to it: it lands in ENTITY's box."""
    task = httpx.post(f"{server.url}/api/v1/entities/{SENDER}/messages", headers=_token(tmp_path, server, ENTITY),
                      json={"type": "task", "work_item_id": "wi-7", "subject": "unblock the build"})
    assert task.status_code == 201, task.text
    answer = httpx.post(f"{server.url}/api/v1/entities/{ENTITY}/messages", headers=_token(tmp_path, server, SENDER),
                        json={"type": "response", "work_item_id": "wi-7", "parent_id": task.json()["envelope_id"],
                              "subject": subject, "blocker_flag": True, "blocker_reason": "no key"})
    assert answer.status_code == 201, answer.text


def test_the_needs_page_title_and_icon_follow_a_blocker_that_arrives(browser: Any, server: Server,
                                                                      tmp_path: Path) -> None:
    from playwright.sync_api import expect

    page = browser.new_page()
    page.goto(f"{server.url}/needs")
    expect(page.locator("#live")).to_have_text("live", timeout=10_000)
    expect(page.locator("html")).to_have_attribute("data-needs", "0", timeout=10_000)
    assert page.title() == "Needs a person · dovecote"
    page.evaluate("window.__same_page = true")
    other = browser.new_page()  # a tab on another page shows the count too
    other.goto(f"{server.url}/triage")
    expect(other.locator("html")).to_have_attribute("data-needs", "0", timeout=10_000)
    _blocked(tmp_path, server, "stuck on the signing key")
    row = page.locator("#needs tbody tr.need-blocker", has_text="stuck on the signing key")
    expect(row).to_be_visible(timeout=10_000)
    expect(row).to_contain_text("blocked")
    expect(page).to_have_title("(1) Needs a person · dovecote", timeout=10_000)
    expect(other).to_have_title("(1) Triage · dovecote", timeout=10_000)
    icon = page.locator('link[rel="icon"]').get_attribute("href") or ""
    assert icon.startswith("data:image/png;base64,")
    expect(page.locator("#announce")).to_contain_text("1 new", timeout=10_000)
    assert page.evaluate("window.__same_page") is True  # no reload happened
    with page.expect_navigation():
        row.locator("a", has_text="reply").click()  # the action: the item's page, where it is answered
    assert f"/entities/{ENTITY}/items/" in page.url
    page.goto(server.url + "/")
    card = page.locator(".card-needs")
    expect(card).to_contain_text("needs a person")
    assert card.locator("a.n").inner_text() == "1" and card.locator("a.n").get_attribute("href") == "/needs"
    page.close()
    other.close()


def test_the_keyboard_map(browser: Any, server: Server) -> None:
    from playwright.sync_api import expect

    page = browser.new_page()
    page.goto(server.line("login"))
    page.goto(f"{server.url}/entities/{ENTITY}")
    rows = page.locator("#items tbody tr[data-id]")
    first, second = rows.nth(0).get_attribute("data-id"), rows.nth(1).get_attribute("data-id")
    page.keyboard.press("j")
    expect(page.locator("tr.kb-current")).to_have_attribute("data-id", first or "")
    page.keyboard.press("j")
    expect(page.locator("tr.kb-current")).to_have_attribute("data-id", second or "")
    page.keyboard.press("k")
    expect(page.locator("tr.kb-current")).to_have_attribute("data-id", first or "")
    assert page.evaluate("document.activeElement.closest('tr').dataset.id") == first  # the focus follows
    page.keyboard.press("?")
    expect(page.locator("dialog#keys-help")).to_be_visible()
    assert page.locator("dialog#keys-help kbd").all_inner_texts()[:5] == ["/", "j", "k", "o", "Enter"]
    page.keyboard.press("Escape")
    expect(page.locator("dialog#keys-help")).to_be_hidden()
    # none fires while typing in a field: a filter field, then the search box
    page.locator("#items input.filter").first.focus()
    page.keyboard.type("jk?o")
    expect(page.locator("tr.kb-current")).to_have_attribute("data-id", first or "")
    assert page.locator("dialog#keys-help").is_hidden() and page.url.endswith(f"/entities/{ENTITY}")
    page.locator("#items input.filter").first.fill("")
    page.locator("main h1").click()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("rce")
    assert page.locator("#q").input_value() == "rce" and page.url.endswith(f"/entities/{ENTITY}")
    page.locator("main h1").click()
    page.keyboard.press("j")  # on from the current row (kept by its id): the second
    expect(page.locator("tr.kb-current")).to_have_attribute("data-id", second or "")
    with page.expect_navigation():
        page.keyboard.press("o")
    assert page.url.endswith(f"/items/{second}")
    page.go_back()
    page.locator("main h1").click()
    page.keyboard.press("j")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith(f"/items/{first}")
    # r and c press the controls marked data-key: on an item, r puts the caret in its reply; c opens compose
    expect(page.locator("#live")).to_have_text("live", timeout=10_000)  # <main> was fetched again on connecting
    page.locator("main h1").click()
    page.keyboard.press("r")
    assert page.evaluate("document.activeElement.closest('form').id") == "reply"
    assert page.evaluate("document.activeElement.name") == "body"
    page.keyboard.type("c")  # typing in the reply: no key fires
    assert page.locator("#reply textarea[name=body]").input_value() == "c"
    page.locator("main h1").click()
    with page.expect_navigation():
        page.keyboard.press("c")
    assert page.url.endswith("/compose")
    page.goto(f"{server.url}/entities/{ENTITY}")
    urgent = page.locator("#items tbody tr", has_text="index rebuild failed")  # seen: claim, then complete
    with page.expect_navigation():
        urgent.locator("button[data-act=claim]").click()
    page.locator("main h1").click()
    page.keyboard.press("j")
    expect(page.locator("tr.kb-current")).to_contain_text("index rebuild failed")
    with page.expect_navigation():
        page.keyboard.press("e")
    expect(page.locator("#items tbody tr", has_text="index rebuild failed")).to_have_count(0)  # done: archived
    page.close()


def test_tables_sort_and_filter_by_column_without_a_reload(browser: Any, server: Server, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    page = browser.new_page()
    page.goto(f"{server.url}/entities/{ENTITY}")
    expect(page.locator("#live")).to_have_text("live", timeout=10_000)
    page.evaluate("window.__same_page = true")
    subjects = page.locator("#items tbody tr[data-id] td.what a")
    page.get_by_role("button", name="Sort by subject").click()
    assert subjects.all_inner_texts() == ["index rebuild failed", "weekly numbers are in"]
    assert page.locator("#items th[aria-sort=ascending]").inner_text().lower().startswith("subject")
    page.get_by_role("button", name="Sort by subject").click()
    assert subjects.all_inner_texts() == ["weekly numbers are in", "index rebuild failed"]
    page.get_by_role("button", name="Sort by priority").click()
    assert subjects.all_inner_texts() == ["weekly numbers are in", "index rebuild failed"]  # normal < urgent
    box = page.get_by_label("Filter by subject")
    box.fill("weekly")
    expect(page.locator("#items tbody tr[data-id]:visible")).to_have_count(1)
    box.fill("")
    page.get_by_label("Filter by priority").fill("urg")
    expect(page.locator("#items tbody tr[data-id]:visible")).to_have_count(1)
    assert page.locator("#items tbody tr[data-id]:visible td.what").inner_text() == "index rebuild failed"
    # a letter arrives: the page is refreshed live, and the filter (and the field's focus) stay
    page.get_by_label("Filter by priority").focus()
    r = _cli(tmp_path, server, "send", "--to", ENTITY, "--from", SENDER, "--subject", "urgent as well",
             "--body", "b", "--priority", "urgent")
    assert r.returncode == 0, r.stderr.decode()
    expect(page.locator("#items tbody tr[data-id]:visible")).to_have_count(2, timeout=10_000)
    assert page.get_by_label("Filter by priority").input_value() == "urg"
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Filter by priority"
    expect(page.locator("#items tbody tr[data-id][hidden]")).to_have_count(1)  # weekly numbers (normal)
    assert page.evaluate("window.__same_page") is True
    page.close()


def _big_home(tmp: Path) -> Path:
    """An inbox of ``BIG`` messages (and their lifecycle letters), built as ``bench/bench_inbox.py`` builds it."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        from bench_inbox import build
    finally:
        sys.path.pop(0)
    return build(tmp, BIG)


def test_an_inbox_of_a_hundred_thousand_letters_pages_fast(browser: Any, tmp_path: Path) -> None:
    home = _big_home(tmp_path)
    with serving(tmp_path, home) as s:
        page = browser.new_page()
        url = f"{s.url}/entities/ent_b"
        page.goto(url, timeout=600_000)  # the first read folds the box (the server keeps it warm)
        settled = page.locator("html[data-needs]")  # the page's own fetches (the needs count) are done
        settled.wait_for(timeout=600_000)
        times = []
        for _ in range(5):
            page.goto(url)
            times.append(page.evaluate("""(() => { const n = performance.getEntriesByType('navigation')[0];
                return n.domContentLoadedEventEnd - n.startTime; })()"""))
            settled.wait_for(timeout=60_000)
        first = page.locator("#items tbody tr[data-id]").evaluate_all("rows => rows.map(r => r.dataset.id)")
        assert len(first) == 100
        page.locator("a[rel=next]").click()
        page.wait_for_load_state("domcontentloaded")
        second = page.locator("#items tbody tr[data-id]").evaluate_all("rows => rows.map(r => r.dataset.id)")
        assert len(second) == 100 and not set(first) & set(second)
        page.close()
    best = sorted(times)[len(times) // 2]
    print(f"first page of {BIG:,} letters: median {best:.0f} ms, all {[round(t) for t in times]}")
    assert best < BUDGET_MS, times


PAGES = ["/", "/needs", "/triage", "/cases", "/delivery", "/missions", "/search?q=weekly", f"/entities/{ENTITY}",
         f"/entities/{ENTITY}?show=archive", "{item}", "/entities/nobody_here"]


def test_every_page_passes_axe(browser: Any, server: Server, tmp_path: Path) -> None:
    source = axe_source()
    _blocked(tmp_path, server, "stuck on the signing key")  # the needs page has a row
    item = httpx.get(f"{server.url}/api/v1/entities/{ENTITY}/inbox").json()["items"][0]["id"]
    context = browser.new_context(bypass_csp=True)  # the policy refuses an inline script: axe is one
    page = context.new_page()
    page.goto(server.line("login"))  # signed in: the pages show their buttons and forms too
    found: dict[str, list[str]] = {}
    for path in PAGES:
        page.goto(server.url + path.replace("{item}", f"/entities/{ENTITY}/items/{item}"))
        page.wait_for_timeout(300)  # the scripts have enhanced the tables
        page.add_script_tag(content=source)
        result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
        bad = [f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
               for v in result["violations"] if v["impact"] in FORBIDDEN]
        if bad:
            found[path] = bad
    page.keyboard.press("?")  # the keys' dialog, open
    page.add_script_tag(content=source)
    dialog = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    context.close()
    assert found == {}
    assert [v["id"] for v in dialog["violations"] if v["impact"] in FORBIDDEN] == []


def test_focus_is_visible_and_the_live_regions_are_polite(browser: Any, server: Server) -> None:
    page = browser.new_page()
    page.goto(server.url + "/")
    page.keyboard.press("Tab")  # the skip link
    page.keyboard.press("Tab")
    style = page.evaluate("(() => { const s = getComputedStyle(document.activeElement); "
                          "return [s.outlineStyle, s.outlineWidth, s.boxShadow]; })()")
    assert style[0] != "none" and style[1] != "0px", style
    assert page.locator("[aria-live=polite]").count() >= 2  # the stream's status, and the announcements
    assert page.locator("#announce[role=status]").count() == 1
    page.close()


@pytest.mark.screenshots  # the docs' pictures: make screenshots, not every make test
def test_a_screenshot_of_the_needs_page(browser: Any, tmp_path: Path) -> None:
    """Of the demo home with a person in the roster, a note to them and a blocked response, the keys listed."""
    from dovecote.cli.demo import build_demo
    from dovecote.handle.api import open_home
    from dovecote.model.vocab_delivery import SendType
    from dovecote.verbs import EntityAdd, Message, Send

    out = Path(os.environ.get("DOVECOTE_SCREENSHOTS") or tmp_path / "shots")
    out.mkdir(parents=True, exist_ok=True)
    home = build_demo(tmp_path / "demo")
    dc = open_home(home)
    dc.distribute()
    dc.add_entity(EntityAdd(entity_id="human.alice", role="human"))
    dc.send(Message(recipient="human.alice", sender="ent_ops", subject="Approve the index rebuild window?",
                    body="Tonight 22:00-23:00 UTC; the search index is read-only meanwhile."))
    task = dc.send(Send(recipient="ent_builder", type=SendType.task, work_item_id="wi-42",
                        subject="Rotate the signing key"), actor="ent_ops")
    dc.send(Send(recipient="ent_ops", type=SendType.response, work_item_id="wi-42", parent_id=task.envelope_id,
                 subject="Blocked: no access to the key vault", blocker_flag=True,
                 blocker_reason="the vault token expired"), actor="ent_builder")
    with serving(tmp_path, home) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(server.line("login"))
        page.goto(f"{server.url}/needs")
        page.wait_for_selector("#live[data-state=live]")
        page.locator("html[data-needs]").wait_for()
        page.screenshot(path=str(out / "needs.png"), full_page=True)
        page.goto(f"{server.url}/entities/ent_builder")
        page.wait_for_selector("#live[data-state=live]")
        page.locator("main h1").click()
        page.keyboard.press("j")
        page.keyboard.press("?")
        page.screenshot(path=str(out / "keys.png"))
        page.close()
    assert (out / "needs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

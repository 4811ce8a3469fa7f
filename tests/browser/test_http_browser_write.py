"""A person writes to agents from the Human View, in a real browser (Playwright driving Debian's chromium) against
a real ``dovecote serve``, each letter checked by a real ``dovecote`` process reading the ledgers.

Compose to one entity, to several, and to everyone (each recipient's inbox and injection has it, from
``human.<name>`` at the ``human`` trust level); a reply keeps the item's thread and names it as ``reply_to``; a reply
with a task carries its ack policy and the delivery trackers follow it; an item offers exactly the moves the
lifecycle table allows from its state, and a move that lost a race shows the refusal's keyword; a half-typed letter
survives a live update caused by another client's letter; and a hostile body runs no script on the page.

Without /usr/bin/chromium the tests skip, except under CI=true, where a missing browser fails them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from browserhelpers import chromium
from dovecote.handle.moves import MOVES
from dovecote.verbs import EntityAdd
from helpers import DOVECOTE_BIN, cli_env
from serverhelpers import ENTITY, SENDER, Server, served_home, serving

pytestmark = pytest.mark.files_only

#: A third registered entity, so "several" (two ticked) and "everyone" (all three) differ.
THIRD = "ent_third"
PERSON = "human.alice"
#: What a prompt hook's payload carries (Claude Code's UserPromptSubmit).
PROMPT = {"session_id": "s-write", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp", "permission_mode": "default",
          "hook_event_name": "UserPromptSubmit", "prompt": "go on"}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    dc = served_home(tmp_path)
    dc.add_entity(EntityAdd(entity_id=THIRD))
    with serving(tmp_path, dc.layout.root) as s:
        yield s


def cli(tmp_path: Path, server: Server, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    home = server.lines[0].split(": ", 1)[1]
    r = subprocess.run([str(DOVECOTE_BIN), *args], env=cli_env(tmp_path, None, DOVECOTE_HOME=home), input=stdin,
                       capture_output=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr.decode()
    return r


def items(tmp_path: Path, server: Server, entity: str) -> list[dict[str, Any]]:
    got = json.loads(cli(tmp_path, server, "inbox", entity, "--json").stdout)["items"]
    assert isinstance(got, list)
    return got


def shown(tmp_path: Path, server: Server, entity: str, ref: str) -> dict[str, Any]:
    got = json.loads(cli(tmp_path, server, "show", entity, ref, "--json").stdout)
    assert isinstance(got, dict)
    return got


def signed_in(browser: Any, server: Server) -> Any:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(server.line("login"))
    expect(page.locator(".who")).to_contain_text("Signed in as alice")
    return page


def item_of(tmp_path: Path, server: Server, entity: str, subject: str) -> dict[str, Any]:
    (row,) = [i for i in items(tmp_path, server, entity) if i["subject"] == subject]
    return row


@pytest.mark.parametrize("to", ["one", "several", "everyone"])
def test_a_person_composes_to_one_several_or_everyone(browser: Any, server: Server, tmp_path: Path, to: str) -> None:
    from playwright.sync_api import expect

    page = signed_in(browser, server)
    page.locator("header a.compose").click()
    expect(page.locator("h1")).to_have_text("Compose")
    chosen = {"one": [ENTITY], "several": [ENTITY, THIRD], "everyone": [ENTITY, SENDER, THIRD]}[to]
    if to == "everyone":
        page.locator("input[name=to_all]").check()
    else:
        for e in chosen:
            page.locator(f"input[name=to][value={e}]").check()
    subject = f"from the page to {to}"
    page.locator("#compose input[name=subject]").fill(subject)
    page.locator("#compose textarea[name=body]").fill("Please **look** at the build.")
    page.locator("#compose select[name=priority]").select_option("high")
    page.locator("#compose select[name=category]").select_option("directive")
    with page.expect_navigation():
        page.locator("#compose button[data-write=send]").click()
    if to != "everyone":  # the answer is the page of the letter it wrote
        expect(page.locator("h1")).to_have_text(subject)
        expect(page.locator("article.body strong")).to_have_text("look")
        expect(page.locator(".meta .person")).to_have_text("from a person")
    page.close()
    for e in (ENTITY, SENDER, THIRD):
        got = [i for i in items(tmp_path, server, e) if i["subject"] == subject]
        assert len(got) == (e in chosen), (e, got)
        if got:
            (row,) = got
            assert row["sender"] == PERSON and row["priority"] == "high" and row["category"] == "directive"
            env = shown(tmp_path, server, e, row["id"])
            assert env["envelope"]["trust_level"] == "human" and env["body"] == "Please **look** at the build."
    hook = cli(tmp_path, server, "hook", "prompt", "--entity", ENTITY, stdin=json.dumps(PROMPT).encode())
    assert f"{subject} (from: {PERSON}" in hook.stdout.decode()  # the agent's next prompt names it, from a person


def test_a_reply_keeps_the_thread_and_a_task_reply_carries_its_ack_policy(browser: Any, server: Server,
                                                                           tmp_path: Path) -> None:
    from playwright.sync_api import expect

    asked = item_of(tmp_path, server, ENTITY, "weekly numbers are in")
    thread = shown(tmp_path, server, ENTITY, asked["id"])["envelope"]["thread_id"]
    page = signed_in(browser, server)
    page.goto(f"{server.url}/entities/{ENTITY}/items/{asked['id']}")
    form = page.locator("form#reply")
    expect(form.locator("select[name=to]")).to_have_value(SENDER)  # to the item's sender by default
    form.locator("input[name=subject]").fill("thanks, noted")
    form.locator("textarea[name=body]").fill("Noted.")
    with page.expect_navigation():
        form.locator("button[data-write=reply]").click()
    reply = item_of(tmp_path, server, SENDER, "thanks, noted")
    env = shown(tmp_path, server, SENDER, reply["id"])["envelope"]
    assert (env["thread_id"], env["reply_to"], env["sender"]) == (thread, asked["id"], PERSON)
    # the same form, as a task: in the same thread, with an ack policy the trackers follow
    form = page.locator("form#reply")
    form.locator("input[name=subject]").fill("rerun the numbers")
    form.locator("select[name=type]").select_option("task")
    form.locator("input[name=ack_minutes]").fill("30")
    with page.expect_navigation():
        form.locator("button[data-write=reply]").click()
    page.close()
    task = item_of(tmp_path, server, SENDER, "rerun the numbers")
    tracked = json.loads(cli(tmp_path, server, "trackers", "--entity-id", SENDER, "--json").stdout)["trackers"]
    (row,) = [t for t in tracked if t["thread_id"] == thread]
    assert (row["kind"], row["ack_required"], row["ack_state"], row["sender"]) == ("task", True, "pending", PERSON)
    due = datetime.fromisoformat(row["ack_due_ts"]) - datetime.fromisoformat(row["delivered_ts"])
    assert due == timedelta(minutes=30), row
    assert task["sender"] == PERSON


def test_an_item_offers_the_tables_moves_and_a_lost_race_shows_its_keyword(browser: Any, server: Server,
                                                                          tmp_path: Path) -> None:
    from playwright.sync_api import expect

    ref = item_of(tmp_path, server, ENTITY, "weekly numbers are in")["id"]
    page = signed_in(browser, server)
    # no live updates on this page: it stays as it was read, as a page does for the moment a race takes
    page.route("**/api/v1/events", lambda route: route.abort())
    url = f"{server.url}/entities/{ENTITY}/items/{ref}"

    def offered() -> set[str]:
        return set(page.locator("section.acts button[data-act]").evaluate_all("bs => bs.map(b => b.dataset.act)"))

    page.goto(url)
    # unread and waiting: every move the table allows from WAIT but complete and nack (they archive: seen
    # first) and unseen (it is unread already)
    assert offered() == set(MOVES["WAIT"]) - {"complete", "nack", "unseen"}
    with page.expect_navigation():
        page.locator("section.acts button[data-act=seen]").click()
    assert offered() == set(MOVES["WAIT"]) - {"seen"}
    with page.expect_navigation():
        page.locator("section.acts button[data-act=claim]").click()
    assert offered() == set(MOVES["ACTIVE"]) - {"seen"}
    # another client defers it while this page still offers complete: the page's complete loses the race
    cli(tmp_path, server, "defer", ENTITY, ref, "--until-tic", "999")
    with page.expect_navigation():
        page.locator("section.acts button[data-act=complete]").click()
    expect(page.locator("h1 code")).to_have_text("illegal_transition")
    page.goto(url)
    assert offered() == set(MOVES["DEFER"]) - {"seen"}
    with page.expect_navigation():
        page.locator("section.acts button[data-act=undefer]").click()
    expect(page.locator(".meta .state")).to_have_text("WAIT")
    page.close()


def test_a_half_typed_reply_survives_a_live_update(browser: Any, server: Server, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    ref = item_of(tmp_path, server, ENTITY, "weekly numbers are in")["id"]
    page = signed_in(browser, server)
    page.goto(f"{server.url}/entities/{ENTITY}/items/{ref}")
    expect(page.locator("#live")).to_have_text("live", timeout=10_000)
    page.evaluate("window.__same_page = true")
    body = page.locator("form#reply textarea[name=body]")
    body.click()
    body.type("half of a thought")
    # another client acts on the item: the page's history gains the move without a reload
    cli(tmp_path, server, "seen", ENTITY, ref)
    expect(page.locator("ol.history")).to_contain_text("seen by", timeout=10_000)
    expect(page.locator("form#reply textarea[name=body]")).to_have_value("half of a thought")
    assert page.evaluate("document.activeElement.name") == "body"  # the caret is still in the field
    page.keyboard.type(", finished")
    expect(page.locator("form#reply textarea[name=body]")).to_have_value("half of a thought, finished")
    # and a letter sent by another client to another box changes nothing typed here either
    cli(tmp_path, server, "send", "--to", SENDER, "--from", ENTITY, "--subject", "elsewhere", "--body", "b")
    page.wait_for_timeout(1500)
    expect(page.locator("form#reply textarea[name=body]")).to_have_value("half of a thought, finished")
    assert page.evaluate("window.__same_page") is True
    page.close()


HOSTILE = """# Hello
<script>window.__xss = 'script'</script>
<img src=x onerror="window.__xss = 'onerror'">
[click](javascript:window.__xss='js') and [data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)
<a href="https://example.org" onclick="window.__xss='onclick'">raw link</a>
<div onmouseover="window.__xss='hover'">hover</div>
[fine](https://example.org/ok)
"""


def test_a_hostile_body_runs_no_script_and_keeps_no_handler(browser: Any, server: Server, tmp_path: Path) -> None:
    cli(tmp_path, server, "send", "--to", ENTITY, "--from", SENDER, "--subject", "hostile", "--body", HOSTILE)
    ref = item_of(tmp_path, server, ENTITY, "hostile")["id"]
    page = signed_in(browser, server)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{server.url}/entities/{ENTITY}/items/{ref}")
    body = page.locator("article.body")
    body.locator("text=hover").hover()
    assert body.locator("h1").inner_text() == "Hello"  # Markdown rendered
    assert page.evaluate("window.__xss === undefined") and dialogs == []
    handlers = body.evaluate("b => [...b.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))"
                             ".filter(n => n.startsWith('on'))")
    assert handlers == []
    assert body.locator("script, img, iframe, object, embed, [style]").count() == 0
    hrefs = body.locator("a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert hrefs == ["https://example.org/ok"]  # javascript: and data: links are not links
    assert "<script>" in body.inner_text()  # raw HTML shows as the text it is
    page.close()

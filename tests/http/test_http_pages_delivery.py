"""The delivery page (in process): the status view rendered, every count a link to exactly the rows it
counts, the filter refused as any page refuses, and the page as open as the other pages (read-only and remote
alike)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from test_http_pages import counts

from deliveryhelpers import busy_home
from dovecote.handle.api import Dovecote
from dovecote.http.app import create_app
from dovecote.model.results import builtins

pytestmark = pytest.mark.files_only


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return busy_home(tmp_path)


def section(html: str, anchor: str) -> str:
    """The HTML of the page's ``<section id=anchor>``."""
    start = html.index(f'id="{anchor}"')
    return html[start:html.index("</section>", start)]


def rows(html: str) -> list[str]:
    return re.findall(r'<tr data-id="([^"]+)"', html)


def test_every_count_on_the_delivery_page_links_to_exactly_the_rows_it_counts(client: TestClient,
                                                                               dc: Dovecote) -> None:
    html = client.get("/delivery").text
    found = counts(html)
    assert len(found) == 9, found  # deliveries, the six states, overdue acks, quarantined
    for tag, text, href in found:
        assert (tag == "a" and href) or text == "0", (tag, text, href)
    every = builtins(dc.trackers())["trackers"]
    linked = {href: int(text) for tag, text, href in found if href}
    assert linked["/delivery#trackers"] == len(every) == len(rows(section(html, "trackers")))
    for state in ("pending", "acked", "rejected", "timed_out", "not_applicable", "escalated"):
        href = f"/delivery?state={state}#trackers"
        want = [t["delivery_id"] for t in reversed(every) if (t["escalated"] if state == "escalated"
                                                               else t["ack_state"] == state)]
        assert linked.get(href, 0) == len(want) > 0, state
        assert rows(section(client.get(href).text, "trackers")) == want, state
    status = builtins(dc.status())
    assert linked["#overdue"] == status["overdue_total"] == len(rows(section(html, "overdue"))) == 1
    assert [t["delivery_id"] for t in status["overdue_acks"]] == rows(section(html, "overdue"))
    assert rows(section(html, "escalations")) == [t["delivery_id"] for t in status["escalations"]]
    assert linked["#quarantine"] == 1 and "env_unknown_recipient.json" in section(html, "quarantine")
    assert rows(section(html, "agents")) == ["agent:aya", "agent:tariq"]


def test_each_delivery_links_to_its_item_and_the_nav_links_the_page(client: TestClient) -> None:
    html = client.get("/delivery").text
    items = set(re.findall(r'href="(/entities/[^/"]+/items/[^"]+)"', html))
    assert items
    for href in items:
        assert client.get(href).status_code == 200, href
    assert 'href="/delivery" aria-current="page"' in html
    assert 'href="/delivery"' in client.get("/").text


def test_an_unknown_state_is_refused_as_a_page(client: TestClient) -> None:
    page = client.get("/delivery?state=online")
    assert page.status_code == 400 and "invalid_field" in page.text
    assert page.headers["content-type"].startswith("text/html")
    assert client.get("/delivery?color=red").status_code == 400


def test_the_page_reads_on_a_read_only_server_and_needs_a_session_on_a_remote_one(dc: Dovecote) -> None:
    with TestClient(create_app(dc, read_only=True)) as c:
        assert c.get("/delivery").status_code == 200
    with TestClient(create_app(dc, remote=True)) as c:
        assert c.get("/delivery").status_code == 401


def test_an_agent_token_is_refused_the_page_as_it_is_the_status_route(dc: Dovecote) -> None:
    agent = {"Authorization": f"Bearer {dc.token_issue('tariq').token}"}
    operator = {"Authorization": f"Bearer {dc.token_issue('aya', 'operator').token}"}
    with TestClient(create_app(dc, remote=True)) as c:
        page = c.get("/delivery", headers=agent)
        assert page.status_code == 403 and "forbidden" in page.text and rows(page.text) == []
        assert c.get("/api/v1/status", headers=agent).status_code == 403
        assert rows(c.get("/delivery", headers=operator).text)


def test_the_page_filters_by_every_ack_state_and_escalated_only() -> None:
    from dovecote.http.pages_delivery import STATES
    from dovecote.model.vocab_delivery import AckState

    assert set(STATES) == {s.value for s in AckState} | {"escalated"}

"""The headers of the server's faces (in process): every answer, whoever made it (MCP's too), carries the
Content-Security-Policy, X-Frame-Options, Referrer-Policy and X-Content-Type-Options of ``http.headers``; no
template brings back an inline script, an inline event handler or a style the policy would block; and the page's
own form, which a browser names ``Origin: null`` under ``Referrer-Policy: no-referrer``, still moves an item,
while one from another site does not."""

from __future__ import annotations

from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from test_http_actions import csrf_of, first_unseen, history, ledgers, signed_in

from dovecote.handle.api import Dovecote
from dovecote.http import headers
from dovecote.http.app import create_app
from serverhelpers import ENTITY, served_home

pytestmark = pytest.mark.files_only

#: What every answer must carry (names lower case, as httpx gives them).
WANT = {"content-security-policy": headers.POLICY, "x-frame-options": "DENY", "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff"}


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return served_home(tmp_path)


def assert_secured(response: Any) -> None:
    got = {k: response.headers.get(k) for k in WANT}
    assert got == WANT, (response.request.method, response.request.url, response.status_code)
    assert len(response.headers.get_list("content-security-policy")) == 1


def test_the_policy_forbids_framing_and_inline_script() -> None:
    directives = dict(d.strip().split(" ", 1) for d in headers.POLICY.split(";"))
    assert directives["frame-ancestors"] == "'none'" and directives["default-src"] == "'self'"
    assert "unsafe-inline" not in headers.POLICY and "unsafe-eval" not in headers.POLICY


def test_every_kind_of_answer_carries_the_headers(dc: Dovecote) -> None:
    c, sessions = signed_in(dc, hosts=["testserver"])
    ref = first_unseen(dc)
    answers = {
        "page": c.get(f"/entities/{ENTITY}"),
        "item page": c.get(f"/entities/{ENTITY}/items/{ref}"),
        "page not found": c.get("/no/such/page"),
        "login refused": c.get("/login/not-a-link"),
        "login redirect": c.get(f"/login/{sessions.issue('bob')}", follow_redirects=False),
        "refused form": c.post(f"/entities/{ENTITY}/items/{ref}/seen", data={"csrf": "x"}),
        "move redirect": c.post(f"/entities/{ENTITY}/items/{ref}/seen", follow_redirects=False,
                                data={"csrf": csrf_of(c.get(f"/entities/{ENTITY}").text)},
                                headers={"Origin": "http://testserver"}),
        "another host's page": c.get("/", headers={"Host": "rebound.example"}),
        "another host's json": c.get("/api/v1/doctor", headers={"Host": "rebound.example"}),
        "json": c.get("/api/v1/doctor"),
        "json refusal": c.get("/api/v1/no/such/route"),
        "openapi": c.get("/openapi.json"),
        "script": c.get("/static/live.js"),
        "styles": c.get("/static/app.css"),
    }
    statuses = {name: r.status_code for name, r in answers.items()}
    assert statuses == {"page": 200, "item page": 200, "page not found": 404, "login refused": 403,
                        "login redirect": 303, "refused form": 403, "move redirect": 303,
                        "another host's page": 421, "another host's json": 421, "json": 200,
                        "json refusal": 404, "openapi": 200, "script": 200, "styles": 200}
    for response in answers.values():
        assert_secured(response)


def test_a_bugs_page_carries_the_headers_too(dc: Dovecote, monkeypatch: pytest.MonkeyPatch) -> None:
    """Starlette renders a bug's 500 outside every middleware added to it: the headers are outside that."""
    def boom(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("a bug")
    monkeypatch.setattr(Dovecote, "doctor", boom)
    with TestClient(create_app(dc), raise_server_exceptions=False) as c:
        for path in ("/", "/api/v1/doctor"):
            r = c.get(path)
            assert r.status_code == 500 and "internal_error" in r.text
            assert_secured(r)


def test_the_mcp_faces_answers_carry_them_too(dc: Dovecote) -> None:
    """``dovecote serve``'s MCP at /mcp, in front of the web faces: its refusal and its answer."""
    from dovecote.mcp.http import in_front_of

    token = dc.token_issue(ENTITY).token
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    with TestClient(in_front_of(create_app(dc), dc), base_url="http://127.0.0.1:8765") as c:
        refused = c.post("/mcp", json=hello)
        answered = c.post("/mcp", json=hello, headers={"Authorization": f"Bearer {token}",
                                                       "Accept": "application/json, text/event-stream"})
        page = c.get("/")
    assert (refused.status_code, answered.status_code, page.status_code) == (401, 200, 200), answered.text
    for response in (refused, answered, page):
        assert_secured(response)


class Inline(HTMLParser):
    """What a template holds that the policy would block: inline script, inline handlers, styles."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "style" or name.startswith("on"):
                self.found.append(f"<{tag} {name}=...>")
            if (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value}>")
        if tag == "style":
            self.found.append("<style>")
        if tag == "script":
            src = dict(attrs).get("src") or ""
            if not src.startswith("/static/"):
                self.found.append(f"<script src={src!r}>: not a file of this server's static/")
            self._script = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = False

    def handle_data(self, data: str) -> None:
        if self._script and data.strip():
            self.found.append(f"<script>{data.strip()[:40]}</script>")


def inline_in(source: str) -> list[str]:
    p = Inline()
    p.feed(source)
    p.close()
    return p.found


def test_no_template_has_an_inline_script_a_handler_or_a_style() -> None:
    templates = resources.files("dovecote.http") / "templates"
    names = sorted(t.name for t in templates.iterdir() if t.name.endswith(".html"))
    assert "base.html" in names and "item.html" in names
    found = {name: inline_in((templates / name).read_text("utf-8")) for name in names}
    assert {name: f for name, f in found.items() if f} == {}
    # The check sees what it is for.
    assert inline_in('<a href="/" onclick="x()">') == ['<a onclick=...>']
    assert inline_in('<p style="color: red">') == ['<p style=...>']
    assert inline_in("<script>alert(1)</script>") == ["<script src=''>: not a file of this server's static/",
                                                     "<script>alert(1)</script>"]
    assert inline_in("<style>p {}</style>") == ["<style>"]


def test_the_pages_own_form_named_null_moves_the_item(dc: Dovecote) -> None:
    """Under ``Referrer-Policy: no-referrer`` a browser sends ``Origin: null`` with the page's own form, and says
    ``Sec-Fetch-Site: same-origin`` (a header no page can set)."""
    c, _ = signed_in(dc)
    ref = first_unseen(dc)
    csrf = csrf_of(c.get(f"/entities/{ENTITY}/items/{ref}").text)
    r = c.post(f"/entities/{ENTITY}/items/{ref}/seen", data={"csrf": csrf}, follow_redirects=False,
               headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 303, r.text
    assert history(dc, ref) == [("seen", "human.alice")]


@pytest.mark.parametrize("fetched", [{}, {"Sec-Fetch-Site": "same-site"}, {"Sec-Fetch-Site": "cross-site"},
                                     {"Sec-Fetch-Site": "none"}],
                         ids=["unsaid", "same-site", "cross-site", "none"])
def test_a_form_named_null_from_anywhere_else_is_refused(dc: Dovecote, fetched: dict[str, str]) -> None:
    """A page on another port of this machine is the same *site* (``same-site``), never the same origin."""
    c, _ = signed_in(dc)
    ref = first_unseen(dc)
    csrf = csrf_of(c.get(f"/entities/{ENTITY}/items/{ref}").text)
    before = ledgers(dc)
    r = c.post(f"/entities/{ENTITY}/items/{ref}/seen", data={"csrf": csrf}, headers={"Origin": "null", **fetched})
    assert r.status_code == 403 and "csrf_failed" in r.text
    assert ledgers(dc) == before

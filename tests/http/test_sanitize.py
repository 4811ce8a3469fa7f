"""A letter's body as a page shows it (``http.sanitize``): Markdown rendered, and nothing that runs survives.

A body is an agent's text. Script tags, event-handler attributes, ``javascript:`` and ``data:`` links, raw HTML
and styles are fed through the renderer by every road Markdown offers (inline, as a link, as an image, as raw
HTML, inside code), and the output is parsed back to check that no such tag, attribute or address is in it.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from dovecote.http.sanitize import TAGS, markdown

HOSTILE = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    '<img src=x onerror="alert(1)">',
    "<svg onload=alert(1)>",
    '<a href="https://ok.example" onclick="alert(1)">x</a>',
    '<div style="background:url(javascript:alert(1))">x</div>',
    "<iframe src=javascript:alert(1)></iframe>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](  javascript:alert(1) )",
    "[click](java&#115;cript:alert(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![img](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "![img](https://evil.example/track.png)",
    "<javascript:alert(1)>",
    "[ref]\n\n[ref]: javascript:alert(1)",
    "`<script>alert(1)</script>`",
    "```\n<script>alert(1)</script>\n```",
    '[x](https://ok.example "t" onmouseover=alert(1))',
    "<!-- <script>alert(1)</script> -->",
    "<vbscript:msgbox(1)>",
]


class Parsed(HTMLParser):
    """Every tag, attribute and link address in a piece of HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += attrs


def parsed(html: str) -> Parsed:
    p = Parsed()
    p.feed(html)
    return p


@pytest.mark.parametrize("body", HOSTILE)
def test_nothing_that_runs_survives(body: str) -> None:
    out = parsed(str(markdown(body)))
    assert set(out.tags) <= TAGS and not {"script", "img", "svg", "iframe", "style"} & set(out.tags)
    assert [a for a, _ in out.attributes if a.startswith("on") or a == "style" or a == "src"] == []
    hrefs = [v or "" for a, v in out.attributes if a == "href"]
    assert all(h.startswith(("https://", "http://", "mailto:")) for h in hrefs), hrefs


def test_raw_html_is_shown_as_the_text_it_is() -> None:
    assert str(markdown("<b>bold?</b>")) == "<p>&lt;b&gt;bold?&lt;/b&gt;</p>\n"


def test_markdown_is_rendered_and_a_link_cannot_reach_back() -> None:
    html = str(markdown("# Title\n\n**bold** and `code`\n\n- one\n- two\n\n[docs](https://example.org/d)"))
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html and "<code>code</code>" in html
    assert "<li>one</li>" in html
    assert '<a href="https://example.org/d" rel="noopener noreferrer nofollow">docs</a>' in html


def test_a_table_renders() -> None:
    html = str(markdown("| a | b |\n|---|---|\n| 1 | 2 |"))
    assert "<table>" in html and "<td>1</td>" in html


def test_a_plain_text_body_keeps_its_lines() -> None:
    assert str(markdown("line one\nline two")) == "<p>line one<br>\nline two</p>\n"

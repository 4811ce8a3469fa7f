"""MkDocs hooks (``hooks:`` in mkdocs.yml): the generated sections of the site, put in place at build time.

A page holds a marker, ``<!-- dovecote:NAME -->``, where a section drawn from the code goes; this hook
replaces it with what ``SECTIONS[NAME]`` answers. A marker naming no section fails the build, so a typo
cannot leave a page silently without its reference. The CLI page is built by mkdocs-click from the click
command of the Typer app (``sitegen.clicommand``); its help texts are plain text, so a word in angle
brackets (``msg_<uuid7>``) is shown as written rather than taken for an HTML tag.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # mkdocs-click imports sitegen.clicommand by name
    sys.path.insert(0, str(ROOT))

from sitegen import lifecycle, reference  # noqa: E402

SECTIONS: dict[str, Callable[[], str]] = {
    "rest-routes": reference.rest_routes,
    "mcp-summary": reference.mcp_summary,
    "mcp-catalog": reference.mcp_catalog,
    "errors": reference.errors,
    "crash-points": reference.crash_points,
    "bench-goals": reference.bench_goals,
    "bench-figures": reference.bench_figures,
    "lifecycle": lifecycle.lifecycle,
}

MARKER = re.compile(r"<!-- dovecote:([a-z-]+) -->")

#: The tags the CLI page's HTML is made of; anything else in angle brackets came from a help text.
HTML_TAGS = frozenset({
    "a", "p", "div", "span", "code", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "strong", "em",
    "table", "thead", "tbody", "tr", "th", "td", "br", "hr", "nav", "label", "input", "img", "svg", "path",
    "details", "summary", "blockquote",
})
TAG = re.compile(r"</?([A-Za-z][\w.-]*)(?=[\s/>])[^<>]*>")


class UnknownSection(Exception):
    """A page names a generated section this hook does not know."""


def on_config(config: Any) -> Any:
    """Keep the built site free of scripts from other servers: Material's offline plugin (whose hook runs
    first) names a shim on a CDN for search from ``file://``; without it search works wherever the site is
    served over HTTP (``make docs``, any static server) and every page still opens from the files."""
    polyfills = config.extra.get("polyfills", [])
    config.extra["polyfills"] = [url for url in polyfills if not url.startswith(("http://", "https://", "//"))]
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in SECTIONS:
            raise UnknownSection(f"{page.file.src_path}: no generated section {name!r} (known: {sorted(SECTIONS)})")
        return SECTIONS[name]()

    return MARKER.sub(fill, markdown)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_path != "reference/cli.md":
        return html
    return TAG.sub(lambda m: m.group(0) if m.group(1).lower() in HTML_TAGS else
                   m.group(0).replace("<", "&lt;").replace(">", "&gt;"), html)

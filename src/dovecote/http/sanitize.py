"""A letter's body as the Human View shows it: Markdown rendered, then sanitised.

Law: a body is an agent's text, so the page never trusts it as HTML. It is
rendered by markdown-it-py with raw HTML off (an HTML tag in a body is shown as
the text it is), and what comes out passes through nh3 (the ammonia sanitiser)
with a short list of tags, no attribute but a link's ``href`` and ``title``, and
only ``http``, ``https`` and ``mailto`` links: no script, no event handler, no
``javascript:`` or ``data:`` URL, no style, no image (an image would fetch from
wherever a body names). This is the one place a body becomes markup; agents
read the same body as the text it was written as (``show``, the injections).
"""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

__all__ = ["TAGS", "markdown"]

#: The tags a rendered body may keep: text structure, emphasis, code, lists, quotes, tables and links.
TAGS = frozenset({
    "a", "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code", "pre",
    "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td",
})
#: A link's attributes; ``rel`` is set by the sanitiser itself on every link.
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
SCHEMES = frozenset({"http", "https", "mailto"})

#: ``breaks``: a single newline is a line break, as agents (and the ``<pre>`` bodies were) write plain text
_MD = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False}).enable("table")


def markdown(body: str) -> Markup:
    """``body`` (Markdown, untrusted) as safe HTML for a page."""
    html = _MD.render(body)
    return Markup(nh3.clean(html, tags=set(TAGS), attributes={k: set(v) for k, v in ATTRIBUTES.items()},
                            url_schemes=set(SCHEMES), link_rel="noopener noreferrer nofollow",
                            strip_comments=True))

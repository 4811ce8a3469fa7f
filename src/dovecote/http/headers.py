"""The headers every answer of ``dovecote serve`` carries: the Human View is a web application another site must
not frame, and nothing the server sends is run as something else.

Law: one place adds them, around the whole app (``Secured``, the outermost layer
``app.App`` builds), so every answer carries them whoever made it: a page, the
error page of a refusal, of a Host the guard refused or of a bug (Starlette
renders that one outside every other middleware), a redirect, the REST API's
JSON, the event stream and the static files; and the MCP face's answers, which
its bearer check sends through ``secured`` (``mcp.http``), so every answer of
``dovecote serve`` carries them.

- ``Content-Security-Policy`` (``POLICY``): the page loads its script, styles,
  event stream and fetches from this server only, runs no inline script or
  style (the templates carry none: the script and the CSS are files under
  ``static/``, and a test parses every template for one), posts forms only
  here, and no page of any origin may frame it (``frame-ancestors 'none'``): a
  page on another port of this machine is the same *site* as this server, so
  the SameSite=Strict session cookie would reach a framed page, and one click
  on a hidden frame would be the signed-in person's move. Images are this
  server's or ``data:`` URLs: the tab's icon is drawn in the page
  (``static/badge.js``, the count of what needs a person) and set as one.
- ``X-Frame-Options: DENY``: the same refusal for browsers that predate
  ``frame-ancestors``.
- ``Referrer-Policy: no-referrer``: a page's address (an item's id, a search's
  words) is never sent to another site. A browser then sends ``Origin: null``
  on the page's own forms, which ``session.same_origin`` admits only with the
  browser's ``Sec-Fetch-Site: same-origin``.
- ``X-Content-Type-Options: nosniff``: a JSON answer or a letter's text is never
  sniffed into HTML or script.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: What a page may load and who may frame it (see the module docstring).
POLICY = ("default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; "
          "object-src 'none'")

#: Added to every HTTP answer, as ASGI header pairs.
SECURE: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", POLICY.encode("ascii")),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
)


def secured(send: Send) -> Send:
    """``send`` that adds ``SECURE`` to the start of the HTTP answer it sends."""
    async def send_secured(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *SECURE]}
        await send(message)

    return send_secured


class Secured:
    """ASGI middleware: ``SECURE`` added to the start of every HTTP answer ``app`` sends."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, secured(send) if scope["type"] == "http" else send)

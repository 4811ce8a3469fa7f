"""The server's outermost layer: every request held to the limits table, every error in the one JSON shape.

Law: ``dovecote serve`` (and ``dovecote mcp --http``) answer every failure in
the one error shape (``errors.py``), whichever layer meets it, and hold REST
and MCP to the same request limits (``verbs.limits``). Two pieces do it, both
outside every face, so no face keeps a copy:

- ``Shield`` wraps the whole ASGI app (MCP in front of the web faces). It
  refuses a query string over ``MAX_QUERY`` bytes and a body over ``MAX_BODY``
  (by its declared length, or as a chunked body streams in) as ``too_large``
  before any face reads them; an error another layer answers in plain text
  (the MCP SDK's 421 for a wrong Host, its 403 for a wrong Origin, its 400 for
  a wrong content type, Starlette's 404 inside the MCP app) is rewritten into
  the shape, its keyword from ``FOREIGN``; an exception that escapes before a
  response began is ``internal_error``. The faces' own JSON answers pass as
  they are, so do the Human View's error pages (HTML in the same words) and the
  MCP protocol's own JSON-RPC errors, which an MCP client reads.
- ``Protocol`` is uvicorn's httptools protocol, which answers before the app
  runs: a request head (request line and headers) over ``MAX_HEAD`` bytes is
  ``too_large`` (httptools itself takes a header of any size, and answers a
  URL past 64 KiB as unparsable), and its one plain-text answer, the 400 for a
  request it cannot parse, is ``bad_request`` in the shape.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from http import HTTPStatus
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.http.errors import body_of

#: The keyword of an error status another layer answered in plain text; any other 4xx is ``bad_request``.
FOREIGN = {400: "bad_request", 403: "wrong_host", 404: "not_found", 405: "method_not_allowed", 413: "too_large",
           421: "wrong_host"}
#: What a face answers in its own words, passed as it is: JSON (the shape, or MCP's JSON-RPC) and HTML pages.
OWN = (b"application/json", b"text/html")


def encoded(body: dict[str, Any]) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and bytes of an error body."""
    data = orjson.dumps(body)
    return [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())], data


async def reply(send: Send, body: dict[str, Any]) -> None:
    """Answer ``body`` (the one error shape) with its status."""
    headers, data = encoded(body)
    await send({"type": "http.response.start", "status": body["status"], "headers": headers})
    await send({"type": "http.response.body", "body": data})


def foreign(status: int, text: bytes) -> dict[str, Any]:
    """A plain-text error of another layer as the shape: its keyword by status, its text as the detail."""
    said = text.decode("utf-8", "replace").strip()[:500]
    if status >= 500:
        return body_of(RuntimeError(said or f"status {status}"))
    reason = FOREIGN.get(status, "bad_request")
    return Refusal(reason, said or f"the server answered {status}").body()


class Shield:
    """ASGI middleware around the whole server (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused, chunked = self.head(scope)
        if refused is not None:
            await reply(send, refused.body())
            return
        if chunked:  # no declared length: read it here, up to the limit, and hand it on whole
            whole = await _buffered(receive)
            if whole is None:
                size = verbs.MAX_BODY
                await reply(send, Refusal("too_large", f"the body is over {size} bytes; a request body is at most "
                                                       f"{size}").body())
                return
            receive = whole
        started: dict[str, Any] = {}

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                started["status"] = message["status"]
                if message["status"] >= 400 and _content_type(message) not in OWN:
                    started["held"] = []  # a foreign error: its body is read, then answered in the shape
                    return
            elif "held" in started:
                started["held"].append(message.get("body", b""))
                if not message.get("more_body", False):
                    await reply(send, foreign(started["status"], b"".join(started["held"])))
                    started["answered"] = True
                return
            await send(message)

        try:
            await self.app(scope, receive, guarded)
        except Exception as exc:
            if "status" in started and ("held" not in started or "answered" in started):
                raise  # the answer began (or Starlette re-raises after its 500): uvicorn logs it, as without the shield
            await reply(send, body_of(exc))

    @staticmethod
    def head(scope: Scope) -> tuple[Refusal | None, bool]:
        """The refusal of a request over the limits table by what its head says (or None), and whether its
        body comes chunked (no declared length). One pass over the headers: it runs on every request."""
        query = len(scope["query_string"])
        if query > verbs.MAX_QUERY:
            return Refusal("too_large", f"the query string is {query} bytes; a query string is at most "
                                        f"{verbs.MAX_QUERY}"), False
        chunked = False
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > verbs.MAX_BODY:
                return Refusal("too_large", f"the body is {int(value)} bytes; a request body is at most "
                                            f"{verbs.MAX_BODY}"), False
            chunked = chunked or name == b"transfer-encoding"
        return None, chunked


def _content_type(message: MutableMapping[str, Any]) -> bytes:
    for name, value in message.get("headers", ()):
        if name.lower() == b"content-type":
            return bytes(value).split(b";")[0].strip().lower()
    return b""


async def _buffered(receive: Receive) -> Receive | None:
    """``receive`` read whole (at most ``MAX_BODY`` bytes) and replayed; None when the body is over."""
    chunks: list[bytes] = []
    size, ended = 0, False
    while not ended:
        message = await receive()
        if message["type"] != "http.request":  # the client left: the app meets that as it would have
            return _replay([message], receive)
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > verbs.MAX_BODY:
            return None
        ended = not message.get("more_body", False)
    return _replay([{"type": "http.request", "body": b"".join(chunks), "more_body": False}], receive)


def _replay(held: list[Message], receive: Receive) -> Receive:
    async def replay() -> Message:
        return held.pop(0) if held else await receive()

    return replay


class Protocol(HttpToolsProtocol):
    """uvicorn's httptools protocol: a request head over ``MAX_HEAD`` bytes is refused before httptools buffers
    it (httptools takes a header of any size), and its 400 for a request it cannot parse is the one shape."""

    #: Bytes of the request head read so far; None while its body is read (counting starts again after it).
    head_read: int | None = 0

    def data_received(self, data: bytes) -> None:
        if self.head_read is not None:
            self.head_read += len(data)
            if self.head_read > verbs.MAX_HEAD:
                self.answer(Refusal("too_large", f"the request head is over {verbs.MAX_HEAD} bytes"))
                return
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self.head_read = None
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.head_read = 0

    def send_400_response(self, msg: str) -> None:
        self.answer(Refusal("bad_request", msg))

    def answer(self, refused: Refusal) -> None:
        """Answer ``refused`` in the shape and close the connection (the request cannot be read on)."""
        headers, data = encoded(refused.body())
        head = [f"HTTP/1.1 {refused.status} {HTTPStatus(refused.status).phrase}".encode()]
        head += [name + b": " + value for name, value in self.server_state.default_headers]
        head += [name + b": " + value for name, value in headers] + [b"connection: close"]
        self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + data)
        self.transport.close()

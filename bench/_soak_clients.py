"""The soak's two kinds of client: REST over one keep-alive HTTP/1.1 connection, MCP through the SDK.

Both offer the same six calls an agent makes (send, inbox, move, wait, search,
show) and answer every one as an ``Answer``: the reply's data when the server
said yes, else the refusal's keyword (REST: the error body's ``reason``; MCP:
the ``<keyword>: ...`` text of an ``isError`` result) or the transport failure.
The soak's judge (``soak.py``) decides which refusals an agent asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import orjson
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

#: The keyword of an answer that is no reply of the server's (the connection failed or the reply was garbled).
TRANSPORT = "transport"


@dataclass(frozen=True, slots=True)
class Answer:
    """One call's outcome: ``data`` when the server said yes, else ``reason`` (a keyword) and ``detail``."""

    data: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.reason is None


class Rest:
    """One agent's REST client: one keep-alive connection, reopened only after a transport failure."""

    face = "rest"

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Answer:
        data = orjson.dumps(body) if body is not None else b""
        try:
            if self.conn is None:
                self.conn = await asyncio.open_connection("127.0.0.1", self.port)
            reader, writer = self.conn
            writer.write(f"{method} /api/v1{path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                         f"Authorization: Bearer {self.token}\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            status = int(head[0].split(" ", 2)[1])
            length = next((int(v) for k, _, v in (h.partition(":") for h in head[1:])
                           if k.lower() == "content-length"), 0)
            answer = orjson.loads(await reader.readexactly(length)) if length else {}
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, IndexError) as e:
            await self.close()
            return Answer(reason=TRANSPORT, detail=f"{type(e).__name__}: {e}")
        if 200 <= status < 300 and isinstance(answer, dict):
            return Answer(answer)
        reason = answer.get("reason") if isinstance(answer, dict) else None
        detail = answer.get("detail", "") if isinstance(answer, dict) else str(answer)
        return Answer(reason=str(reason or f"http_{status}"), detail=f"{status} {detail}")

    async def send(self, to: str, subject: str, body: str) -> Answer:
        return await self._request("POST", f"/entities/{to}/messages", {"subject": subject, "body": body})

    async def inbox(self, me: str) -> Answer:
        return await self._request("GET", f"/entities/{me}/inbox")

    async def move(self, me: str, ref: str, kind: str, **options: Any) -> Answer:
        return await self._request("POST", f"/entities/{me}/items/{ref}/{kind}", options)

    async def wait(self, me: str, after: str | None, timeout: float) -> Answer:
        query = {"timeout": timeout, **({"after": after} if after else {})}
        return await self._request("GET", f"/entities/{me}/wait?{urlencode(query)}")

    async def search(self, me: str, query: str) -> Answer:
        return await self._request("GET", f"/search?query={quote(query)}&entity_id={me}&limit=20")

    async def show(self, me: str, ref: str) -> Answer:
        return await self._request("GET", f"/entities/{me}/items/{ref}")

    async def close(self) -> None:
        if self.conn is not None:
            _, writer = self.conn
            self.conn = None
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


class Mcp:
    """One agent's MCP client: its own streamable-HTTP session, as a separate agent process would have.

    The session runs in a task of its own (``_session``), not in the task making the calls: the SDK's
    transport is a task group, and when one of its POSTs fails before any response (a refused or
    dropped connection, a read timeout) it cancels that group's scope, which the caller would get as a
    bare ``CancelledError`` with the cause hidden (python-sdk #3560). Here the group's own task takes the
    cancellation; the call in flight then fails as a closed stream, counted as a transport error whose
    detail names what the transport died of, and the next call opens a new session, as an agent would.
    """

    face = "mcp"

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.client: Client | None = None
        self.task: asyncio.Task[None] | None = None
        self.died: str | None = None  # what the last session's transport died of
        self._stop = asyncio.Event()

    async def open(self) -> None:
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self.task = asyncio.create_task(self._session(ready))
        await ready

    async def _session(self, ready: asyncio.Future[None]) -> None:
        try:
            async with create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"}) as http, \
                    Client(streamable_http_client(self.url, http_client=http)) as client:
                self.client = client
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as e:  # the transport's end, whatever it was: kept for the next call's detail
            self.died = _cause(e)
            if not ready.done():
                ready.set_exception(ConnectionError(self.died))
            if not isinstance(e, Exception):
                raise
        finally:
            self.client = None

    async def _call(self, tool: str, arguments: dict[str, Any]) -> Answer:
        try:
            if self.client is None:
                await self.open()
            assert self.client is not None and self.task is not None
            call = asyncio.ensure_future(self.client.call_tool(tool, arguments))
            await asyncio.wait({call, self.task}, return_when=asyncio.FIRST_COMPLETED)
            if not call.done():  # the session ended under the call: it will never be answered
                call.cancel()
                with contextlib.suppress(BaseException):
                    await call
                raise ConnectionError("the session ended with this call unanswered")
            r = call.result()
        except Exception as e:  # a transport failure is the soak's error to count, never a crash of the driver
            await asyncio.sleep(0)  # let the session's task record what it died of
            died = f" (the session's transport: {self.died})" if self.died else ""
            await self.close()
            return Answer(reason=TRANSPORT, detail=f"{type(e).__name__}: {e}{died}")
        text = r.content[0].text if r.content and hasattr(r.content[0], "text") else ""
        if r.is_error:
            return Answer(reason=text.split(":", 1)[0] or "error", detail=text)
        if not isinstance(r.structured_content, dict):
            return Answer(reason="no_structured_content", detail=text)
        return Answer(r.structured_content)

    async def send(self, to: str, subject: str, body: str) -> Answer:
        return await self._call("send", {"recipient": to, "subject": subject, "body": body})

    async def inbox(self, me: str) -> Answer:
        return await self._call("inbox", {"entity_id": me})

    async def move(self, me: str, ref: str, kind: str, **options: Any) -> Answer:
        return await self._call("move", {"kind": kind, "entity_id": me, "ref": ref, **options})

    async def wait(self, me: str, after: str | None, timeout: float) -> Answer:
        return await self._call("wait", {"entity_id": me, "timeout": timeout, **({"after": after} if after else {})})

    async def search(self, me: str, query: str) -> Answer:
        return await self._call("search", {"query": query, "entity_id": me, "limit": 20})

    async def show(self, me: str, ref: str) -> Answer:
        return await self._call("show", {"entity_id": me, "ref": ref})

    async def close(self) -> None:
        task, self.task = self.task, None
        if task is not None:
            self._stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(task), 10)
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task


def _cause(e: BaseException) -> str:
    """The first leaf of an exception group (the transport's real error), as ``Type: message``."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"

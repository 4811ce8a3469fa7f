"""``GET /api/v1/events``: server-sent events, one per new letter in any box.

Law: an event's id is the feed cursor after it (``Dovecote.watch``/``poll``;
a count of letters per box, see ``ops.agents.feed``), so a client that reconnects
with ``Last-Event-ID`` is given every letter appended since, each exactly once,
whichever process appended it and even across a server restart. A stream
opened without it starts at the end of every box: only later letters are new.

The stream polls the handle every ``interval`` seconds in a worker thread
(each poll reads only what was appended since, a size check when nothing is)
and never on the event loop; a comment line every ``keepalive`` seconds keeps
proxies from closing a quiet stream. A cursor that is not one the feed wrote
is refused before the stream opens (400, the error shape).

Whose letters: the one authorization rule's (``remote.watch``): an agent
token's stream carries its own box's events alone, and a cursor it resumes
from replays that box alone; an operator token's, or a local reader's (no
token on loopback, the signed-in person), every box's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import msgspec
from starlette.requests import Request
from starlette.responses import StreamingResponse

from dovecote.handle import remote
from dovecote.handle.api import Dovecote, Event, Watch
from dovecote.http import rest

PATH = "/events"
#: Seconds between two polls of the boxes, and between two keep-alive comments.
INTERVAL = 0.25
KEEPALIVE = 15.0

Run = Callable[..., Awaitable[Any]]


def frame(event: Event) -> bytes:
    """One SSE frame: ``id`` (the cursor), ``event: letter`` and the event as one line of JSON."""
    return b"id: " + event.id.encode() + b"\nevent: letter\ndata: " + msgspec.json.encode(event) + b"\n\n"


def _cursor(request: Request) -> str | None:
    """Where the client resumes: ``Last-Event-ID`` (what EventSource sends on reconnect), else none."""
    given = request.headers.get("last-event-id")
    return given if given else None


def _poll(dc: Dovecote, w: Watch) -> list[Event]:
    return dc.poll(w)


async def stream(request: Request, run: Run, *, interval: float = INTERVAL,
                 keepalive: float = KEEPALIVE) -> StreamingResponse:
    """The event stream of one client (see the module docstring)."""
    # whose boxes (the one rule), and a bad cursor refused here, before any byte is sent
    watch = await run(remote.watch, rest.principal(request), _cursor(request))

    async def frames() -> AsyncIterator[bytes]:
        yield b"retry: 1000\n: dovecote events; id is a cursor, resume with Last-Event-ID\n\n"
        quiet = 0.0
        while True:
            events = await run(_poll, watch)
            for ev in events:
                yield frame(ev)
            if events:
                quiet = 0.0
            elif quiet >= keepalive:
                yield b": keep-alive\n\n"
                quiet = 0.0
            await anyio.sleep(interval)
            quiet += interval

    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(frames(), media_type="text/event-stream", headers=headers)

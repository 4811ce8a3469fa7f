"""``GET /api/v1/entities/{entity_id}/wait``: the REST long poll, with ``dovecote wait``'s semantics.

Law: a waiting request holds no worker of the handle. ``dovecote wait``
blocks its own process in ``ops.mail.wait``; a server cannot (one handle serves
every request), so here the verb's own call runs with ``timeout=0`` (an
answer now: the new items after the cursor, or none and the cursor as it
stands), and between two such calls the request sleeps on the event loop and
watches the box's stamp (a stat of one ledger, ``Dovecote.stamp``, in a
thread of its own), calling the verb again only when the stamp moved. The
stamp is taken before the first call, so a letter landing in between moves it.
The answer is the verb's: ``items`` and ``cursor``, ``timed_out`` true when
the timeout passed with nothing new (200 either way; the CLI's exit 1 is
``timed_out``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from dovecote import verbs

if TYPE_CHECKING:
    from dovecote.handle.api import WaitResult

#: Seconds between two stamps of the watched box.
POLL = 0.05

Run = Callable[..., Awaitable[Any]]


async def wait(run: Run, stamp: Run, call: Any, principal: Any, v: verbs.Wait) -> WaitResult:
    """The wait ``v`` for ``principal`` (see the module docstring); ``call`` is the verb's remote call."""
    address = f"entity:{v.entity_id}"
    deadline = anyio.current_time() + v.timeout
    mark = await stamp(address)
    now = msgspec.structs.replace(v, timeout=0.0)
    got: WaitResult = await run(call, principal, now)
    while not got.items:
        left = deadline - anyio.current_time()
        if left <= 0:
            return msgspec.structs.replace(got, timed_out=True)
        await anyio.sleep(min(POLL, left))
        moved = await stamp(address)
        if moved != mark:
            mark = moved
            now = msgspec.structs.replace(v, timeout=0.0, after=got.cursor)
            got = await run(call, principal, now)
    return got

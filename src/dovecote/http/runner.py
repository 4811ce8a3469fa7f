"""Calls on the server's one warm handle, off the event loop.

Law: the event loop never runs a handle call (a durable write waits for an
fsync, a cold read of a big ledger takes its time, and the event streams and
every other request must not stall meanwhile). Calls run in worker threads,
up to ``WORKERS`` at once, so concurrent sends to one box meet in the ledger's
group commit (``commit.py``) and share an fsync instead of queueing behind one
thread. The handle is safe for that: every write is a section under its box's
lock (a compare-and-swap decides there), warm folds are fed under per-box locks
(``folds.py``), and the MCP face calls the same handle from its own workers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from dovecote.api import Dovecote

#: How many handle calls may run at once (threads mostly wait on fsyncs and locks, not the CPU).
WORKERS = 16


class Runner:
    """Calls on the handle, each in a worker thread, each on the roster as it is on disk now."""

    def __init__(self, handle: Dovecote, workers: int = WORKERS) -> None:
        self.handle = handle
        self.workers = workers
        self._limiter: anyio.CapacityLimiter | None = None

    async def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._limiter is None:  # made on the event loop that uses it
            self._limiter = anyio.CapacityLimiter(self.workers)
        return await anyio.to_thread.run_sync(functools.partial(self._call, fn, *args), limiter=self._limiter)

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        self.handle.refresh()  # a project or entity another process added is seen at once
        return fn(self.handle, *args)

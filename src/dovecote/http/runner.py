"""Calls on the server's one warm handle, off the event loop.

Law: the event loop never runs a handle call (a durable write waits for an
fsync, a cold read of a big ledger takes its time, and the event streams and
every other request must not stall meanwhile). Calls run in worker threads,
up to ``WORKERS`` at once, so concurrent sends to one box meet in the ledger's
group commit (``commit.py``) and share an fsync instead of queueing behind one
thread. The handle is safe for that: every write is a section under its box's
lock (a compare-and-swap decides there), warm folds are fed under per-box locks
(``folds.py``), and the MCP face calls the same handle from its own workers.

The threads are a plain ``ThreadPoolExecutor`` reached with
``loop.run_in_executor``: a send is one hop there and one back, about half
the event loop's CPU of anyio's ``to_thread`` (its capacity limiter, cancel
scope and per-call worker bookkeeping), measured in ``bench/README.md``. A
request cancelled meanwhile (its client left) stops waiting, but its call runs
to the end in its thread: a write that began is finished and fsynced, never
cut half way. The pool is made on the first call, so a ``serve --workers N``
process makes its own after the fork (threads do not survive one), and all its
threads are started then: a ``ThreadPoolExecutor`` otherwise adds a thread
whenever a call finds none idle and never ends one, so a server's thread count
would creep up with every rarer burst of concurrency for as long as it runs.
Started up front, the count is the pools' sizes from the first call to the
last (the soak checks it stays flat, ``bench/_soak_samples.py``).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from dovecote.handle.api import Dovecote

#: How many handle calls may run at once (threads mostly wait on fsyncs and locks, not the CPU): as
#: many as the PostgreSQL store has connections (``Dovecote.CALLS_AT_ONCE``).
WORKERS = Dovecote.CALLS_AT_ONCE


def started(size: int, name: str) -> ThreadPoolExecutor:
    """A pool whose ``size`` threads all run already: each of ``size`` tasks waits for the others at a
    barrier, so no task finds an idle thread and each submit starts one."""
    pool = ThreadPoolExecutor(size, thread_name_prefix=name)
    gate = threading.Barrier(size)
    for task in [pool.submit(gate.wait, 30.0) for _ in range(size)]:
        task.result()
    return pool


class Pool:
    """``size`` threads, all started on the first call (see the module docstring); ``await pool(fn, *args)``."""

    def __init__(self, size: int, name: str) -> None:
        self.size, self.name = size, name
        self._pool: ThreadPoolExecutor | None = None

    async def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._pool is None:  # made in the process that serves (after a fork), on first use
            self._pool = started(self.size, self.name)
        return await asyncio.get_running_loop().run_in_executor(self._pool, functools.partial(fn, *args))


class Runner:
    """Calls on the handle, each in a worker thread, each on the roster as it is on disk now."""

    def __init__(self, handle: Dovecote, workers: int = WORKERS) -> None:
        self.handle = handle
        self.workers = workers
        self._pool = Pool(workers, "dovecote-handle")

    async def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await self._pool(self._call, fn, *args)

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        self.handle.refresh()  # a project or entity another process added is seen at once
        return fn(self.handle, *args)

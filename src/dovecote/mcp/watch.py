"""The watcher: which subscribed boxes grew, from any process, for one notification each.

One task per server, whatever the number of subscribers: each tick it takes
the stamp of every watched box (``Dovecote.stamp``: a stat of one ledger, never
a read) in one worker thread, and for every box whose stamp moved it calls
``updated(uri)`` once per subscribed URI. A letter appended by another process
(``dovecote send`` from a shell) moves the stamp like one written here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from dovecote.errors import DovecoteError
from dovecote.http.runner import Pool

log = logging.getLogger(__name__)

Stamp = tuple[int, int]


@dataclass
class _Watch:
    address: str
    subscribers: int
    stamp: Stamp | None


class Watcher:
    """Stamps of the watched boxes by URI; ``running()`` is the one polling task."""

    def __init__(
        self, stamp: Callable[[str], Stamp], updated: Callable[[str], Awaitable[None]], *, poll: float = 0.1
    ) -> None:
        self._stamp = stamp
        self._updated = updated
        self.poll = poll
        self._watches: dict[str, _Watch] = {}
        self._lock = threading.Lock()  # watch() runs in a worker thread, ticks on the loop
        self._tasks = 0
        self._worker = Pool(1, "dovecote-watch")  # one tick at a time: one thread, for as long as it runs

    def watch(self, uri: str, address: str) -> None:
        """Watch ``uri`` (one more subscriber), from the box's stamp now: only later growth notifies."""
        now = self._safe_stamp(address)
        with self._lock:
            w = self._watches.get(uri)
            if w is None:
                self._watches[uri] = _Watch(address, 1, now)
            else:
                w.subscribers += 1

    def unwatch(self, uri: str) -> None:
        with self._lock:
            w = self._watches.get(uri)
            if w is not None:
                w.subscribers -= 1
                if w.subscribers <= 0:
                    del self._watches[uri]

    def watched(self) -> dict[str, str]:
        """URI -> box address, for every URI someone is subscribed to."""
        with self._lock:
            return {uri: w.address for uri, w in self._watches.items()}

    def _safe_stamp(self, address: str) -> Stamp | None:
        try:
            return self._stamp(address)
        except DovecoteError as e:  # an unreadable box is retried next tick, and named in the log
            log.warning("cannot stamp %s: %s", address, e)
            return None

    def _stamps(self, addresses: set[str]) -> dict[str, Stamp | None]:
        return {a: self._safe_stamp(a) for a in addresses}

    async def tick(self) -> list[str]:
        """One round: the URIs whose box grew since the last round (each was notified)."""
        watched = self.watched()
        if not watched:
            return []
        stamps = await self._worker(self._stamps, set(watched.values()))
        moved = []
        with self._lock:
            for uri, w in self._watches.items():
                now = stamps.get(w.address, w.stamp)
                if uri in watched and now is not None and now != w.stamp:
                    if w.stamp is not None:
                        moved.append(uri)
                    w.stamp = now
        for uri in moved:
            await self._updated(uri)
        return moved

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Poll while the context is open; a second entry (another transport session) shares the first task."""
        if self._tasks:
            self._tasks += 1
            try:
                yield
            finally:
                self._tasks -= 1
            return
        self._tasks = 1
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._loop)
            try:
                yield
            finally:
                self._tasks -= 1
                tg.cancel_scope.cancel()

    async def _loop(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:  # one bad round must not end the watching
                log.exception("watcher tick failed")
            await anyio.sleep(self.poll)

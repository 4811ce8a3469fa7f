"""The warm search index of one handle: opened, replaced and handed to one thread at a time.

A server runs many threads over one handle, and they share its index
connection. A thread that finds the index file deleted or replaced opens a new
one, and a thread whose index went bad rebuilds it; closing the old connection
while another thread is inside it is "Cannot operate on a closed database" (the
file soak's search 503s) or a crash inside SQLite (tests/ops/search/test_search_threads.py).
So:

* the warm index is looked at, opened and replaced under one lock of the handle
  (``Registry.lock_of``): two threads never both open a new file;
* a replaced index is *retired*: closed at once if no thread is inside it, else
  by the last thread to leave it (``held``), never beneath another;
* ``held`` hands out an index under its own lock, and only an open, current
  one: a thread that waited for an index retired meanwhile takes its successor.

Across processes (two server workers, a cold CLI beside them), the look at
whether the file is there, the discarding of what a deleted or bad index left
and the making of the new file happen under an ``flock`` on a lock file beside
it, so one process never unlinks the file (or the WAL) another has just made.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from dovecote.errors import StoreError
from dovecote.ops.search.index import INDEX_FILE, WARM_KEY, SearchIndex, busy, connect, discard, unusable
from dovecote.store.capability import Capability, can
from dovecote.util import fileops
from dovecote.util.osutil import lock

if TYPE_CHECKING:
    from dovecote.ops.context import Context


#: The inode of an index whose file went between its opening and the look at it: no file has it.
_GONE = -1


def _ino(path: Path | None) -> int | None:
    """The index file's own inode: a warm handle notices its cache deleted or replaced."""
    if path is None:
        return None
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _opened_ino(path: Path | None) -> int | None:
    """The inode of the file just opened at ``path``; ``_GONE`` if it was deleted meanwhile, so
    that index is never taken for current (a None here once meant "no file to watch")."""
    ino = _ino(path)
    return _GONE if ino is None and path is not None else ino


def index_path(ctx: Context) -> Path | None:
    """Where the index of ``ctx``'s home lives; None (in memory) for a store whose marks die with it."""
    if not can(ctx.store, Capability.lasting_marks):
        return None
    return ctx.layout.cache_dir() / INDEX_FILE  # never a cache/ that is a link out of the home


@contextlib.contextmanager
def _file_locked(path: Path | None) -> Iterator[None]:
    """Hold the index's lock file (``<index>.lock``) against other processes; nothing to hold
    in memory, or where no lock file can be made (a read-only home: nothing is made there)."""
    fd = None
    if path is not None:
        with contextlib.suppress(OSError):
            fd = fileops.open_lock(f"{path}.lock", follow=False)
    try:
        if fd is not None:
            lock(fd)
        yield
    finally:
        if fd is not None:
            fileops.close(fd)


def _current(idx: SearchIndex | None, path: Path | None) -> bool:
    return idx is not None and not idx.retired and (idx.path is None or idx.ino is None or _ino(path) == idx.ino)


def open_index(ctx: Context) -> SearchIndex:
    """The warm index, reopened if its file was deleted or replaced or it was retired, rebuilt if
    unusable. What it returns may be retired by another thread at once: use ``held``."""
    with ctx.warm.lock_of(WARM_KEY):
        old: SearchIndex | None = ctx.warm.get(WARM_KEY)
        if old is not None and old.path is None and not old.retired:
            return old
        try:
            path = index_path(ctx)
        except OSError:  # no cache folder can be made: search from memory
            path = None
        if old is not None and _current(old, path):
            return old
        with _file_locked(path):
            idx = _opened(path)
        if old is not None:
            for key, n in old.stats.items():  # the handle's counters go on
                idx.stats[key] = idx.stats.get(key, 0) + n
        ctx.warm[WARM_KEY] = idx
    if old is not None:
        old.retire()  # not under the handle's lock: it never waits, and closes only an idle one
    return idx


def _opened(path: Path | None) -> SearchIndex:
    """A new connection to the index at ``path`` (under its lock file), made or rebuilt as needed."""
    fresh = path is None or not path.exists()
    if path is not None and fresh:  # journals left by a deleted index belong to other bytes: never replay them
        discard(path)
    try:
        conn, wal = connect(path)
    except sqlite3.DatabaseError as e:
        if busy(e):
            raise StoreError(f"the search index {path} stayed locked: {e}") from e
        if path is not None and unusable(e):  # corrupt, foreign, or from another schema: it is only a cache
            discard(path)
            fresh = True
        try:
            conn, wal = connect(path)
        except sqlite3.Error:  # cannot be opened or made here (read-only home): search from memory
            path, (conn, wal) = None, connect(None)
    idx = SearchIndex(path, conn, _opened_ino(path), wal=wal)
    if fresh:
        idx.stats["rebuilds"] += 1
    return idx


@contextlib.contextmanager
def held(ctx: Context) -> Iterator[SearchIndex]:
    """The current warm index, its lock held: no thread closes it until this one leaves."""
    while True:
        idx = open_index(ctx)
        idx.lock.acquire()
        if not idx.retired:
            break
        try:
            idx.close()  # retired while this thread waited for it: the last one out closes it
        finally:
            idx.lock.release()
    try:
        yield idx
    finally:
        idx.lock.release()
        if idx.retired:  # retired while this thread was inside: closed now unless another is in it
            idx.retire()


def moved(idx: SearchIndex) -> bool:
    """Is ``idx``'s file gone or another file now (deleted or replaced beneath its connection)?"""
    return idx.path is not None and _ino(idx.path) != idx.ino


def spoiled(ctx: Context, idx: SearchIndex) -> None:
    """``idx`` went bad beneath the thread holding it (``held``): its file is discarded, unless
    another thread or process has put a new one there already, and it is retired, so the next
    ``held`` opens (and builds) a new index. It is only a cache."""
    with ctx.warm.lock_of(WARM_KEY):
        if idx.path is not None:
            with _file_locked(idx.path):
                if _ino(idx.path) == idx.ino:
                    discard(idx.path)
        idx.retired = True

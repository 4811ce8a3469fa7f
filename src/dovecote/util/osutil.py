"""Operating-system habits every writer shares, each written once.

* a lock is ``flock`` on a descriptor; Python retries it on ``EINTR`` itself
  (PEP 475), so no caller loops;
* a lock on a file found by its name is checked, once held, to still be on the
  file the name gives (``lock_at``): a lock on a file renamed over or unlinked
  meanwhile guards nothing anyone else will read;
* a temp name is hidden and unique per process and thread
  (``.<name>.<pid>.<thread>.<tag>``), so a crashed writer's leftovers are
  recognizable (``viewtree.TEMP_NAME``) and two writers never share one;
* a bulk read pauses the cyclic garbage collector: a million new objects and
  no garbage would only make it walk them again and again.
"""

from __future__ import annotations

import errno
import fcntl
import gc
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def lock(fd: int, *, shared: bool = False) -> None:
    """Block until ``fd`` holds the lock (exclusive, or ``shared``); it is released when ``fd`` closes."""
    fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)


#: How many times ``lock_at`` opens a file again that was replaced while it waited, before it gives up.
RELOCK_TRIES = 8


def still_at(fd: int, path: str | os.PathLike[str]) -> bool:
    """Whether ``fd`` is still the file named ``path`` (False once the name is gone or names another file).

    Programs outside dovecote replace a file by renaming another over its name (an
    editor's save, a restored backup, a checkout, a sync tool): a descriptor opened
    before that is a file nobody will read by that name again. A link at the name
    is never its target: the name itself is compared."""
    try:
        at = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return at.st_ino == held.st_ino and at.st_dev == held.st_dev


def lock_at(
    path: str | os.PathLike[str],
    open_: Callable[[], int],
    close: Callable[[int], None],
    *,
    shared: bool = False,
    tries: int = RELOCK_TRIES,
) -> int:
    """Open ``path`` (``open_``), lock it, and return the descriptor once it holds the lock on the file
    that is at ``path`` now; a file replaced or unlinked meanwhile is closed (``close``) and opened again.

    Opening and locking are two steps, and a writer may wait long for the lock: what
    it then writes, and acknowledges, must land in the file readers of the name will
    read. Costs one ``stat`` when nothing changed. ``OSError`` (EBUSY) when the name
    kept changing ``tries`` times; whatever ``open_`` raises passes through.
    """
    for _ in range(tries):
        fd = open_()
        try:
            lock(fd, shared=shared)
            if still_at(fd, path):
                return fd
        except BaseException:
            close(fd)
            raise
        close(fd)
    raise OSError(errno.EBUSY, f"it was replaced {tries} times in a row while waiting for its lock", str(path))


def file_stamp(path: str | os.PathLike[str]) -> tuple[int, int, int]:
    """What tells a changed file from the one read: (inode, size, modification time); zeros when absent."""
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def temp_name(name: str, tag: str = "tmp") -> str:
    """The hidden temp name a write of ``name`` uses in the same folder."""
    return f".{name}.{os.getpid()}.{threading.get_ident()}.{tag}"


def pause_collector() -> bool:
    """Stop cyclic collection; whether it ran before (``resume_collector`` takes it). Plain calls allocate
    nothing, where a context manager's objects are made before it pauses anything: the form for a caller
    whose very next allocation would set a collection walking what it just built."""
    was = gc.isenabled()
    gc.disable()
    return was


def resume_collector(was: bool) -> None:
    """Cyclic collection as it was before ``pause_collector`` (which returned ``was``)."""
    if was:
        gc.enable()


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside (it is restored as it was, also on an error)."""
    was = pause_collector()
    try:
        yield
    finally:
        resume_collector(was)

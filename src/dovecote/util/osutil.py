"""Operating-system habits every writer shares, each written once.

* a lock is ``flock`` on a descriptor; Python retries it on ``EINTR`` itself
  (PEP 475), so no caller loops;
* a temp name is hidden and unique per process and thread
  (``.<name>.<pid>.<thread>.<tag>``), so a crashed writer's leftovers are
  recognizable (``viewtree.TEMP_NAME``) and two writers never share one;
* a bulk read pauses the cyclic garbage collector: a million new objects and
  no garbage would only make it walk them again and again.
"""

from __future__ import annotations

import fcntl
import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def lock(fd: int, *, shared: bool = False) -> None:
    """Block until ``fd`` holds the lock (exclusive, or ``shared``); it is released when ``fd`` closes."""
    fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)


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


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside (it is restored as it was, also on an error)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()

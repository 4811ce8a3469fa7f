"""The file operations dovecote's durable writes make, in one place.

Law (DESIGN 1.5): a write is acknowledged only after its bytes (and, for a new
name, its directory entry) are fsynced. Every call that write path makes to the
operating system (open, write, fsync, ftruncate, rename, mkdir, unlink and a
directory's fsync) goes through this module, so a test can put a fault-injecting
``FileOps`` in its place (``installed``) and crash or fail the *k*-th call on
purpose, the way SQLite's crash simulator does (``tests/faultfs.py``).

Reads (``pread``, ``fstat``, ``flock``) are not here: a crash cannot lose a
read. The real operations look ``os.<call>`` up at each call, so a test that
patches ``os.write`` or ``os.fsync`` still sees them.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager

#: The errno values that mean "the disk is full" (the device, or the user's quota).
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class FileOps:
    """The real operations; a fault-injecting subclass overrides them all."""

    def open(self, path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
        return os.open(path, flags, mode)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def ftruncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def close(self, fd: int) -> None:
        os.close(fd)

    def replace(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        os.replace(src, dst)

    def mkdir(self, path: str | os.PathLike[str]) -> None:
        os.mkdir(path)

    def unlink(self, path: str | os.PathLike[str]) -> None:
        os.unlink(path)

    def fsync_dir(self, path: str | os.PathLike[str]) -> None:
        """Make a directory's entries (a new file, a rename) durable."""
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


_active: FileOps = FileOps()


def current() -> FileOps:
    """The operations in use (the real ones, unless a test installed others)."""
    return _active


@contextmanager
def installed(ops: FileOps) -> Iterator[FileOps]:
    """Use ``ops`` for every durable write inside the block (tests only)."""
    global _active
    before, _active = _active, ops
    try:
        yield ops
    finally:
        _active = before


def open_fd(path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
    return _active.open(path, flags, mode)


def write_all(fd: int, payload: bytes) -> None:
    """Write every byte of ``payload`` (a short write is continued, never taken as done)."""
    view = memoryview(payload)
    while view:
        n = _active.write(fd, view)
        view = view[n:]


def fsync(fd: int) -> None:
    _active.fsync(fd)


def ftruncate(fd: int, size: int) -> None:
    _active.ftruncate(fd, size)


def close(fd: int) -> None:
    _active.close(fd)


def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    _active.replace(src, dst)


def mkdir(path: str | os.PathLike[str]) -> None:
    _active.mkdir(path)


def unlink(path: str | os.PathLike[str]) -> None:
    _active.unlink(path)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    _active.fsync_dir(path)


def fsync_path(path: str | os.PathLike[str]) -> None:
    """Open ``path`` read-only and fsync it (what a group commit's leader does)."""
    fd = _active.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _active.fsync(fd)
    finally:
        _active.close(fd)

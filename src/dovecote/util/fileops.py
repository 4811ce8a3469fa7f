"""The file operations dovecote's durable writes make, in one place.

Law (DESIGN 1.5): a write is acknowledged only after its bytes (and, for a new
name, its directory entry) are fsynced. Every call that write path makes to the
operating system (open, write, fsync, ftruncate, rename, mkdir, unlink and a
directory's fsync) goes through this module, so a test can put a fault-injecting
``FileOps`` in its place (``installed``) and crash or fail the *k*-th call on
purpose, the way SQLite's crash simulator does (``tests/faultfs.py``).

Reads (``pread``, ``fstat``, ``flock``, an ``open`` for reading) are not here: a
crash cannot lose a read. The real operations look ``os.<call>`` up at each
call, so a test that patches ``os.write`` or ``os.fsync`` still sees them.
``tests/util/test_fileops_only.py`` fails when a module elsewhere under ``src/`` calls
a write primitive itself. The one writer that cannot come here is SQLite (the
search index, a cache): it does its own I/O, and a crash of it is simulated on
its files instead (``tests/crash/test_crash_caches.py``).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

#: The errno values that mean "the disk is full" (the device, or the user's quota).
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})

_RENAME_NOREPLACE = 1
_AT_FDCWD = -100
_UNLOADED = object()
_renameat2: Any = _UNLOADED  # looked up at the first use: loading ctypes costs a cold CLI call ~2 ms


def _libc_renameat2() -> Any:
    """Linux's ``renameat2`` (None where libc has none)."""
    global _renameat2
    if _renameat2 is _UNLOADED:
        import ctypes

        try:
            _renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
        except (AttributeError, OSError):  # pragma: no cover - old libc or another OS
            _renameat2 = None
    return _renameat2


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

    def rename_new(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> bool:
        """Rename ``src`` to ``dst`` only if ``dst`` does not exist (atomically where Linux offers it)."""
        renameat2 = _libc_renameat2()
        if renameat2 is not None:
            import ctypes

            rc = int(renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE))
            if rc == 0:
                return True
            err = ctypes.get_errno()
            if err == errno.EEXIST:
                return False
            if err not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # the filesystem cannot: fall through
                raise OSError(err, os.strerror(err), os.fspath(dst))
        if os.path.lexists(dst):
            return False
        os.rename(src, dst)
        return True

    def link(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        os.link(src, dst)

    def mkdir(self, path: str | os.PathLike[str]) -> None:
        os.mkdir(path)

    def unlink(self, path: str | os.PathLike[str]) -> None:
        os.unlink(path)

    def rmdir(self, path: str | os.PathLike[str]) -> None:
        os.rmdir(path)

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


def rename_new(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> bool:
    return _active.rename_new(src, dst)


def link(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    _active.link(src, dst)


def unlink(path: str | os.PathLike[str]) -> None:
    _active.unlink(path)


def rmdir(path: str | os.PathLike[str]) -> None:
    _active.rmdir(path)


def make_dirs(path: str | os.PathLike[str]) -> None:
    """Create ``path`` and any missing parents, fsyncing each parent that changed (so each new name is durable)."""
    missing: list[str] = []
    p = os.path.abspath(path)
    while not os.path.exists(p):
        missing.append(p)
        p = os.path.dirname(p)
    for d in reversed(missing):
        try:
            _active.mkdir(d)
        except FileExistsError:
            continue
        _active.fsync_dir(os.path.dirname(d))


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Delete ``path`` and all it holds, deepest first, never following a link (a link is removed itself)."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        _active.unlink(path)
        return
    with os.scandir(path) as it:
        children = [e.path for e in it]
    for child in children:
        remove_tree(child)
    _active.rmdir(path)


def write_new(path: str | os.PathLike[str], data: bytes, mode: int = 0o644, *, sync: bool = True) -> None:
    """Create ``path`` (``FileExistsError`` if it exists), write ``data`` whole, and fsync it unless
    ``sync`` is False (its directory entry is the caller's to fsync)."""
    fd = _active.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, mode)
    try:
        write_all(fd, data)
        if sync:
            _active.fsync(fd)
    finally:
        _active.close(fd)


def replace_file(
    path: str | os.PathLike[str], data: bytes | Iterable[bytes], *, mode: int = 0o644, durable: bool = True
) -> None:
    """Replace a whole file atomically: the one way dovecote does it (readers see the old bytes or the new).

    ``data`` (whole, or in pieces so a large cache is never held in memory) is written under a temp name
    beside ``path``, then renamed over it, which replaces a symlink at ``path`` and never writes through
    one. The file has ``mode`` (less the umask) from its first byte on, so a secret's file (0600) is never
    readable by others, even briefly. ``durable``: the file and then its directory are fsynced (a cache a
    crash may lose costs one slow call, so it passes False). The directory must exist.
    """
    from dovecote.util.osutil import temp_name

    where = os.fspath(path)
    tmp = os.path.join(os.path.dirname(where), temp_name(os.path.basename(where)))
    fd = _active.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        for piece in (data,) if isinstance(data, bytes) else data:
            write_all(fd, piece)
        if durable:
            _active.fsync(fd)
    finally:
        _active.close(fd)
    _active.replace(tmp, where)
    if durable:
        fsync_dir(os.path.dirname(where) or ".")


def replace_cache(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace a cache file whole, not fsynced (``replace_file`` with ``durable=False``)."""
    replace_file(path, data, durable=False)


def open_lock(path: str | os.PathLike[str], *, follow: bool = True) -> int:
    """Open (creating it) a lock file for ``flock``: its bytes are never written, only its name made."""
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    return _active.open(path, flags, 0o644)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    _active.fsync_dir(path)


def fsync_path(path: str | os.PathLike[str]) -> None:
    """Open ``path`` read-only and fsync it (what a group commit's leader does)."""
    fd = _active.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _active.fsync(fd)
    finally:
        _active.close(fd)

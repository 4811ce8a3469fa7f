"""A fault-injecting ``FileOps``: crash at the k-th file operation, or fail the N-th.

Modelled on SQLite's ``test6.c`` crash simulator. Writes reach the real file (so
the code under test reads back what it wrote, as a process does from the page
cache) but every write not yet covered by an fsync is remembered in memory, per
file, with the bytes it overwrote; so is every new name or rename whose directory
was not fsynced since. At crash point *k* the k-th operation does not happen and
the "process" is dead: every later operation raises ``Crash`` too. ``settle``
then plays the power cut on the real files, in one of ``MODES``:

* ``drop``: no unsynced write reached the disk, no unsynced directory entry either;
* ``keep``: every unsynced write did (the page cache was flushed just in time);
* ``tear``: all but the last unsynced write of each file did, and half of the last;
* ``garble``: as ``keep``, but the last unsynced write of each file is garbage of its length.

``fail`` makes the N-th call of one operation raise ``OSError(errno)``: once
(transient) or from then on (for good, until ``heal``). A failing write first
writes half of its bytes when it can, as a full disk does mid-line.
"""

from __future__ import annotations

import errno as errno_mod
import fcntl
import os
import random
from dataclasses import dataclass, field

from dovecote.ledger import group_commit as commit
from dovecote.util import fileops

MODES = ("drop", "keep", "tear", "garble")


class Crash(BaseException):
    """The simulated process died here (a BaseException: nothing may catch it as an error)."""


@dataclass
class _Write:
    offset: int
    data: bytes
    before: bytes  # the bytes it overwrote (empty past the old end)
    size_before: int


@dataclass
class _Entry:
    """A directory change not yet fsynced: ``new`` created, or ``src`` renamed onto ``dst``."""

    folder: str
    new: str | None = None
    src: str | None = None
    dst: str | None = None
    dst_before: bytes | None = None


@dataclass
class FaultFS(fileops.FileOps):
    crash_at: int | None = None
    mode: str = "drop"
    fail_op: str | None = None
    fail_nth: int = 0
    fail_errno: int = errno_mod.EIO
    fail_for_good: bool = False
    #: fail the call of this number (any operation) instead, and with ``fail_for_good`` every later call
    #: of the same operation (writes fail on a full disk; truncating, which frees space, still works)
    fail_call: int | None = None
    _fail_kind: str = ""
    #: the fault this run injected, said for a failed assertion (``crashsweep.where``): kept after ``heal``
    fault: str = ""
    seed: int = 0
    calls: int = 0
    log: list[str] = field(default_factory=list)
    crashed: bool = False
    _counts: dict[str, int] = field(default_factory=dict)
    _failing: bool = False
    _paths: dict[int, str] = field(default_factory=dict)
    _unsynced: dict[str, list[_Write]] = field(default_factory=dict)
    _entries: list[_Entry] = field(default_factory=list)

    # -- the gate every operation passes -------------------------------------------

    def _gate(self, op: str, what: str) -> None:
        if self.crashed:
            raise Crash(f"dead: {op} {what}")
        self.calls += 1
        self.log.append(f"{op} {os.path.basename(what)}")
        if self.calls == self.crash_at:
            self.crashed = True
            raise Crash(f"crash point {self.calls}: {op} {what}")
        if self.calls == self.fail_call:
            self._fail_kind = op
            self.fault = (f"{errno_mod.errorcode[self.fail_errno]} {'for good' if self.fail_for_good else 'once'} "
                          f"at call {self.calls} ({op} {os.path.basename(what)})")
        if self.fail_call is not None and (self.calls == self.fail_call or (
                self.fail_for_good and self.calls > self.fail_call and op == self._fail_kind)):
            raise OSError(self.fail_errno, os.strerror(self.fail_errno))
        n = self._counts[op] = self._counts.get(op, 0) + 1
        if op == self.fail_op and (n == self.fail_nth or (self._failing and self.fail_for_good)):
            self._failing = True
            raise OSError(self.fail_errno, os.strerror(self.fail_errno))

    def heal(self) -> None:
        """Space is back (or the device recovered): no more failures."""
        self.fail_op = None
        self.fail_call = None

    # -- the operations ------------------------------------------------------------

    def open(self, path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
        p = os.path.abspath(path)
        self._gate("open", p)
        existed = os.path.exists(p)
        fd = os.open(p, flags, mode)
        self._paths[fd] = p
        if not existed:
            self._entries.append(_Entry(os.path.dirname(p), new=p))
        return fd

    def write(self, fd: int, data: bytes | memoryview) -> int:
        p = self._paths.get(fd, f"fd{fd}")
        try:
            self._gate("write", p)
        except OSError:
            if len(data) > 1 and self.fail_errno in fileops.DISK_FULL:
                self._record(fd, p, bytes(data[: len(data) // 2]))
            raise
        return self._record(fd, p, bytes(data))

    def _record(self, fd: int, p: str, data: bytes) -> int:
        size = os.fstat(fd).st_size
        offset = size if _appending(fd) else os.lseek(fd, 0, os.SEEK_CUR)
        before = _pread(fd, p, len(data), offset)
        n = os.write(fd, data)
        self._unsynced.setdefault(p, []).append(_Write(offset, data[:n], before[:n], size))
        return n

    def fsync(self, fd: int) -> None:
        p = self._paths.get(fd, f"fd{fd}")
        self._gate("fsync", p)
        os.fsync(fd)
        self._unsynced.pop(p, None)

    def ftruncate(self, fd: int, size: int) -> None:
        p = self._paths.get(fd, f"fd{fd}")
        self._gate("ftruncate", p)
        os.ftruncate(fd, size)
        # a truncation is taken as durable with the next fsync; writes it cut off are gone
        kept = [w for w in self._unsynced.get(p, []) if w.offset + len(w.data) <= size]
        self._unsynced[p] = kept

    def close(self, fd: int) -> None:
        self._paths.pop(fd, None)
        os.close(fd)  # closing is not a crash point: a dead process's files close too

    def replace(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        s, d = os.path.abspath(src), os.path.abspath(dst)
        self._gate("rename", d)
        before = _read(d)
        os.replace(s, d)
        self._entries.append(_Entry(os.path.dirname(d), src=s, dst=d, dst_before=before))
        if s in self._unsynced:
            self._unsynced[d] = self._unsynced.pop(s)

    def rename_new(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> bool:
        s, d = os.path.abspath(src), os.path.abspath(dst)
        self._gate("rename", d)
        if not super().rename_new(s, d):
            return False
        self._entries.append(_Entry(os.path.dirname(d), src=s, dst=d))
        if s in self._unsynced:
            self._unsynced[d] = self._unsynced.pop(s)
        return True

    def link(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        d = os.path.abspath(dst)
        self._gate("link", d)
        os.link(src, d)
        self._entries.append(_Entry(os.path.dirname(d), new=d))

    def mkdir(self, path: str | os.PathLike[str]) -> None:
        p = os.path.abspath(path)
        self._gate("mkdir", p)
        os.mkdir(p)
        self._entries.append(_Entry(os.path.dirname(p), new=p))

    def unlink(self, path: str | os.PathLike[str]) -> None:
        p = os.path.abspath(path)
        self._gate("unlink", p)
        os.unlink(p)
        self._unsynced.pop(p, None)

    def rmdir(self, path: str | os.PathLike[str]) -> None:
        p = os.path.abspath(path)
        self._gate("rmdir", p)
        os.rmdir(p)

    def fsync_dir(self, path: str | os.PathLike[str]) -> None:
        p = os.path.abspath(path)
        self._gate("fsync_dir", p)
        super().fsync_dir(p)
        self._entries = [e for e in self._entries if e.folder != p]

    # -- the power cut -------------------------------------------------------------

    def settle(self) -> None:
        """Play the crash on the real files (see the module docstring), and forget this
        process's group-commit state: the next operation is a new process."""
        rng = random.Random(self.seed)
        for p, writes in self._unsynced.items():
            if not writes or not os.path.exists(p):
                continue
            if self.mode == "drop":
                _undo(p, writes)
            elif self.mode == "tear":
                last = writes[-1]
                _undo(p, [last])
                keep = last.data[: len(last.data) // 2]
                _put(p, last.offset, keep)
            elif self.mode == "garble":
                last = writes[-1]
                _put(p, last.offset, bytes(rng.randrange(256) for _ in last.data))
        if self.mode == "drop":
            for e in reversed(self._entries):
                _undo_entry(e)
        self._unsynced.clear()
        self._entries.clear()
        with commit._registry_lock:
            commit._registry.clear()


def _appending(fd: int) -> bool:
    return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND)


def _pread(fd: int, path: str, n: int, offset: int) -> bytes:
    """What ``n`` bytes at ``offset`` hold now (through the path when ``fd`` is write-only)."""
    try:
        return os.pread(fd, n, offset)
    except OSError:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(n)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except (FileNotFoundError, IsADirectoryError):
        return None


def _put(path: str, offset: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def _undo(path: str, writes: list[_Write]) -> None:
    """Take writes back, newest first: restore what each overwrote, and the old size."""
    with open(path, "r+b") as f:
        for w in reversed(writes):
            f.seek(w.offset)
            f.write(w.before)
            f.truncate(max(w.size_before, w.offset + len(w.before)))


def _undo_entry(e: _Entry) -> None:
    if e.new is not None and os.path.lexists(e.new):
        if os.path.isdir(e.new):
            if not os.listdir(e.new):
                os.rmdir(e.new)
        else:
            os.unlink(e.new)
    elif e.src is not None and e.dst is not None and os.path.exists(e.dst):
        os.replace(e.dst, e.src)
        if e.dst_before is not None:
            with open(e.dst, "wb") as f:
                f.write(e.dst_before)

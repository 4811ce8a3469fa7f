"""Group commit: the concurrent appends of one ledger in this process share one fsync.

Law (DESIGN 1.5): nothing is acknowledged before its bytes are fsynced. An
appender writes its line under the ledger's ``flock`` (dedup and every
compare-and-swap are still decided there, on the whole ledger), takes a
*ticket* (``Committer.wrote``), releases the lock, and only then waits for an
fsync that began after its write ended (``Committer.wait``). Whoever finds no
fsync under way becomes the leader: one fsync for every write finished so far,
its own and those of every writer that came while the previous fsync ran, then
it wakes them all. So N writers pay about one fsync per round, not N, and no
lock is held across an fsync (a guarded section's decision never waits on a
disk flush of somebody else's letter).

Why waiting after the unlock is safe: fsync is per file (an inode), so any
fsync that starts after a write ended covers it, whoever issues it; writers in
other processes keep their own committers and still take the ``flock``, which
keeps lines whole and in order. A section that read letters another thread of
this process wrote but had not yet synced waits for them too (its ticket is the
last write it could have seen), so no answer, a refusal included, is given on
a letter that may still vanish. (A letter another *process* wrote is synced by
that process before it acknowledges it, but a section here may read it before
then: a refusal such as ``already_claimed`` can rest on a claim that a power
cut takes before its writer heard back. The item is then unclaimed, never lost;
the refused agent may claim it again.)

A failed fsync fails every write it was to cover: none is acknowledged. The
leader then takes the ledger's lock and, when every byte after the last
durable write is this process's own (no other process wrote in between),
truncates them away, so nothing unacknowledged stays to be read, and the
writes made after the failed batch (decided on letters that are now gone) fail
too. Bytes another process interleaved cannot be taken back: the file is left
as after a crash (unacknowledged lines may stay; they were never promised).

Waits happen with no ledger lock held (``deferred`` holds a multi-box
section's waits until all its locks are released), so the leader's recovery
can always take the lock.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import msgspec

from dovecote.errors import StoreError
from dovecote.util import fileops
from dovecote.util.osutil import lock

_registry_lock = threading.Lock()
#: by absolute path, and by each path a caller gave (``of``)
_registry: dict[str | os.PathLike[str], Committer] = {}
_local = threading.local()


class _Failure(msgspec.Struct):
    """Tickets ``lo..hi`` were not made durable, because of ``error``."""

    lo: int
    hi: int
    error: OSError


class Committer(msgspec.Struct, eq=False):
    """The group commit of one ledger file in this process (one per path: ``of``)."""

    path: str
    _cond: threading.Condition = msgspec.field(default_factory=threading.Condition)
    #: the ticket of the last write finished (its bytes are in the file)
    _written: int = 0
    #: every ticket up to this one is settled: fsynced, or failed (see ``_failures``)
    _settled: int = 0
    _syncing: bool = False
    #: the byte span of each unsettled write, by ticket: what a failed fsync may truncate
    _spans: dict[int, tuple[int, int]] = msgspec.field(default_factory=dict)
    _failures: list[_Failure] = msgspec.field(default_factory=list)

    def wrote(self, start: int, end: int) -> int:
        """Note a write of bytes ``start..end`` (called under the ledger's lock); its ticket."""
        with self._cond:
            self._written += 1
            self._spans[self._written] = (start, end)
            return self._written

    def latest(self) -> int:
        """The ticket of the last write finished: what a reader of the ledger now may have seen."""
        with self._cond:
            return self._written

    def wait(self, ticket: int) -> None:
        """Return once every write up to ``ticket`` is fsynced; raise the fsync's ``OSError`` if one failed.

        Called with no ledger lock held. The first waiter that finds no fsync
        under way leads one; the others sleep until it settles them.
        """
        with self._cond:
            while ticket > self._settled:
                if not self._syncing:
                    self._syncing = True
                    upto = self._written
                    break
                self._cond.wait()
            else:
                self._check(ticket)
                return
        failed_upto = 0
        error: OSError | None = None
        try:
            fileops.fsync_path(self.path)
        except OSError as e:
            error = e
            failed_upto = self._recover(upto)
        with self._cond:
            if error is not None:
                self._failures.append(_Failure(self._settled + 1, failed_upto, error))
                upto = failed_upto
            for t in [t for t in self._spans if t <= upto]:
                del self._spans[t]
            self._settled = max(self._settled, upto)
            self._syncing = False
            self._cond.notify_all()
            self._check(ticket)

    def _check(self, ticket: int) -> None:
        for f in self._failures:
            if f.lo <= ticket <= f.hi:
                why = f.error.strerror or f.error
                raise OSError(f.error.errno, f"not durable: fsync of {self.path} failed ({why})")

    def _recover(self, upto: int) -> int:
        """After a failed fsync of the writes up to ``upto``: truncate this process's
        unsettled bytes when they are the whole tail (see the module docstring).
        Returns the last ticket that failed."""
        try:
            fd = fileops.open_fd(self.path, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            return upto
        try:
            lock(fd)
            with self._cond:
                last = self._written
                spans = sorted(self._spans.values())
            size = os.fstat(fd).st_size
            whole = bool(spans) and spans[-1][1] == size and all(
                a[1] == b[0] for a, b in itertools.pairwise(spans)
            )
            if not whole:
                return upto
            fileops.ftruncate(fd, spans[0][0])
            with suppress(OSError):
                fileops.fsync(fd)
            return last
        except OSError:
            return upto
        finally:
            fileops.close(fd)  # releases the lock


def of(path: str | os.PathLike[str]) -> Committer:
    """The committer of the ledger at ``path`` (one per file for the whole process).

    Found by ``path`` as given first (a reader passes the same path each time), so a
    section pays no ``abspath``; the absolute path is the key that makes it one per file."""
    c = _registry.get(path)
    if c is None:
        key = os.path.abspath(path)
        with _registry_lock:
            c = _registry.setdefault(key, Committer(key))
            if os.path.isabs(path):  # a relative one names another file after a chdir
                _registry[path] = c
    return c


def settle(c: Committer, ticket: int) -> None:
    """Wait for ``ticket`` now, or when the enclosing ``deferred`` block ends."""
    pending: list[tuple[Committer, int]] | None = getattr(_local, "pending", None)
    if pending is not None:
        pending.append((c, ticket))
    else:
        c.wait(ticket)


@contextmanager
def deferred() -> Iterator[None]:
    """Hold the waits of every ledger section ended inside until the block ends, then wait for
    them all (a section over several boxes releases every lock before it waits on any fsync).

    Nested blocks join the outermost. A failed fsync is raised as ``StoreError``. If the
    block raises, its waits still happen (the writes are in the files and must be
    settled) but the block's own error is what is raised.
    """
    if getattr(_local, "pending", None) is not None:
        yield
        return
    pending: list[tuple[Committer, int]] = []
    _local.pending = pending
    try:
        yield
    except BaseException:
        _local.pending = None
        for c, t in pending:
            with suppress(OSError):  # the block's own error is the one to report
                c.wait(t)
        raise
    _local.pending = None
    first: OSError | None = None
    for c, t in pending:
        try:
            c.wait(t)
        except OSError as e:
            first = first or e
    if first is not None:
        raise StoreError(f"cannot append: {first.strerror or first}") from first

"""Appending to a file ledger: under its lock, deduplicated, fsynced (the read side is ``ledger.jsonl``).

Laws this module upholds (DESIGN 1.2, 1.5, 1.6):

* Appends happen under an exclusive ``flock`` on the ledger itself, skip any
  line whose id is already present, and return only after ``fsync`` (and an
  ``fsync`` of the directory when the file or a folder was created); the file's
  fsync comes after the lock is released and is shared by the appenders of the
  same moment (group commit, ``group_commit``). A write that raises is truncated
  back to the length it started from, so a failed append leaves no partial line.
* A torn last line (a crash mid-append) is never appended after: the next append
  first writes a newline so it starts on a fresh line.
* An append lands in the file at the ledger's path: once the lock is held, the
  descriptor is checked to still be that file, and opened again if another
  program replaced or removed it meanwhile (``_open_locked``).
* ``locked`` is the compare-and-swap primitive: the ledger is read whole under the
  lock, so a caller decides on every letter before it appends or refuses.

A read never needs this module: a cold read loads neither it nor the group commit.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from dovecote.errors import DiskFull, StoreError
from dovecote.ledger import group_commit as commit
from dovecote.ledger.jsonl import LedgerReader, ensure_dir, fsync_dir
from dovecote.model.letters import letter_id
from dovecote.util import fileops
from dovecote.util.osutil import lock_at


class LockedLedger:
    """A ledger held under its exclusive lock: read current state, then append.

    This is the compare-and-swap primitive: callers derive state from
    ``reader.letters``, check their rule, and append or refuse, all before the
    lock is released. ``append`` writes; the fsync comes after the lock is
    released, shared with the other appenders of this ledger (``commit``), and
    ``locked`` returns only once it covers everything the section wrote or read.
    """

    def __init__(self, fd: int, reader: LedgerReader, committer: commit.Committer) -> None:
        self._fd = fd
        self.reader = reader
        self.committer = committer

    def append(self, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
        """Append the lines whose ids are new; fsync; return (id, appended) per line."""
        out: list[tuple[str, bool]] = []
        fresh: list[bytes] = []
        batch: dict[str, None] = {}  # the new ids, in order
        index = self.reader.index
        for line in lines:
            if b"\n" in line:
                raise ValueError("a ledger line cannot contain a newline")
            i = letter_id(line)
            if i in index or i in batch:
                out.append((i, False))
            else:
                batch[i] = None
                fresh.append(line)
                out.append((i, True))
        if not fresh:
            return out
        payload = b"\n".join(fresh) + b"\n"
        fd = self._fd
        size = os.fstat(fd).st_size
        ids: Sequence[str] = list(batch)  # what the reader takes as they are, unless the tail was torn
        if size and os.pread(fd, 1, size - 1) != b"\n":
            payload = b"\n" + payload  # a torn tail: start on a fresh line
            ids = ()
        try:
            fileops.write_all(fd, payload)
        except BaseException as e:
            try:
                fileops.ftruncate(fd, size)
                fileops.fsync(fd)
            except OSError:
                pass
            else:
                if isinstance(e, OSError) and e.errno in fileops.DISK_FULL:
                    # truncated back and synced: nothing is half written, so it is a refusal
                    raise DiskFull(str(self.reader.path), e) from e
            raise
        self.committer.wrote(size, size + len(payload))  # fsynced once the lock is released (commit.py)
        if not self.reader.took_own(payload, size, fd, ids):
            self.reader.refresh()
        return out


#: A ledger is appended only as itself: a symlink in its place (to another box's
#: ledger, or out of the home) would send letters where they do not belong, and
#: two boxes sharing one file would each lock it, so a send between them would hang.
_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW


def _open(path: Path) -> tuple[int, bool]:
    """The ledger's descriptor for appending, creating it (and its folders) if needed: (fd, created)."""
    try:
        try:  # the ledger is there (the common case): no walk up its folders
            return fileops.open_fd(path, _APPEND_FLAGS), False
        except FileNotFoundError:
            ensure_dir(path.parent)
            created = not path.exists()
            return fileops.open_fd(path, _APPEND_FLAGS | os.O_CREAT, 0o644), created
    except OSError as e:
        if e.errno == errno.ELOOP:  # O_NOFOLLOW met a link: never append through it
            raise StoreError(f"{path} is a symlink; dovecote appends only to a real ledger (remove it)") from e
        raise StoreError(f"cannot open {path}: {e.strerror or e}") from e


def ready(reader: LedgerReader) -> None:
    """Open the ledger as ``locked`` would (creating it, durably, if it is missing) and close it:
    ``StoreError`` now if it cannot be, before a write elsewhere that must not go on without it."""
    path = reader.path
    fd, created = _open(path)
    try:
        if created:
            fsync_dir(path.parent)
    finally:
        fileops.close(fd)


def _open_locked(path: Path) -> tuple[int, bool]:
    """The ledger's descriptor under its exclusive lock, and whether its directory entry may be new.

    Checked once locked to still be the file at ``path`` (``lock_at``): a ledger
    renamed over or unlinked by another program while this writer opened it or
    waited for the lock would otherwise take a letter, fsynced and acknowledged,
    into a file no reader will open again. The name is then opened afresh; its
    entry may be new (created here, or renamed there by a program that did not
    fsync the folder), so the caller makes it durable before acknowledging.
    """
    opens = 0
    created = False

    def open_() -> int:
        nonlocal opens, created
        fd, made = _open(path)
        opens += 1
        created = created or made
        return fd

    try:
        fd = lock_at(path, open_, fileops.close)
    except OSError as e:
        raise StoreError(f"cannot append to {path}: {e.strerror or e}") from e
    return fd, created or opens > 1


@contextmanager
def locked(reader: LedgerReader) -> Iterator[LockedLedger]:
    """Open (creating if needed), lock exclusively, refresh, and yield the ledger.

    On leaving, the lock is released first and then the section waits (``commit``)
    until every write it made, or could have read, is fsynced: also when it
    leaves with an error (a refusal is never given on a letter that may vanish).
    """
    path = reader.path
    committer = commit.of(path)
    ticket = 0
    try:
        fd, fresh_name = _open_locked(path)
        try:
            if fresh_name or os.fstat(fd).st_size == 0:
                # A new (or still empty, perhaps created by a process that died) file's
                # directory entry must be durable before any append to it is acknowledged.
                fsync_dir(path.parent)
            with reader.lock:
                bound, reader.bound = reader.bound, None  # a compare-and-swap decides on the whole ledger
                try:
                    reader.refresh()
                    yield LockedLedger(fd, reader, committer)
                finally:
                    reader.bound = bound
                    ticket = committer.latest()  # every write this section made or could have read
        finally:
            fileops.close(fd)  # closing releases the flock
    except BaseException as error:
        _settle(committer, ticket, path, error)
        raise
    _settle(committer, ticket, path, None)


def _settle(committer: commit.Committer, ticket: int, path: Path, error: BaseException | None) -> None:
    if not ticket:
        return
    try:
        commit.settle(committer, ticket)
    except OSError as e:
        raise StoreError(f"cannot append to {path}: {e.strerror or e}") from (error or e)


def append(reader: LedgerReader, lines: Sequence[bytes]) -> list[tuple[str, bool]]:
    """Durably append ``lines`` to the reader's ledger, deduplicated by id."""
    with locked(reader) as led:
        try:
            return led.append(lines)
        except OSError as e:
            raise StoreError(f"cannot append to {reader.path}: {e.strerror or e}") from e

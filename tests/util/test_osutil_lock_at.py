"""``lock_at``: a lock taken by a file's name ends up on the file that name gives, not on one removed meanwhile.

A lock file (the roster's, an intake folder's, a view tree's) removed or replaced
while a process waits for it would otherwise give that process a lock nobody
else contends for: it and the next process to open the name would both be in.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from dovecote.roster.edit import held, lock_path
from dovecote.util import fileops, osutil


def _open_lock(path: Path) -> int:
    return fileops.open_lock(path, follow=False)


def _contended(path: Path) -> bool:
    """Whether some descriptor holds the lock of the file now at ``path`` (no file there: no)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_lock_file_removed_while_waiting_is_locked_anew_at_its_name(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    holder = _open_lock(path)
    fcntl.flock(holder, fcntl.LOCK_EX)
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(osutil.lock_at(path, lambda: _open_lock(path), os.close)))
    waiter.start()
    time.sleep(0.1)  # the waiter has opened the old file and waits on it
    os.unlink(path)
    os.close(holder)
    waiter.join(10)
    [fd] = got
    try:
        assert osutil.still_at(fd, path)
        assert _contended(path), "the waiter holds a lock on a file no longer at the name"
    finally:
        os.close(fd)
    assert not _contended(path)


def test_a_name_that_keeps_changing_is_refused_and_leaks_no_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    opens = 0

    def open_then_remove() -> int:
        nonlocal opens
        opens += 1
        fd = _open_lock(path)
        os.unlink(path)
        return fd

    before = _open_fds()
    with pytest.raises(OSError) as caught:
        osutil.lock_at(path, open_then_remove, os.close, tries=3)
    assert caught.value.errno == errno.EBUSY and opens == 3
    assert caught.value.strerror == "it was replaced 3 times in a row while waiting for its lock"
    assert _open_fds() == before


def test_a_name_turned_into_a_link_is_not_the_locked_file(tmp_path: Path) -> None:
    """The name itself is compared: a link at it, even to the very file locked, is another file."""
    target = tmp_path / "real.lock"
    fd = _open_lock(target)
    try:
        link = tmp_path / "x.lock"
        link.symlink_to(target)
        assert osutil.still_at(fd, target) and not osutil.still_at(fd, link)
    finally:
        os.close(fd)


def test_the_roster_edit_lock_removed_while_an_editor_waits_still_keeps_the_next_editor_out(tmp_path: Path) -> None:
    config = tmp_path / "dovecote.toml"
    inside = threading.Event()
    leave = threading.Event()

    def editor() -> None:
        with held(config):
            inside.set()
            leave.wait(10)

    with held(config):
        waiter = threading.Thread(target=editor)
        waiter.start()
        time.sleep(0.1)  # it has opened the lock file and waits on it
        os.unlink(lock_path(config))
    try:
        assert inside.wait(10)
        assert _contended(lock_path(config)), "a second editor could take the roster's lock now"
    finally:
        leave.set()
        waiter.join(10)

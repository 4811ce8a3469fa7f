"""The writer's edges (``ledger.append``): how it opens, creates and refuses, and what each refusal says.

The durability tests show what an acknowledged append guarantees; these pin what a caller sees when an
append cannot happen (a full disk is a ``disk_full`` refusal, any other failure a ``StoreError`` that names
the ledger), that a ledger is only ever appended as itself, and that a new one is made readable and durable.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dovecote.errors import DiskFull, StoreError
from dovecote.ledger import append as ledger_append
from dovecote.ledger.jsonl import LedgerReader, fsync_dir
from dovecote.model.letters import canonical_line, letter_id


def _line(**fields: Any) -> bytes:
    return canonical_line({"ts": "2026-12-05T10:00:00Z", "agent": "writer", **fields})


@pytest.fixture
def dir_syncs(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every folder the writer fsyncs, in order."""
    synced: list[Path] = []
    real = fsync_dir

    def record(path: Path) -> None:
        synced.append(Path(path))
        real(path)

    monkeypatch.setattr("dovecote.ledger.append.fsync_dir", record)
    return synced


def _failing_write(path: Path, code: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """os.write to ``path`` fails with ``code`` before writing a byte; other files are written."""
    real = os.write
    ino = path.stat().st_ino

    def write(fd: int, data: Any) -> int:
        if os.fstat(fd).st_ino == ino:
            raise OSError(code, os.strerror(code))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


@pytest.fixture
def umask0() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_a_full_disk_is_a_disk_full_refusal_and_leaves_the_ledger_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "letters.jsonl"
    first = _line(what="first")
    path.write_bytes(first + b"\n")
    reader = LedgerReader(path)
    _failing_write(path, errno.ENOSPC, monkeypatch)
    with pytest.raises(DiskFull) as refused:
        ledger_append.append(reader, [_line(what="no room")])
    monkeypatch.undo()
    assert refused.value.reason == "disk_full"
    assert refused.value.detail == f"cannot append to {path}: {os.strerror(errno.ENOSPC)}"
    assert isinstance(refused.value.__cause__, OSError) and refused.value.__cause__.errno == errno.ENOSPC
    assert path.read_bytes() == first + b"\n"
    reader.refresh()
    assert list(reader.index) == [letter_id(first)]


def test_any_other_write_failure_is_a_store_error_naming_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "letters.jsonl"
    path.write_bytes(_line(what="first") + b"\n")
    before = path.read_bytes()
    _failing_write(path, errno.EIO, monkeypatch)
    with pytest.raises(StoreError) as failed:
        ledger_append.append(LedgerReader(path), [_line(what="lost")])
    monkeypatch.undo()
    assert not isinstance(failed.value, DiskFull), "only a full disk is a refusal"
    assert str(failed.value) == f"cannot append to {path}: {os.strerror(errno.EIO)}"
    assert isinstance(failed.value.__cause__, OSError) and failed.value.__cause__.errno == errno.EIO
    assert path.read_bytes() == before


def test_a_symlink_in_a_ledgers_place_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    """A link to another box's ledger would file letters where they do not belong."""
    other = tmp_path / "other.jsonl"
    other.write_bytes(_line(what="theirs") + b"\n")
    before = other.read_bytes()
    path = tmp_path / "letters.jsonl"
    path.symlink_to(other)
    for attempt in (lambda: ledger_append.append(LedgerReader(path), [_line(what="mine")]),
                    lambda: ledger_append.ready(LedgerReader(path))):
        with pytest.raises(StoreError) as refused:
            attempt()
        assert str(refused.value) == f"{path} is a symlink; dovecote appends only to a real ledger (remove it)"
        assert isinstance(refused.value.__cause__, OSError) and refused.value.__cause__.errno == errno.ELOOP
    assert other.read_bytes() == before


def test_a_ledger_that_cannot_be_opened_is_a_store_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "letters.jsonl"
    path.mkdir()  # a folder where the file should be
    with pytest.raises(StoreError) as failed:
        ledger_append.append(LedgerReader(path), [_line(what="x")])
    assert str(failed.value) == f"cannot open {path}: {os.strerror(errno.EISDIR)}"


def test_a_new_ledger_is_created_readable_by_all_writable_by_its_owner(tmp_path: Path, umask0: None) -> None:
    path = tmp_path / "box" / "letters.jsonl"
    ledger_append.append(LedgerReader(path), [_line(what="x")])
    assert path.stat().st_mode & 0o777 == 0o644
    fresh = tmp_path / "ready" / "letters.jsonl"
    ledger_append.ready(LedgerReader(fresh))
    assert fresh.stat().st_mode & 0o777 == 0o644


def test_ready_creates_a_missing_ledger_durably_and_leaves_an_existing_one_alone(
    tmp_path: Path, dir_syncs: list[Path]
) -> None:
    """``ready`` answers before a write elsewhere: the new ledger's folder entry is fsynced, nothing is written."""
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    path = tmp_path / "box" / "letters.jsonl"
    ledger_append.ready(LedgerReader(path))
    assert path.read_bytes() == b""
    assert dir_syncs[-1] == path.parent
    dir_syncs.clear()
    path.write_bytes(_line(what="kept") + b"\n")
    before = path.read_bytes()
    ledger_append.ready(LedgerReader(path))
    assert dir_syncs == [] and path.read_bytes() == before
    if fds is not None:
        assert len(os.listdir("/proc/self/fd")) == fds, "ready left the ledger open"


def test_an_empty_ledger_left_by_a_dead_creator_has_its_folder_synced_before_the_first_ack(
    tmp_path: Path, dir_syncs: list[Path]
) -> None:
    """A process may die between creating the file and syncing its folder: the next appender syncs it."""
    path = tmp_path / "letters.jsonl"
    path.touch()
    line = _line(what="first")
    assert ledger_append.append(LedgerReader(path), [line]) == [(letter_id(line), True)]
    assert dir_syncs == [path.parent]
    dir_syncs.clear()
    ledger_append.append(LedgerReader(path), [_line(what="second")])
    assert dir_syncs == [], "a ledger with letters already has a durable entry"


def test_a_locked_section_reads_the_whole_ledger_and_gives_the_readers_bound_back(tmp_path: Path) -> None:
    """A compare-and-swap decides on every letter, whatever snapshot the reader was bound to before."""
    path = tmp_path / "letters.jsonl"
    a, b = _line(what="a"), _line(what="b")
    ledger_append.append(LedgerReader(path), [a])
    bound = path.stat().st_size
    ledger_append.append(LedgerReader(path), [b])
    reader = LedgerReader(path)
    reader.bound = bound
    with ledger_append.locked(reader) as led:
        assert list(led.reader.index) == [letter_id(a), letter_id(b)]
        assert led.append([b]) == [(letter_id(b), False)]
    assert reader.bound == bound


def test_a_failed_fsync_names_the_ledger_and_its_cause(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = (tmp_path / "letters.jsonl").resolve()
    ledger_append.append(LedgerReader(path), [_line(what="first")])
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.fstat(fd).st_ino == path.stat().st_ino:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(StoreError) as failed:
        ledger_append.append(LedgerReader(path), [_line(what="not durable")])
    monkeypatch.undo()
    assert str(failed.value).startswith(f"cannot append to {path}: not durable: fsync of ")
    assert isinstance(failed.value.__cause__, OSError) and failed.value.__cause__.errno == errno.EIO


def test_a_line_with_a_newline_is_refused_saying_why(tmp_path: Path) -> None:
    path = tmp_path / "letters.jsonl"
    with pytest.raises(ValueError) as refused:
        ledger_append.append(LedgerReader(path), [b'{"a":\n1}'])
    assert str(refused.value) == "a ledger line cannot contain a newline"
    assert not path.exists() or path.read_bytes() == b""


class _Interrupted(BaseException):
    """Not an OSError: a signal's exception arriving mid-write."""


def test_an_interrupted_write_is_truncated_back_and_its_own_error_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever stops a write half-way, no partial line stays and the caller sees what stopped it."""
    path = tmp_path / "letters.jsonl"
    path.write_bytes(_line(what="first") + b"\n")
    before = path.read_bytes()
    real, ino = os.write, path.stat().st_ino

    def write(fd: int, data: Any) -> int:
        if os.fstat(fd).st_ino != ino:
            return real(fd, data)
        real(fd, memoryview(data)[: len(data) // 2])
        raise _Interrupted

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(_Interrupted):
        ledger_append.append(LedgerReader(path), [_line(what="half", pad="z" * 200)])
    monkeypatch.undo()
    assert path.read_bytes() == before

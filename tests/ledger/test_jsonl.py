"""The reader side's small helpers (``ledger.jsonl``): a defect's JSON, the settled size, a cache file's
replacement and the checkpoint's window digest. Each is read by a face (``verify`` names defects, a snapshot
is bounded by the settled size) or by every warm reader, so what they answer is pinned here.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dovecote.errors import StoreError
from dovecote.ledger import append as ledger_append
from dovecote.ledger import jsonl
from dovecote.ledger.jsonl import ABSENT, Checkpoint, Defect, LedgerReader, settled_size, window_digest, write_atomic
from dovecote.model.letters import canonical_line, letter_id
from dovecote.util.digests import blake2b


@pytest.fixture
def umask0() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_a_defect_reads_as_its_four_fields() -> None:
    d = Defect("/home/box/letters.jsonl", 7, "malformed", "not a JSON object")
    assert d.to_dict() == {"path": "/home/box/letters.jsonl", "line": 7, "kind": "malformed",
                           "detail": "not a JSON object"}
    assert list(d.to_dict()) == ["path", "line", "kind", "detail"]


def test_the_settled_size_is_the_files_size_or_absent(tmp_path: Path) -> None:
    path = tmp_path / "letters.jsonl"
    assert settled_size(path) == ABSENT
    path.write_bytes(b'{"a":1}\n')
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    assert settled_size(path) == 8
    if fds is not None:
        assert len(os.listdir("/proc/self/fd")) == fds, "settled_size left the ledger open"


def test_the_settled_size_of_a_ledger_that_cannot_be_opened_names_it(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    path = tmp_path / "file" / "letters.jsonl"
    with pytest.raises(StoreError) as failed:
        settled_size(path)
    assert str(failed.value) == f"cannot open {path}: {os.strerror(errno.ENOTDIR)}"
    assert isinstance(failed.value.__cause__, OSError)


def test_the_settled_size_waits_for_a_writer_but_not_for_other_readers(tmp_path: Path) -> None:
    """Shared with readers (a snapshot never waits on another snapshot), exclusive with an appender."""
    path = tmp_path / "letters.jsonl"
    path.write_bytes(b'{"a":1}\n')
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        got: list[int] = []
        t = threading.Thread(target=lambda: got.append(settled_size(path)), daemon=True)
        t.start()
        t.join(timeout=10)
        assert got == [8], "settled_size waited on a reader's shared lock"
        fcntl.flock(fd, fcntl.LOCK_EX)
        t = threading.Thread(target=lambda: got.append(settled_size(path)), daemon=True)
        t.start()
        t.join(timeout=0.2)
        assert got == [8], "settled_size read while an appender held the ledger"
        fcntl.flock(fd, fcntl.LOCK_UN)
        t.join(timeout=10)
        assert got == [8, 8]
    finally:
        os.close(fd)


def test_write_atomic_creates_the_folder_and_gives_the_mode_asked(tmp_path: Path, umask0: None) -> None:
    cache = tmp_path / "cache" / "deep" / "state.bin"
    write_atomic(cache, b"first")
    assert cache.read_bytes() == b"first" and cache.stat().st_mode & 0o777 == 0o666
    write_atomic(cache, [b"sec", b"ond"], mode=0o600)
    assert cache.read_bytes() == b"second" and cache.stat().st_mode & 0o777 == 0o600


def test_the_window_digest_is_a_16_byte_blake2b() -> None:
    assert window_digest(b"abc") == blake2b(b"abc", digest_size=16).hexdigest()
    assert len(window_digest(b"")) == 32


def _line(n: int) -> bytes:
    return canonical_line({"ts": "2026-12-05T10:00:00Z", "agent": "reader", "n": n})


def test_an_appender_takes_its_own_lines_without_reading_the_file_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm reader that appends holds the new letters at once: neither this append nor the next
    locked section opens the ledger to read them back (what makes a busy box's sends cheap)."""
    path = tmp_path / "letters.jsonl"
    reader = LedgerReader(path)
    ledger_append.append(reader, [_line(0)])
    opened: list[object] = []
    real = open

    def counting(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(file)
        return real(file, *args, **kwargs)

    monkeypatch.setattr(jsonl, "open", counting, raising=False)
    ledger_append.append(reader, [_line(1), _line(2)])
    ledger_append.append(reader, [_line(3)])
    assert opened == [], "the appender read its own lines back from the file"
    monkeypatch.undo()
    whole = LedgerReader(path)
    whole.refresh()
    assert [x.raw for x in reader.letters] == [x.raw for x in whole.letters] == [_line(n) for n in range(4)]
    assert reader.offset == whole.offset == path.stat().st_size


def test_a_resumed_reader_appends_and_reads_as_a_whole_read(tmp_path: Path) -> None:
    """A reader resumed from a checkpoint knows only the digest of the bytes before it: its own
    append is read back from the file, and it reads as a reader that read everything."""
    path = tmp_path / "letters.jsonl"
    ledger_append.append(LedgerReader(path), [_line(0), _line(1)])
    first = LedgerReader(path)
    first.refresh()
    resumed = LedgerReader.resume(path, first.checkpoint())
    ledger_append.append(resumed, [_line(2)])
    assert [x.raw for x in resumed.letters] == [_line(2)]
    assert resumed.offset == path.stat().st_size
    ledger_append.append(resumed, [_line(3)])
    assert [x.raw for x in resumed.letters] == [_line(2), _line(3)]


def test_a_malformed_line_is_a_defect_naming_its_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "letters.jsonl"
    path.write_bytes(_line(0) + b"\r\n" + b"not json\r\n" + _line(1) + b"\r\n")
    reader = LedgerReader(path)
    reader.refresh()
    assert reader.defects == [Defect(str(path), 2, "malformed", "not a JSON object")]
    assert [x.raw for x in reader.letters] == [_line(0), _line(1)]
    assert all(reader.index[x.id] is x for x in reader.letters)


def test_a_fresh_readers_checkpoint_is_all_zero_with_the_empty_window(tmp_path: Path) -> None:
    """What a cache stores for a box with no ledger yet: resuming from it reads from the start."""
    assert LedgerReader(tmp_path / "letters.jsonl").checkpoint() == Checkpoint(0, 0, 0, window_digest(b""))



def test_a_repeated_line_is_one_letter_and_counted_whether_repeated_in_its_read_or_after(tmp_path: Path) -> None:
    """A read whose lines are all new takes them at once; one repeating a line (in itself, or one read
    before) goes line by line. Both give each letter once, with its id and its own line's bytes."""
    lines = [canonical_line({"ts": f"2026-06-01T00:00:0{n}Z", "what": f"w{n}"}) for n in range(3)]
    path = tmp_path / "letters.jsonl"
    path.write_bytes(b"\n".join(lines[:2]) + b"\n")
    r = LedgerReader(path)
    first = r.refresh()
    assert [lt.raw for lt in first] == lines[:2] and r.duplicates == 0
    assert [lt.id for lt in first] == [letter_id(ln) for ln in lines[:2]]
    with open(path, "ab") as f:
        f.write(b"\n".join([lines[2], lines[2], lines[0]]) + b"\n")
    new = r.refresh()
    assert [lt.raw for lt in new] == [lines[2]] and new[0].id == letter_id(lines[2])
    assert r.duplicates == 2
    assert list(r.index) == [letter_id(ln) for ln in lines] and len(r.letters) == 3

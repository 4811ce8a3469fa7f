"""A ledger replaced or removed by another program while a writer waits: the letter lands at the path.

dovecote only ever appends to a ledger, but the world renames files over it (an
editor's save, a restored backup, a checkout, a sync tool) or removes it. A
writer that opened the old file and then waited for its lock would otherwise
append to a file nobody will read again, fsync it and acknowledge the letter.
These tests replace the file at the worst moment on purpose, and check with a
fresh reader of the path that every acknowledged letter is there.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dovecote.errors import StoreError
from dovecote.ledger import append as ledger_append
from dovecote.ledger.jsonl import LedgerReader, fsync_dir
from dovecote.model.letters import canonical_line, letter_id
from dovecote.util import osutil


def _line(**fields: Any) -> bytes:
    return canonical_line({"ts": "2026-12-05T10:00:00Z", "agent": "writer", **fields})


def _ids_at(path: Path) -> list[str]:
    """The letter ids a reader that has never seen the ledger finds at ``path``."""
    fresh = LedgerReader(path)
    fresh.refresh()
    assert not fresh.defects and fresh.torn is None
    return [lt.id for lt in fresh.letters]


def _replace_by_copy(path: Path) -> None:
    """What a backup restore or an editor's save does: a whole new file renamed over the name."""
    tmp = path.with_name("restored.tmp")
    shutil.copyfile(path, tmp)
    os.replace(tmp, path)


@pytest.fixture
def waiting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path, Callable[[], None]], list[tuple[str, bool]]]]:
    """Run one append while this test holds the ledger's lock; ``meddle`` runs once the writer has
    opened the file and is about to wait, then the lock is released. Returns the append's answer."""
    opened = threading.Event()
    real_flock = fcntl.flock

    def flock_noting(fd: int, op: int) -> None:
        opened.set()
        real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock_noting)

    def run(path: Path, meddle: Callable[[], None]) -> list[tuple[str, bool]]:
        holder = os.open(path, os.O_RDONLY)
        real_flock(holder, fcntl.LOCK_EX)
        answer: list[tuple[str, bool]] = []
        failed: list[BaseException] = []

        def write() -> None:
            try:
                answer.extend(ledger_append.append(LedgerReader(path), [_line(n="waited")]))
            except BaseException as e:  # reported below, in the test's thread
                failed.append(e)

        writer = threading.Thread(target=write)
        writer.start()
        try:
            assert opened.wait(10), "the writer never reached the lock"
            time.sleep(0.05)  # let it block in flock (it has opened the old file either way)
            meddle()
        finally:
            os.close(holder)  # releases the lock
            writer.join(10)
        assert not failed, failed
        return answer

    yield run


def test_a_ledger_renamed_over_while_the_writer_waits_gets_the_letter(
    tmp_path: Path, waiting: Callable[[Path, Callable[[], None]], list[tuple[str, bool]]]
) -> None:
    path = tmp_path / "letters.jsonl"
    old = [_line(n=i) for i in range(3)]
    ledger_append.append(LedgerReader(path), old)
    [(i, appended)] = waiting(path, lambda: _replace_by_copy(path))
    assert appended
    assert _ids_at(path) == [letter_id(x) for x in old] + [i], "the letter went to the replaced file"


def test_a_ledger_restored_from_an_older_copy_gets_the_letter_after_what_the_copy_holds(
    tmp_path: Path, waiting: Callable[[Path, Callable[[], None]], list[tuple[str, bool]]]
) -> None:
    """The writer decides (dedup) on the file it will append to, not on the one it first opened."""
    path = tmp_path / "letters.jsonl"
    reader = LedgerReader(path)
    ledger_append.append(reader, [_line(n=0)])
    backup = tmp_path / "backup.jsonl"
    shutil.copyfile(path, backup)
    ledger_append.append(reader, [_line(n="waited")])  # in the live file, not in the backup

    def restore() -> None:
        shutil.copyfile(backup, path.with_name("restored.tmp"))
        os.replace(path.with_name("restored.tmp"), path)

    [(i, appended)] = waiting(path, restore)
    assert appended, "deduplicated against a file no longer at the path"
    assert _ids_at(path) == [letter_id(_line(n=0)), i]


def test_a_ledger_removed_while_the_writer_waits_gets_the_letter_in_a_new_file(
    tmp_path: Path,
    waiting: Callable[[Path, Callable[[], None]], list[tuple[str, bool]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "letters.jsonl"
    ledger_append.append(LedgerReader(path), [_line(n=0)])
    synced: list[Path] = []

    def note(folder: Path) -> None:
        synced.append(folder)
        fsync_dir(folder)

    monkeypatch.setattr("dovecote.ledger.append.fsync_dir", note)
    [(i, appended)] = waiting(path, lambda: os.unlink(path))
    assert appended
    assert _ids_at(path) == [i]
    assert synced == [tmp_path], "the new file's name was not made durable before the acknowledgement"


def test_a_ledger_that_keeps_being_replaced_is_refused_not_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "letters.jsonl"
    ledger_append.append(LedgerReader(path), [_line(n=0)])
    real_flock = fcntl.flock

    def flock_then_replace(fd: int, op: int) -> None:
        real_flock(fd, op)
        _replace_by_copy(path)

    monkeypatch.setattr(fcntl, "flock", flock_then_replace)
    with pytest.raises(StoreError, match=f"cannot append to {path}: it was replaced {osutil.RELOCK_TRIES} times"):
        ledger_append.append(LedgerReader(path), [_line(n=1)])
    monkeypatch.undo()
    assert _ids_at(path) == [letter_id(_line(n=0))]


_WRITER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from dovecote.errors import StoreError
    from dovecote.ledger.append import append
    from dovecote.ledger.jsonl import LedgerReader, fsync_dir
    from dovecote.model.letters import canonical_line

    path, w, per = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    reader = LedgerReader(path)
    acked, refused = [], 0
    for n in range(per):
        line = canonical_line({"ts": "2026-12-05T10:00:00Z", "agent": f"w{w}", "seq": n})
        try:
            [(i, _)] = append(reader, [line])
        except StoreError:
            refused += 1  # never acknowledged: nothing is owed
            continue
        acked.append(i)
    print(json.dumps({"acked": acked, "refused": refused}))
    """
)

#: Replaces the ledger by a copy of itself, over and over, the way a careful outside tool would: under the
#: ledger's lock (so the copy misses nothing already written) then renamed over the name.
_REPLACER = textwrap.dedent(
    """
    import fcntl, os, shutil, sys
    from pathlib import Path

    path, stop = Path(sys.argv[1]), Path(sys.argv[2])
    tmp = path.with_name("replacing.tmp")
    done = 0
    while not stop.exists():
        fd = os.open(path, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX)
        shutil.copyfile(path, tmp)
        os.replace(tmp, path)
        os.close(fd)
        done += 1
    print(done)
    """
)

WRITERS = 3
PER_WRITER = 150


def test_writers_racing_a_replacer_lose_no_acknowledged_letter(tmp_path: Path) -> None:
    path = tmp_path / "letters.jsonl"
    ledger_append.append(LedgerReader(path), [_line(n="first")])
    stop = tmp_path / "stop"
    replacer = subprocess.Popen([sys.executable, "-c", _REPLACER, str(path), str(stop)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(w), str(PER_WRITER)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for w in range(WRITERS)]
    acked: list[str] = []
    refused = 0
    try:
        for p in writers:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err.decode()
            got = json.loads(out)
            acked.extend(got["acked"])
            refused += got["refused"]
    finally:
        stop.touch()
        out, err = replacer.communicate(timeout=30)
    assert replacer.returncode == 0, err.decode()
    replaced = int(out)
    assert replaced > 10, f"the ledger was replaced only {replaced} times: the race was not run"
    assert len(acked) + refused == WRITERS * PER_WRITER and len(acked) >= WRITERS * PER_WRITER // 2
    at_path = set(_ids_at(path))
    lost = [i for i in acked if i not in at_path]
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged letters are not in the file at the path"

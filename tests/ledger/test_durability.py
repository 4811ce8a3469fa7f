"""Durability of the file ledger: what an acknowledged append guarantees.

An agent that was told "appended" stops retrying, so a lost acknowledged letter
is silent data loss. These tests attack the ledger the way the world does:
many processes at once, SIGKILL at random moments, a crash that tears the last
line, a disk that fails half-way through a write, and replays of letters that
are already there.
"""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from dovecote.errors import StoreError
from dovecote.handle.api import Dovecote, init
from dovecote.ledger import append as ledger_append
from dovecote.ledger.jsonl import LedgerReader
from dovecote.model.addresses import HOME
from dovecote.model.letters import canonical_line, letter_id

PROCS = 8
PER_PROC = 1000
SHARED = 10  # lines every process tries to append; each must land once
KILLS = 24


def _line(**fields: Any) -> bytes:
    return canonical_line({"ts": "2026-07-05T10:00:00Z", "agent": "durability", **fields})


def _raw_lines(path: Path) -> list[bytes]:
    """Every newline-terminated line of the file, as bytes (a torn tail excluded)."""
    data = path.read_bytes()
    end = data.rfind(b"\n")
    return data[:end].split(b"\n") if end >= 0 else []


def _read(path: Path) -> LedgerReader:
    r = LedgerReader(path)
    r.refresh()
    return r


# -- concurrency ------------------------------------------------------------------

_WORKER = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    from dovecote.ledger.append import append
    from dovecote.ledger.jsonl import LedgerReader
    from dovecote.model.letters import canonical_line

    path, go = Path(sys.argv[1]), Path(sys.argv[2])
    worker, per, shared = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    reader = LedgerReader(path)
    while not go.exists():
        time.sleep(0.001)
    mine, won = [], []
    for n in range(per):
        # Some lines are longer than a pipe buffer, so atomicity cannot come from the kernel alone.
        pad = "x" * (6000 if n % 97 == 0 else n % 50)
        line = canonical_line({"ts": "2026-07-05T10:00:00Z", "agent": f"w{worker}", "seq": n, "pad": pad})
        [(i, fresh)] = append(reader, [line])
        assert fresh, (worker, n)
        mine.append(i)
        if n % (per // shared) == 0:
            s = canonical_line({"ts": "2026-07-05T10:00:00Z", "agent": "everyone", "rally": n // (per // shared)})
            [(si, sfresh)] = append(reader, [s])
            if sfresh:
                won.append(si)
    print(json.dumps({"mine": mine, "won": won}))
    """
)


def test_eight_processes_append_without_tearing_or_losing(tmp_path: Path) -> None:
    """Eight writers on one box: every acknowledged id lands exactly once, lines intact."""
    path = tmp_path / "boxes" / "home" / "letters.jsonl"
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(path), str(go), str(w), str(PER_PROC), str(SHARED)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for w in range(PROCS)
    ]
    time.sleep(0.3)  # let them all import and wait at the gate, so they really contend
    go.touch()
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
        reports.append(json.loads(out))

    lines = _raw_lines(path)
    assert path.read_bytes().endswith(b"\n")
    objs = [orjson.loads(ln) for ln in lines]  # a torn or interleaved line would not parse
    assert all(isinstance(o, dict) for o in objs)
    ids = [letter_id(ln) for ln in lines]
    assert len(ids) == len(set(ids)), "a letter was appended twice"
    assert len(ids) == PROCS * PER_PROC + SHARED

    acknowledged = [i for rep in reports for i in rep["mine"]]
    assert len(set(acknowledged)) == PROCS * PER_PROC
    assert set(acknowledged) <= set(ids)
    won = [i for rep in reports for i in rep["won"]]
    assert sorted(won) == sorted(set(won)) and len(won) == SHARED, "dedup raced: a shared line won twice or never"

    # Each writer's letters appear in the order it appended them.
    for w in range(PROCS):
        seqs = [o["seq"] for o in objs if o.get("agent") == f"w{w}"]
        assert seqs == list(range(PER_PROC))

    r = _read(path)
    assert len(r.letters) == len(ids) and not r.defects and r.torn is None and r.duplicates == 0


# -- crash (SIGKILL) ----------------------------------------------------------------

_CRASHER = textwrap.dedent(
    """
    import random, sys
    from pathlib import Path
    from dovecote.ledger.append import append
    from dovecote.ledger.jsonl import LedgerReader
    from dovecote.model.letters import canonical_line

    path, run = Path(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(run)
    reader = LedgerReader(path)
    n = 0
    while True:
        batch = []
        for _ in range(rng.choice((1, 1, 1, 3, 8))):
            size = rng.choice((0, 10, 100, 1000, 30000))
            obj = {"ts": "2026-07-05T10:00:00Z", "agent": f"run{run}", "seq": n, "pad": "p" * size}
            batch.append(canonical_line(obj))
            n += 1
        result = append(reader, batch)
        # Only now, after append returned (fsynced), is the letter reported.
        sys.stdout.write("".join(i + "\\n" for i, _ in result))
        sys.stdout.flush()
    """
)


def test_sigkill_never_loses_an_acknowledged_letter(tmp_path: Path) -> None:
    """A writer killed at random moments, restarted on the same ledger, loses nothing it reported."""
    path = tmp_path / "letters.jsonl"
    rng = random.Random(int(os.environ.get("DOVECOTE_CRASH_SEED", "20260705")))
    reported: set[str] = set()
    for run in range(KILLS):
        p = subprocess.Popen(
            [sys.executable, "-c", _CRASHER, str(path), str(run)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            # unbuffered: communicate(timeout=...) reads the raw pipe, so bytes a buffered readline had read
            # ahead would be lost and the next line's tail taken for an id (a false "lost" at load 4)
            bufsize=0,
        )
        assert p.stdout is not None
        first = p.stdout.readline()  # it is appending now
        assert first.endswith(b"\n"), f"run {run}: the writer died before its first append"
        time.sleep(rng.uniform(0, 0.05))
        p.send_signal(signal.SIGKILL)
        rest, _ = p.communicate(timeout=30)
        assert p.returncode == -signal.SIGKILL
        out = first + rest
        done = out[: out.rfind(b"\n") + 1]  # a half-printed id was never acknowledged
        reported |= {ln.decode() for ln in done.split(b"\n") if ln}

    r = _read(path)
    assert reported, "the writer never acknowledged anything"
    missing = reported - r.index.keys()
    assert not missing, f"{len(missing)} acknowledged letters lost"
    assert r.duplicates == 0
    assert all(d.kind == "malformed" for d in r.defects)
    assert len(r.defects) + (1 if r.torn else 0) <= KILLS, "more damage than one torn line per crash"
    for d in r.defects:  # each fragment is a prefix of a line the writer was writing, nothing else
        frag = _raw_lines(path)[d.line - 1]
        assert frag.startswith(b'{"ts":"2026-07-05T10:00:00Z"'[: len(frag)])

    # Appends go on, and start on a fresh line even over a torn tail.
    before = path.read_bytes()
    line = _line(what="after the crashes")
    assert ledger_append.append(LedgerReader(path), [line]) == [(letter_id(line), True)]
    after = path.read_bytes()
    assert after.startswith(before)
    assert after.endswith(b"\n" + line + b"\n")
    r2 = _read(path)
    assert letter_id(line) in r2.index and r2.torn is None
    assert reported <= r2.index.keys()


# -- torn tail ------------------------------------------------------------------------


def test_torn_tail_is_skipped_reported_then_fenced_off(tmp_path: Path) -> None:
    """A crash mid-line must cost only the torn bytes, never a neighbour letter."""
    path = tmp_path / "letters.jsonl"
    a, b, c = _line(what="a"), _line(what="b"), _line(what="c")
    fragment = _line(what="torn")[:25]
    path.write_bytes(a + b"\n" + b + b"\n" + fragment)

    r = LedgerReader(path)
    assert [x.id for x in r.refresh()] == [letter_id(a), letter_id(b)]
    assert r.torn is not None and r.torn.kind == "torn" and r.torn.line == 3
    assert not r.defects

    assert ledger_append.append(r, [c]) == [(letter_id(c), True)]
    assert path.read_bytes() == a + b"\n" + b + b"\n" + fragment + b"\n" + c + b"\n"
    for reader in (r, _read(path)):
        assert [x.id for x in reader.letters] == [letter_id(a), letter_id(b), letter_id(c)]
        assert reader.torn is None
        assert [(d.kind, d.line) for d in reader.defects] == [("malformed", 3)]


def test_torn_tail_with_crlf_ledger(tmp_path: Path) -> None:
    """A ledger written on Windows (CRLF) with a torn tail behaves the same way."""
    path = tmp_path / "letters.jsonl"
    a, c = _line(what="a"), _line(what="c")
    path.write_bytes(a + b"\r\n" + b'{"what":"to')
    r = _read(path)
    assert [x.id for x in r.letters] == [letter_id(a)] and r.torn is not None and r.torn.line == 2
    ledger_append.append(r, [c])
    r2 = _read(path)
    assert [x.id for x in r2.letters] == [letter_id(a), letter_id(c)]
    assert [(d.kind, d.line) for d in r2.defects] == [("malformed", 2)]


# -- fsync accounting -------------------------------------------------------------------


class FsyncLog:
    """Records every fsync (and ledger write) with the path behind the fd and its size then."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, int]] = []  # (op, path, size)
        self.watch: Path | None = None
        self.watch_existed: list[bool] = []  # per event: did ``watch`` exist at that moment

    def record(self, op: str, fd: int) -> None:
        target = os.readlink(f"/proc/self/fd/{fd}")
        self.events.append((op, target, os.fstat(fd).st_size))
        self.watch_existed.append(self.watch is not None and self.watch.exists())

    def clear(self) -> None:
        self.events.clear()
        self.watch_existed.clear()

    def fsyncs(self, path: Path) -> list[int]:
        return [size for op, p, size in self.events if op == "fsync" and p == str(path)]


@pytest.fixture
def fsync_log(monkeypatch: pytest.MonkeyPatch) -> FsyncLog:
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to name file descriptors")
    log = FsyncLog()
    real_fsync, real_write = os.fsync, os.write

    def fsync(fd: int) -> None:
        log.record("fsync", fd)
        real_fsync(fd)

    def write(fd: int, data: Any) -> int:
        n = real_write(fd, data)
        if fd > 2:
            log.record("write", fd)
        return n

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "write", write)
    return log


def test_append_fsyncs_file_and_new_directories(tmp_path: Path, fsync_log: FsyncLog) -> None:
    """'Appended' must mean the bytes and the directory entry both survive a power cut."""
    path = (tmp_path / "boxes" / "project" / "alpha" / "letters.jsonl").resolve()
    line = _line(what="first")
    r = LedgerReader(path)
    fsync_log.watch = path
    ledger_append.append(r, [line])
    final = path.stat().st_size
    assert fsync_log.fsyncs(path) == [final], "the ledger was not fsynced after its bytes were written"
    last_write = max(i for i, (op, p, _) in enumerate(fsync_log.events) if op == "write" and p == str(path))
    first_sync = fsync_log.events.index(("fsync", str(path), final))
    assert first_sync > last_write
    synced_dirs = {p for op, p, _ in fsync_log.events if op == "fsync" and p != str(path)}
    assert str(path.parent) in synced_dirs, "the new ledger's directory entry was never fsynced"
    assert str(path.parent.parent) in synced_dirs  # the new box folder's own entry
    assert any(
        existed and op == "fsync" and p == str(path.parent)
        for (op, p, _), existed in zip(fsync_log.events, fsync_log.watch_existed, strict=True)
    ), "the directory was fsynced only before the ledger's entry existed"

    fsync_log.clear()
    more = [_line(what=f"batch {n}") for n in range(50)]
    ledger_append.append(r, more)
    assert fsync_log.fsyncs(path) == [path.stat().st_size], "one fsync per batch, after the bytes"
    assert not [e for e in fsync_log.events if e[0] == "fsync" and e[1] != str(path)], "no dir fsync for an old file"


def test_store_append_is_durable_before_returning(tmp_path: Path, fsync_log: FsyncLog) -> None:
    """The library path agents use (Dovecote.store.append) gives the same guarantee."""
    home, _ = init(tmp_path / "home")
    dc = Dovecote(home)
    box = dc.store.path(HOME)
    assert box is not None
    box = box.resolve()
    fsync_log.clear()
    line = _line(what="via the store")
    assert dc.store.append(HOME, [line]) == [(letter_id(line), True)]
    assert fsync_log.fsyncs(box) == [box.stat().st_size]
    assert str(box.parent) in {p for op, p, _ in fsync_log.events if op == "fsync"}


# -- dedup ---------------------------------------------------------------------------------


def test_replay_appends_nothing_and_says_so(tmp_path: Path, fsync_log: FsyncLog) -> None:
    """Retries and replays are normal for agents; they must never duplicate a letter."""
    path = (tmp_path / "letters.jsonl").resolve()
    r = LedgerReader(path)
    a, b = _line(what="a"), _line(what="b")
    assert ledger_append.append(r, [a]) == [(letter_id(a), True)]
    size = path.stat().st_size

    fsync_log.clear()
    assert ledger_append.append(LedgerReader(path), [a]) == [(letter_id(a), False)]  # a cold reader knows too
    assert path.stat().st_size == size
    assert fsync_log.fsyncs(path) == [], "a no-op append should not cost an fsync"

    result = ledger_append.append(r, [b, a, b, b])
    assert result == [(letter_id(b), True), (letter_id(a), False), (letter_id(b), False), (letter_id(b), False)]
    assert _raw_lines(path) == [a, b]
    assert len(fsync_log.fsyncs(path)) == 1


def test_replay_through_the_store(tmp_path: Path) -> None:
    """The same line sent twice to a box through the library is filed once."""
    home, _ = init(tmp_path / "home")
    dc = Dovecote(home)
    line = _line(what="twice")
    assert dc.store.append(HOME, [line]) == [(letter_id(line), True)]
    assert Dovecote(home).store.append(HOME, [line]) == [(letter_id(line), False)]
    assert [x.id for x in dc.store.read(HOME).letters] == [letter_id(line)]


def test_a_line_with_a_newline_is_refused_before_writing(tmp_path: Path) -> None:
    """One letter per line is the format; a multi-line payload would split into garbage."""
    path = tmp_path / "letters.jsonl"
    ok = _line(what="ok")
    with pytest.raises(ValueError):
        ledger_append.append(LedgerReader(path), [ok, b'{"a":\n1}'])
    assert not path.exists() or path.read_bytes() == b""


# -- a write that fails half-way ------------------------------------------------------------


def _half_then_fail(target: Path, real_write: Callable[[int, Any], int]) -> Callable[[int, Any], int]:
    ino = target.stat().st_ino

    def write(fd: int, data: Any) -> int:
        if os.fstat(fd).st_ino != ino:
            return real_write(fd, data)
        view = memoryview(data)
        real_write(fd, view[: max(1, len(view) // 2)])
        raise OSError(errno.ENOSPC, "No space left on device")

    return write


@pytest.mark.parametrize("torn", [False, True])
def test_failed_write_leaves_ledger_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, torn: bool) -> None:
    """A disk error must not leave half a letter behind for the next append to glue onto."""
    path = tmp_path / "letters.jsonl"
    a = _line(what="a")
    path.write_bytes(a + b"\n" + (b'{"what":"tor' if torn else b""))
    before = path.read_bytes()
    r = LedgerReader(path)
    batch = [_line(what=f"b{n}", pad="z" * 300) for n in range(10)]

    monkeypatch.setattr(os, "write", _half_then_fail(path, os.write))
    with pytest.raises(StoreError):
        ledger_append.append(r, batch)
    monkeypatch.undo()
    assert path.read_bytes() == before

    # Nothing of the failed batch was taken for written: a retry appends it all.
    assert ledger_append.append(r, batch) == [(letter_id(x), True) for x in batch]
    r2 = _read(path)
    assert [x.id for x in r2.letters] == [letter_id(a), *(letter_id(x) for x in batch)]
    assert r2.torn is None
    assert [d.kind for d in r2.defects] == (["malformed"] if torn else [])

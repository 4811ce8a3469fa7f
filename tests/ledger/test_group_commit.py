"""Group commit (``commit.py``): concurrent appends to one ledger share an fsync, and still
nothing is acknowledged before its bytes are fsynced.

Real threads in one process (the server's case), real processes beside them
(the flock still orders them), a SIGKILL right after an acknowledgement, and a
disk whose fsync fails: its whole batch fails, and nothing of it is left
half acknowledged.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dovecote.errors import Refusal, StoreError
from dovecote.handle.api import init, open_home
from dovecote.ledger import append as ledger_append
from dovecote.ledger import group_commit as commit
from dovecote.ledger.jsonl import LedgerReader
from dovecote.model.addresses import entity
from dovecote.model.letters import canonical_line, letter_id
from dovecote.verbs import EntityAdd, Message, Move

THREADS = 8
PER_THREAD = 150


def _line(**fields: Any) -> bytes:
    return canonical_line({"ts": "2026-12-01T10:00:00Z", "agent": "gc", **fields})


def _ids_in(path: Path) -> list[str]:
    data = path.read_bytes()
    return [letter_id(x) for x in data[: data.rfind(b"\n")].split(b"\n") if x]


def _threads(n: int, work: Callable[[int], None]) -> None:
    """Run ``work(i)`` in ``n`` threads released together; re-raise the first failure."""
    gate = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        gate.wait()
        try:
            work(i)
        except BaseException as e:
            errors.append(e)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    if errors:
        raise errors[0]


class Trace:
    """Every ledger write and fsync of one file, in order, with when each append was acknowledged."""

    def __init__(self, path: Path, monkeypatch: pytest.MonkeyPatch, slow: float = 0.002) -> None:
        self.path = str(path)
        self.events: list[tuple[str, int, int]] = []  # (what, thread, size of the file then)
        self.lock = threading.Lock()
        real_fsync, real_write = os.fsync, os.write

        def mine(fd: int) -> bool:
            return os.readlink(f"/proc/self/fd/{fd}") == self.path

        def fsync(fd: int) -> None:
            if mine(fd):
                self.note("sync-start", os.fstat(fd).st_size)
                time.sleep(slow)  # a disk that takes its time: writers pile up behind it
                real_fsync(fd)
                self.note("sync-end", 0)
            else:
                real_fsync(fd)

        def write(fd: int, data: Any) -> int:
            n = real_write(fd, data)
            if fd > 2 and mine(fd):
                self.note("write", os.fstat(fd).st_size)
            return n

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "write", write)

    def note(self, what: str, size: int) -> None:
        with self.lock:
            self.events.append((what, threading.get_ident(), size))

    def syncs(self) -> int:
        return sum(1 for e in self.events if e[0] == "sync-start")


def test_threads_share_fsyncs_and_every_ack_follows_an_fsync_of_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N threads x M appends on one warm reader: all ids once, in each thread's order, far
    fewer fsyncs than appends, and no append acknowledged before an fsync that began after it."""
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to name file descriptors")
    path = (tmp_path / "letters.jsonl").resolve()
    reader = LedgerReader(path)
    ledger_append.append(reader, [_line(what="first")])  # the file exists: no directory fsyncs below
    trace = Trace(path, monkeypatch)
    acked: dict[int, list[str]] = {}

    def work(i: int) -> None:
        mine = acked.setdefault(i, [])
        for n in range(PER_THREAD):
            line = _line(thread=i, seq=n)
            [(lid, fresh)] = ledger_append.append(reader, [line])
            assert fresh
            with trace.lock:
                # the last write of this thread's bytes, and a finished fsync that started after it
                wrote = max(k for k, e in enumerate(trace.events) if e[0] == "write" and e[1] == threading.get_ident())
                starts = [k for k, e in enumerate(trace.events) if e[0] == "sync-start" and k > wrote]
                assert starts, f"thread {i} append {n} acknowledged before any fsync after its write"
                ends = [k for k, e in enumerate(trace.events) if e[0] == "sync-end" and k > starts[0]]
                assert ends, f"thread {i} append {n} acknowledged before its fsync finished"
            mine.append(lid)

    _threads(THREADS, work)
    monkeypatch.undo()
    ids = _ids_in(path)
    assert len(ids) == len(set(ids)) == THREADS * PER_THREAD + 1
    for i in range(THREADS):
        assert [x for x in ids if x in set(acked[i])] == acked[i], "a thread's letters out of its order"
    appends = THREADS * PER_THREAD
    assert trace.syncs() < appends / 2, f"{trace.syncs()} fsyncs for {appends} appends: no group commit"
    fresh = LedgerReader(path)
    fresh.refresh()
    assert [x.id for x in fresh.letters] == ids and not fresh.defects and fresh.torn is None


_PROC = textwrap.dedent(
    """
    import json, sys, threading
    from pathlib import Path
    from dovecote.ledger.append import append
    from dovecote.ledger.jsonl import LedgerReader
    from dovecote.model.letters import canonical_line

    path, w, threads, per = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    reader = LedgerReader(path)
    out, lock = [], threading.Lock()

    def work(t):
        for n in range(per):
            line = canonical_line({"ts": "2026-12-01T10:00:00Z", "agent": f"p{w}t{t}", "seq": n})
            [(i, fresh)] = append(reader, [line])
            shared = canonical_line({"ts": "2026-12-01T10:00:00Z", "agent": "all", "n": n % 10})
            [(s, won)] = append(reader, [shared])
            with lock:
                out.append(i)
                if won:
                    out.append("won:" + s)
            sys.stdout.flush()

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    print(json.dumps(out))
    """
)


def test_processes_of_threads_land_every_letter_once(tmp_path: Path) -> None:
    """Three processes of four threads each: group commit inside, the flock between them."""
    path = tmp_path / "letters.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", _PROC, str(path), str(w), "4", "60"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for w in range(3)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
        outs.extend(json.loads(out))
    ids = _ids_in(path)
    assert len(ids) == len(set(ids)) == 3 * 4 * 60 + 10
    acked = [x for x in outs if not x.startswith("won:")]
    assert len(acked) == 3 * 4 * 60 and set(acked) <= set(ids)
    assert len([x for x in outs if x.startswith("won:")]) == 10, "a shared line won twice or never"


_KILLED = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    from dovecote.ledger.append import append
    from dovecote.ledger.jsonl import LedgerReader
    from dovecote.model.letters import canonical_line

    path = Path(sys.argv[1])
    reader = LedgerReader(path)
    lock = threading.Lock()

    def work(t):
        n = 0
        while True:
            line = canonical_line({"ts": "2026-12-01T10:00:00Z", "agent": f"t{t}", "seq": n, "pad": "p" * (n % 300)})
            [(i, _)] = append(reader, [line])
            with lock:  # acknowledged: only now is it reported
                sys.stdout.write(i + "\\n")
                sys.stdout.flush()
            n += 1

    for t in range(6):
        threading.Thread(target=work, args=(t,), daemon=True).start()
    threading.Event().wait()
    """
)


def test_sigkill_right_after_acks_loses_nothing_acknowledged(tmp_path: Path) -> None:
    """Six threads group-committing, killed the moment some acknowledgements are read."""
    path = tmp_path / "letters.jsonl"
    reported: set[str] = set()
    for _ in range(6):
        p = subprocess.Popen([sys.executable, "-c", _KILLED, str(path)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, bufsize=0)  # readline reads no further than its line
        assert p.stdout is not None
        first = b"".join(p.stdout.readline() for _ in range(40))  # 40 acknowledgements, then at once:
        p.send_signal(signal.SIGKILL)
        rest, _ = p.communicate(timeout=30)
        out = first + rest
        reported |= {x.decode() for x in out[: out.rfind(b"\n") + 1].split(b"\n") if x}
    r = LedgerReader(path)
    r.refresh()
    assert reported and not reported - r.index.keys(), "an acknowledged letter was lost"
    assert r.duplicates == 0


def _failing_fsync(path: Path, monkeypatch: pytest.MonkeyPatch, times: int, hold: float = 0.02) -> list[int]:
    """os.fsync of ``path`` fails ``times`` times (after a pause, so a batch gathers behind it)."""
    real = os.fsync
    left = [times]

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}") == str(path) and left[0] > 0:
            time.sleep(hold)
            left[0] -= 1
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return left


def test_a_failed_fsync_fails_its_whole_batch_and_leaves_nothing_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every append the failed fsync covered (and every one decided after it) is refused,
    none of their bytes stays, and each acknowledged one is in the ledger."""
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to name file descriptors")
    path = (tmp_path / "letters.jsonl").resolve()
    reader = LedgerReader(path)
    base = _line(what="before")
    ledger_append.append(reader, [base])
    _failing_fsync(path, monkeypatch, times=1)
    ok: list[str] = []
    failed: list[str] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        for n in range(5):
            line = _line(thread=i, seq=n)
            try:
                [(lid, _)] = ledger_append.append(reader, [line])
            except StoreError as e:
                assert "fsync" in str(e) and "failed" in str(e)
                with lock:
                    failed.append(letter_id(line))
                continue
            with lock:
                ok.append(lid)

    _threads(THREADS, work)
    monkeypatch.undo()
    assert len(failed) >= 2, "the failed fsync covered only one append: no batch was formed"
    ids = _ids_in(path)
    assert set(ok) <= set(ids), "an acknowledged append is missing"
    assert not set(failed) & set(ids), "bytes of a failed batch stayed in the ledger"
    assert ids[0] == letter_id(base) and len(ids) == len(set(ids)) == 1 + len(ok)
    reader.refresh()
    assert set(reader.index) == set(ids), "the warm reader still holds letters that were truncated away"
    # the failed ones were never taken for written: a retry appends each
    retry = [_line(thread=i, seq=n) for i in range(THREADS) for n in range(5)]
    assert [fresh for _, fresh in ledger_append.append(reader, retry)] == [letter_id(x) in failed for x in retry]


def test_a_send_whose_delivery_fsync_fails_writes_no_sent_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing half acknowledged: the delivery failed, so the sender's box stays as it was."""
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to name file descriptors")
    home, _ = init(tmp_path / ".dovecote", owner_root=str(tmp_path))
    dc = open_home(home)
    for e in ("ent_a", "ent_b"):
        dc.add_entity(EntityAdd(entity_id=e))
    dc.send(Message(recipient="ent_b", subject="warm", sender="ent_a"))
    box_b = Path(dc.store.location(entity("ent_b"))).resolve()
    box_a = Path(dc.store.location(entity("ent_a"))).resolve()
    before_a, before_b = box_a.read_bytes(), box_b.read_bytes()
    _failing_fsync(box_b, monkeypatch, times=1, hold=0)
    with pytest.raises(StoreError, match="nothing was delivered"):
        dc.send(Message(recipient="ent_b", subject="lost", sender="ent_a"))
    monkeypatch.undo()
    assert box_b.read_bytes() == before_b and box_a.read_bytes() == before_a
    d = dc.send(Message(recipient="ent_b", subject="again", sender="ent_a"))
    assert d.id in dc.store.read(entity("ent_b")).index and d.sent_record in dc.store.read(entity("ent_a")).index


def test_concurrent_claims_of_one_item_have_exactly_one_winner(tmp_path: Path) -> None:
    """The compare-and-swap stays whole with group commit: 8 threads claim one item at once."""
    home, _ = init(tmp_path / ".dovecote", owner_root=str(tmp_path))
    dc = open_home(home)
    for e in ("ent_a", "ent_b"):
        dc.add_entity(EntityAdd(entity_id=e))
    item = dc.send(Message(recipient="ent_b", subject="one job", sender="ent_a")).id
    dc.move(Move(kind="seen", entity_id="ent_b", ref=item))
    won: list[str] = []
    refused: list[str] = []

    def work(i: int) -> None:
        try:
            dc.move(Move(kind="claim", entity_id="ent_b", ref=item), actor=f"worker{i}")
            won.append(f"worker{i}")
        except Refusal as r:
            refused.append(r.reason)

    _threads(THREADS, work)
    assert len(won) == 1 and len(refused) == THREADS - 1, (won, refused)
    claims = [x for x in dc.store.read(entity("ent_b")).letters if x.data().get("kind") == "claim"]
    assert len(claims) == 1 and claims[0].data()["agent"] == won[0]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(st.integers(0, 40), min_size=1, max_size=6), min_size=2, max_size=8))
def test_a_group_committed_ledger_reads_as_sequential_appends(tmp_path_factory: pytest.TempPathFactory,
                                                              batches: list[list[int]]) -> None:
    """Batches appended from concurrent threads read back as some sequential order of the
    same batches: each distinct line once, reported fresh exactly once, every batch whole."""
    path = tmp_path_factory.mktemp("gc") / "letters.jsonl"
    reader = LedgerReader(path)
    lines = [[_line(n=n) for n in b] for b in batches]
    results: dict[int, list[tuple[str, bool]]] = {}

    def work(i: int) -> None:
        results[i] = ledger_append.append(reader, lines[i])

    _threads(len(lines), work)
    ids = _ids_in(path)
    distinct = {letter_id(x) for b in lines for x in b}
    assert len(ids) == len(set(ids)) and set(ids) == distinct
    fresh = [lid for r in results.values() for lid, f in r if f]
    assert sorted(fresh) == sorted(distinct), "a line reported appended twice, or never"
    # the same result as sequential appends in the order the batches won the lock
    order = sorted(results, key=lambda i: min((ids.index(lid) for lid, f in results[i] if f), default=len(ids)))
    seq_path = path.with_name("sequential.jsonl")
    seq = LedgerReader(seq_path)
    for i in order:
        assert ledger_append.append(seq, lines[i]) == results[i]
    assert seq_path.read_bytes() == path.read_bytes()
    a, b = LedgerReader(path), LedgerReader(seq_path)
    a.refresh()
    b.refresh()
    assert [x.raw for x in a.letters] == [x.raw for x in b.letters]


def test_a_ledger_has_one_committer_whatever_path_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``commit.of`` finds a committer by the path as given (no ``abspath`` a section), one per file:
    a relative path is never remembered as given, it names another file after a chdir."""
    path = (tmp_path / "letters.jsonl").resolve()
    c = commit.of(path)
    assert commit.of(path) is c and commit.of(str(path)) is c and commit.of(f"{path.parent}/./letters.jsonl") is c
    monkeypatch.chdir(path.parent)
    assert commit.of("letters.jsonl") is c
    (path.parent / "sub").mkdir()
    monkeypatch.chdir(path.parent / "sub")
    assert commit.of("letters.jsonl") is not c
    assert commit.of("letters.jsonl") is commit.of(path.parent / "sub" / "letters.jsonl")


def test_deferred_waits_after_every_lock(tmp_path: Path) -> None:
    """Inside ``deferred`` a section's wait is held until the block ends (no lock is then held)."""
    path = (tmp_path / "letters.jsonl").resolve()
    reader = LedgerReader(path)
    c = commit.of(path)
    with commit.deferred():
        ledger_append.append(reader, [_line(n=1)])
        assert c._settled < c.latest(), "waited inside the deferred block"
    assert c._settled >= c.latest()

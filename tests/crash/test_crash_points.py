"""Crash at every file operation of an append and of a send, and check what survives.

Each operation is run once through ``faultfs.FaultFS`` to count its file
operations (its crash points); then, from the same starting files, it is
crashed at every point k in every power-cut mode (``faultfs.MODES``). After
each crash: every ledger reads (a torn or garbled tail is a reported defect,
never a letter), every letter acknowledged before the crash is there once, the
crashed operation's letters are there at most once, and a retry succeeds and
leaves each of them exactly once. The sweep prints how many points each
operation has and asserts that it ran them all (``crashsweep``: a sample in
``make test``, every point in ``make stress``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from crashsweep import DEPTHS, SWEEPS, Sweeper
from deliveryhelpers import T0, delivery_home, drop, envelope, intake_files
from dovecote.handle.api import Dovecote
from dovecote.ledger import append as ledger_append
from dovecote.ledger import jsonl as ledger
from dovecote.ledger.jsonl import LedgerReader
from dovecote.model.addresses import entity
from dovecote.model.envelope import Envelope
from dovecote.model.letters import canonical_line, letter_id
from dovecote.model.results import builtins
from dovecote.store.files import FileStore
from dovecote.verbs import Inbox, Message, Move, MoveKind
from faultfs import FaultFS
from mailhelpers import ENTITY, SENDER, mail_home

NOW = datetime(2026, 7, 5, 10, 0, tzinfo=UTC)


def _line(what: str, pad: int = 0) -> bytes:
    return canonical_line({"ts": "2026-07-05T10:00:00Z", "agent": "crash", "what": what, "pad": "p" * pad})


def _read(path: Path) -> LedgerReader:
    r = LedgerReader(path)
    r.refresh()
    return r


# -- the ledger's own append ----------------------------------------------------------------

PRIOR = [_line(f"prior {n}") for n in range(3)]
#: appended (and acknowledged) by the crashing process itself before the operation swept
FIRST = [_line("first")]


def _ledger_check(intended: list[bytes], prior: list[bytes]) -> Callable[[Path, FaultFS | None, list[str]], None]:
    def check(root: Path, fs: FaultFS | None, acked: list[str]) -> None:
        path = root / "box" / "letters.jsonl"
        known = {letter_id(x) for x in prior + FIRST + intended}
        r = _read(path)
        ids = [x.id for x in r.letters]
        where = f"after {fs.log[-1] if fs else 'no crash'} ({fs.mode if fs else '-'})"
        assert set(ids) <= known, f"a letter nobody wrote (a torn line read as a letter) {where}"
        assert r.duplicates == 0, f"a duplicated line {where}"
        assert ids[: len(prior)] == [letter_id(x) for x in prior], f"an acknowledged letter was lost {where}"
        assert set(acked) <= set(ids), f"a letter acknowledged in the crashed process was lost {where}"
        if fs is None:
            assert ids == [letter_id(x) for x in prior + FIRST + intended]
            return
        # the next operation (a retry of the same lines) succeeds and leaves each exactly once
        again = LedgerReader(path)
        ledger_append.append(again, FIRST + intended)
        r2 = _read(path)
        assert sorted(x.id for x in r2.letters) == sorted(known), where
        assert r2.torn is None and r2.duplicates == 0, where

    return check


@pytest.mark.parametrize(
    ("name", "prior", "intended"),
    [
        ("single append (new ledger)", [], [_line("one", 200)]),
        ("single append", PRIOR, [_line("one", 200)]),
        ("batch append", PRIOR, [_line(f"batch {n}", 100) for n in range(5)]),
    ],
)
@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_an_append(
    tmp_path: Path, depth: str, sweeper: Sweeper, name: str, prior: list[bytes], intended: list[bytes]
) -> None:
    base = tmp_path / "base"
    base.mkdir()
    if prior:
        ledger_append.append(LedgerReader(base / "box" / "letters.jsonl"), prior)

    def op(root: Path, acked: list[str]) -> None:
        r = LedgerReader(root / "box" / "letters.jsonl")
        acked += [i for i, _ in ledger_append.append(r, FIRST)]  # acknowledged in this process, then the one swept
        acked += [i for i, _ in ledger_append.append(r, intended)]

    points = sweeper(name, base, tmp_path / "work", op, _ledger_check(intended, prior), depth)
    # open, write the whole batch at once, then the group commit's fsync (it opens the file
    # itself); a new ledger first makes its folder durable and then its own entry
    new = ["open", "mkdir", "fsync_dir", "open", "fsync_dir"]
    once = ["write", "open", "fsync"]
    assert points == (["open"] if prior else new) + once + ["open", *once], name


# -- a send: the recipient's box, then the sender's record -----------------------------------


def _send(tree: Path, acked: list[str], keys: tuple[str, ...] = ("first", "swept")) -> None:
    dc = Dovecote(tree / "owner" / ".dovecote")
    for key in keys:
        dc.send(Message(recipient=ENTITY, sender=SENDER, subject=key, body="body", current_tic=100,
                        idempotency_key=key), now=NOW)
        acked.append(key)


def _box(root: Path, name: str) -> list[dict[str, object]]:
    store = Dovecote(root).context.store
    assert isinstance(store, FileStore)
    path = store.path(entity(name))
    assert path is not None
    r = _read(path)
    assert r.duplicates == 0
    return [x.data() for x in r.letters]


def _subjects(root: Path) -> tuple[list[str], list[str]]:
    """The subjects delivered to the recipient, and the message ids the sender recorded as sent."""
    delivered = [Envelope(x).subject for x in _box(root, ENTITY) if x.get("kind") == "message"]
    sent = [str(x.get("message")) for x in _box(root, SENDER) if x.get("kind") == "sent"]
    return delivered, sent


def _send_check(tree: Path, fs: FaultFS | None, acked: list[str]) -> None:
    root = tree / "owner" / ".dovecote"
    where = f"after {fs.log[-1] if fs else 'no crash'} ({fs.mode if fs else '-'})"
    delivered, sent = _subjects(root)
    assert len(set(delivered)) == len(delivered) and len(set(sent)) == len(sent), f"duplicated {where}"
    assert len(sent) <= len(delivered), f"a sent record outlived its delivery {where}"
    assert set(acked) <= set(delivered) and len(sent) >= len(acked), f"an acknowledged send was lost {where}"
    if fs is None:
        assert (sorted(delivered), len(sent)) == (["first", "swept"], 2)
        return
    _send(tree, [])  # the retry (same idempotency keys) completes what is missing, never delivers twice
    delivered, sent = _subjects(root)
    assert (sorted(delivered), len(set(sent)), len(sent)) == (["first", "swept"], 2, 2), where
    assert Dovecote(root).verify(now=NOW).ok, f"a cache does not rebuild identical {where}"


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_a_send(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    base, work = tmp_path / "base", tmp_path / "work"
    mail_home(work)
    work.rename(base)  # the roster names absolute paths: each run's copy goes back to ``work``
    points = sweeper("send (both boxes)", base, work, _send, _send_check, depth)
    assert points.count("fsync") >= 2, "a send writes two ledgers: each is fsynced"


# -- intake: append each envelope's letter, then move its file to processed/ -------------------


def _intake(tree: Path, acked: list[str]) -> None:
    Dovecote(tree / "owner" / ".dovecote").intake(now=T0)
    acked.append("intake")


def _intake_state(root: Path) -> tuple[dict[str, int], list[str], list[str]]:
    """Per envelope, how many task letters carry its id; the files still pending; those processed."""
    dc = Dovecote(root)
    tasks = [x.data() for e in ("tariq", "kimi") for x in _read(dc.layout.entity_box(e)).letters
             if x.data().get("kind") == "task"]
    counts = {e: sum(e in orjson.dumps(x).decode() for x in tasks) for e in ENVELOPES}
    return counts, intake_files(dc, "pending"), intake_files(dc, "processed")


ENVELOPES = ("env_crash_a", "env_crash_b")


def _intake_check(tree: Path, fs: FaultFS | None, acked: list[str]) -> None:
    root = tree / "owner" / ".dovecote"
    where = f"after {fs.log[-1] if fs else 'no crash'} ({fs.mode if fs else '-'})"
    counts, pending, processed = _intake_state(root)
    for e in ENVELOPES:
        assert counts[e] <= 1, f"{e} delivered twice {where}"
        assert counts[e] == 1 or f"{e}.json" in pending, f"{e} lost: not delivered and not pending {where}"
    if fs is None:
        assert (counts, pending, processed) == (dict.fromkeys(ENVELOPES, 1), [], [f"{e}.json" for e in ENVELOPES])
        return
    Dovecote(root).intake(now=T0)  # the next run delivers what is left, and only that
    assert _intake_state(root) == (dict.fromkeys(ENVELOPES, 1), [], [f"{e}.json" for e in ENVELOPES]), where


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_an_intake_run(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    base, work = tmp_path / "base", tmp_path / "work"
    dc = delivery_home(work)
    drop(dc, envelope(envelope_id=ENVELOPES[0], to="tariq"))
    drop(dc, envelope(envelope_id=ENVELOPES[1], to="kimi", work_item_id="wi-8", thread_id="wi-8"))
    work.rename(base)
    points = sweeper("intake (two envelopes, two boxes)", base, work, _intake, _intake_check, depth)
    assert points.count("rename") == 2, points


# -- a whole cache file: tmp, fsync, rename, directory fsync ------------------------------------


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_an_atomic_cache_write(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    base, old, new = tmp_path / "base", b"old cache\n" * 50, b"new cache\n" * 70
    (base / "cache").mkdir(parents=True)
    (base / "cache" / "snap.bin").write_bytes(old)

    def op(root: Path, acked: list[str]) -> None:
        ledger.write_atomic(root / "cache" / "snap.bin", [new[:300], new[300:]])
        acked.append("written")

    def check(root: Path, fs: FaultFS | None, acked: list[str]) -> None:
        got = (root / "cache" / "snap.bin").read_bytes()
        assert got in (old, new), f"a cache file half written after {fs.log[-1] if fs else '-'}"
        assert fs is not None or got == new
        ledger.write_atomic(root / "cache" / "snap.bin", new)  # the next write succeeds
        assert (root / "cache" / "snap.bin").read_bytes() == new

    points = sweeper("atomic cache write", base, tmp_path / "work", op, check, depth)
    assert points == ["open", "write", "write", "fsync", "rename", "fsync_dir"], points


# -- lifecycle moves: seen, then claim (each a guarded append) -------------------------------


def _moves(tree: Path, acked: list[str], kinds: tuple[str, ...] = ("seen", "claim")) -> None:
    dc = Dovecote(tree / "owner" / ".dovecote")
    ref = (tree / "ref").read_text()
    for kind in kinds:
        dc.move(Move(kind=MoveKind(kind), entity_id=ENTITY, ref=ref, current_tic=101), now=NOW)
        acked.append(kind)


def _moves_check(tree: Path, fs: FaultFS | None, acked: list[str]) -> None:
    root = tree / "owner" / ".dovecote"
    where = f"after {fs.log[-1] if fs else 'no crash'} ({fs.mode if fs else '-'})"
    moved = [str(x.get("kind")) for x in _box(root, ENTITY) if x.get("kind") in ("seen", "claim")]
    assert len(set(moved)) == len(moved), f"a move written twice {where}"
    assert set(acked) <= set(moved), f"an acknowledged move was lost {where}"
    state = builtins(Dovecote(root).inbox(Inbox(entity_id=ENTITY)))["items"][0]["state"]
    assert state == ("ACTIVE" if "claim" in moved else "WAIT"), where
    if fs is not None:  # the next operation: the moves still missing go through
        _moves(tree, [], tuple(k for k in ("seen", "claim") if k not in moved))
    assert builtins(Dovecote(root).inbox(Inbox(entity_id=ENTITY)))["items"][0]["state"] == "ACTIVE", where
    assert Dovecote(root).verify(now=NOW).ok, where


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_lifecycle_moves(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    base, work = tmp_path / "base", tmp_path / "work"
    dc = mail_home(work)
    (work / "ref").write_text(dc.send(Message(recipient=ENTITY, sender=SENDER, subject="s", body="b"), now=NOW).id)
    work.rename(base)
    points = sweeper("lifecycle moves (seen, claim)", base, work, _moves, _moves_check, depth)
    assert points.count("fsync") >= 2, points

"""The crash-point sweep every ``tests/crash/test_crash_*.py`` runs, and the checks they share.

An operation is first run once through a counting ``faultfs.FaultFS`` (no fault):
its file operations are its crash points. Then, each time from a fresh copy of
the same starting files, it is crashed at point k in each power-cut mode
(``faultfs.MODES``), the power cut is played on the files, and the caller's
check runs. ``make test`` runs a deterministic sample of the points (the first,
the last and every 7th: ``SAMPLE``); the ``stress``-marked twin of each test
(``make stress``) runs every point. Set ``DOVECOTE_CRASH_TABLE`` to a file and
each sweep appends its row there (``bench/crash_points.py`` prints the table).

``fault_sweep`` fails the k-th call with EIO or ENOSPC instead, once or for
good, and runs the same check once the disk is healed, in a new process (the
group commit forgotten): after an fsync failed and the truncation of its bytes
failed too, the process that saw it refuses (``io_error``) every later
append that rests on those bytes, since a later fsync that succeeds would not
prove them on disk (Linux may have dropped the dirty pages: "fsyncgate"); a
restart reads them as after a crash.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from dovecote.errors import REASONS, DovecoteError
from dovecote.ledger import group_commit as commit
from dovecote.ledger.jsonl import LedgerReader
from dovecote.util import fileops
from faultfs import MODES, Crash, FaultFS

#: ``make test`` crashes at every SAMPLE-th point (and the first and last); ``make stress`` at every one.
SAMPLE = 7
#: Parametrize a sweep with this: the sample in ``make test``, every point under ``make stress`` (CI runs both).
DEPTHS = [pytest.param("sample", id="sample"),
          pytest.param("full", id="full", marks=[pytest.mark.stress])]

#: Folders of a home that hold caches (JSONL there is no ledger: the view's event index, ...).
CACHES = frozenset({"cache", "views"})

Op = Callable[[Path, list[str]], None]
Check = Callable[[Path, "FaultFS | None", list[str]], None]
Sweeper = Callable[[str, Path, Path, Op, Check, str], list[str]]


def chosen(points: int, depth: str) -> list[int]:
    """The crash points a sweep of ``depth`` runs, out of 1..points."""
    if depth == "full":
        return list(range(1, points + 1))
    return sorted({1, points, *range(SAMPLE, points + 1, SAMPLE)})


def where(fs: FaultFS | None) -> str:
    """Which crash, or which healed I/O fault, a failed assertion is about (a fault run never crashes: its
    ``mode`` and call count say nothing of where it went wrong)."""
    if fs is None:
        return "with no crash"
    if fs.fault:
        return f"after {fs.fault}, healed ({fs.calls} calls in all)"
    return f"after {fs.log[-1]} ({fs.mode}, point {fs.calls})"


def sweep(name: str, base: Path, work: Path, op: Op, check: Check, depth: str = "full") -> list[str]:
    """Count ``op``'s crash points from a copy of ``base``, crash it at each chosen one in each mode, check each.

    ``op`` notes in its list what was acknowledged (a call returned) before the crash,
    and ``check`` is told: those must all be there. Returns the operations (one per
    crash point); asserts every chosen (point, mode) pair ran.
    """

    def fresh() -> Path:
        return _fresh(base, work)

    counter = FaultFS()
    acked: list[str] = []
    with fileops.installed(counter):
        op(fresh(), acked)
    counter.settle()
    points = counter.calls
    assert points > 0, f"{name}: no file operation was seen (is the write path routed through fileops?)"
    check(work, None, acked)
    everything = acked
    ran = 0
    run = chosen(points, depth)
    for k in run:
        for mode in MODES:
            fs = FaultFS(crash_at=k, mode=mode, seed=k)
            root = fresh()
            acked = []
            with fileops.installed(fs), pytest.raises(Crash):
                op(root, acked)
            assert fs.calls == k, f"{name}: crash point {k} was not reached ({fs.calls} calls)"
            assert acked != everything, f"{name}: crashed at {k} after the last acknowledgement"
            fs.settle()
            check(root, fs, acked)
            ran += 1
    print(f"\ncrash points: {name}: {points} points, {len(run)} run x {len(MODES)} modes = {ran} crashes")
    assert ran == len(run) * len(MODES)
    note_row(name, points, len(run), ran, depth)
    return [entry.split()[0] for entry in counter.log]


#: The I/O faults each chosen call gets: (errno, for good); ``make test`` runs the first two.
FAULTS = ((errno.EIO, False), (errno.ENOSPC, True), (errno.ENOSPC, False), (errno.EIO, True))


def fault_sweep(name: str, base: Path, work: Path, op: Op, check: Check, depth: str = "full") -> list[str]:
    """Fail ``op``'s k-th file operation with EIO or ENOSPC, once or for good, at each chosen k.

    The operation must then succeed (a cache that could not be written is not
    written) or raise a ``DovecoteError`` whose keyword the faces render, or an
    ``OSError`` (every face renders it ``io_error``), never anything else; no
    ledger is left with a torn or half-written line (the process is alive: an
    append that failed takes its bytes back); and once the disk is healed
    ``check`` runs as after a crash: the next run converges.
    """
    counter = FaultFS()
    everything: list[str] = []
    with fileops.installed(counter):
        op(_fresh(base, work), everything)
    counter.settle()
    points = counter.calls
    assert points > 0, f"{name}: no file operation was seen"
    check(work, None, everything)
    faults = FAULTS if depth == "full" else FAULTS[:2]
    ran, refused = 0, 0
    for k in chosen(points, depth):
        for err, for_good in faults:
            fs = FaultFS(fail_call=k, fail_errno=err, fail_for_good=for_good)
            root = _fresh(base, work)
            acked: list[str] = []
            what = f"{name}: {errno.errorcode[err]} {'for good' if for_good else 'once'} at call {k}"
            try:
                with fileops.installed(fs):
                    op(root, acked)
            except (DovecoteError, OSError) as e:  # every face says an OSError as ``io_error``
                refused += 1
                reason = getattr(e, "reason", None)
                assert reason is None or reason in REASONS, f"{what}: unregistered keyword {reason}"
            except Exception as e:  # anything else reaches a face as internal_error
                raise AssertionError(f"{what}: {type(e).__name__} {e} escaped (no keyword)") from e
            for ledger, r in ledgers(root):
                assert r.torn is None and not r.defects, f"{what}: {ledger} was left half written"
            fs.heal()
            with commit._registry_lock:  # the next run is a new process (see the module docstring)
                commit._registry.clear()
            check(root, fs, acked)
            ran += 1
    print(f"\nI/O faults: {name}: {points} calls, {ran} faults injected, {refused} refused")
    note_row(name + " (I/O faults)", points, len(chosen(points, depth)), ran, depth)
    return [entry.split()[0] for entry in counter.log]


def _fresh(base: Path, work: Path) -> Path:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(base, work, symlinks=True)
    return work


#: The counts the site's crash-point page (docs/design/crash-points.md) is drawn from
#: (``bench/crash_points.py --full --save``).
SAVED = Path(__file__).resolve().parent.parent / "docs" / "crash_points.json"


def note_row(name: str, points: int, run: int, ran: int, depth: str, *, counted_at_every_depth: bool = True) -> None:
    """Check a sweep's count of crash points against the saved counts the site's table shows (unless it is being
    recounted; ``counted_at_every_depth`` false: a sample counts fewer, so only the full sweep is checked), and
    append the sweep's row to ``$DOVECOTE_CRASH_TABLE`` when it is set (``bench/crash_points.py``)."""
    if not os.environ.get("DOVECOTE_CRASH_RECOUNT") and (counted_at_every_depth or depth == "full"):
        saved = {r["operation"]: r["points"] for r in orjson.loads(SAVED.read_bytes())}
        assert saved.get(name) == points, (
            f"{name}: {points} crash points, docs/crash_points.json says {saved.get(name)}: recount them with"
            " bench/crash_points.py --full --save docs/crash_points.json (the site's next build shows them)")
    table = os.environ.get("DOVECOTE_CRASH_TABLE")
    if table:
        with open(table, "ab") as f:
            f.write(orjson.dumps({"operation": name, "points": points, "run": run, "crashes": ran,
                                  "depth": depth}) + b"\n")


#: Parametrize a sweep with this too: crash points, then I/O faults, over the same operation and checks.
SWEEPS = [pytest.param(sweep, id="crash"), pytest.param(fault_sweep, id="faults")]


def based(tmp: Path, build: Callable[[Path], object]) -> tuple[Path, Path]:
    """A tree made by ``build`` at ``tmp/work`` (a roster names absolute paths, so each sweep's copy goes
    back there), moved to ``tmp/base``; returns (base, work)."""
    base, work = tmp / "base", tmp / "work"
    build(work)
    work.rename(base)
    return base, work


def ledger_ids(root: Path) -> dict[str, list[str]]:
    """Every ledger under ``root`` (``letters.jsonl``, the spool, field labels; not the caches): its ids.

    Asserts each reads cleanly: no line there twice. A torn or garbled tail is a
    reported defect, never a letter, so it does not show here.
    """
    out: dict[str, list[str]] = {}
    for name, r in ledgers(root):
        assert r.duplicates == 0, f"{name} holds a line twice"
        out[name] = [x.id for x in r.letters]
    return out


def ledgers(root: Path) -> Iterator[tuple[str, LedgerReader]]:
    """Every ledger under ``root`` (not the caches), read to its end: its path under ``root``, its reader."""
    for path in sorted(root.rglob("*.jsonl")):
        if not CACHES & set(path.relative_to(root).parts):
            r = LedgerReader(path)
            r.refresh()
            yield path.relative_to(root).as_posix(), r


def all_ids(root: Path) -> set[str]:
    return {i for ids in ledger_ids(root).values() for i in ids}


def acknowledge(root: Path, acked: list[str]) -> None:
    """Note every letter on disk now as acknowledged (call it when a step of the operation returned)."""
    acked.extend(sorted(all_ids(root) - set(acked)))


def kinds_of(root: Path) -> dict[str, str]:
    """Each letter's kind, by id, over every ledger under ``root``."""
    out: dict[str, str] = {}
    for _, r in ledgers(root):
        out.update({x.id: str(x.data().get("kind", "report")) for x in r.letters})
    return out


def converging(
    home: Callable[[Path], Path], retry: Op, verify: Callable[[Path], bool] | None = None,
    may_miss: frozenset[str] = frozenset(),
) -> Check:
    """The check most operations share: the crash left clean ledgers holding every letter acknowledged
    before it and nothing the operation would not write; then ``retry`` (the next operation) succeeds
    and the ledgers hold exactly what a run with no crash left; and ``verify`` passes (caches rebuild).

    ``home`` maps a sweep's copy to the folder whose ledgers are compared. Letters of a kind in
    ``may_miss`` may be missing after the retry (see the caller for why); every other must be there.
    """
    reference: set[str] = set()
    kinds: dict[str, str] = {}

    def check(root: Path, fs: FaultFS | None, acked: list[str]) -> None:
        ids = all_ids(home(root))
        if fs is None:
            reference.update(ids)
            kinds.update(kinds_of(home(root)))
        assert set(acked) <= ids, f"an acknowledged letter was lost {where(fs)}: {set(acked) - ids}"
        assert ids <= reference, f"a letter no run writes {where(fs)}: {ids - reference}"
        if fs is not None:
            retry(root, [])
            again = all_ids(home(root))
            missing = {i for i in reference - again if kinds[i] not in may_miss}
            assert again <= reference and not missing, f"the next run did not converge {where(fs)}: {again ^ reference}"
        assert verify is None or verify(root), f"a cache does not rebuild identical {where(fs)}"

    return check

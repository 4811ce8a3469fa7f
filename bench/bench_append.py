"""Durable append: one letter at a time, and one big batch.

Targets (issue 2):

* a durable single append through the library (a warm handle,
  ``dc.store.append(addr, [line])``: lock, dedup, write, fsync) costs at most
  3x a bare ``open("ab")`` + write + flush + ``os.fsync`` + close of the same
  line on the same disk. The two are interleaved so both see the same disk.
* a batch append of 100,000 letters in one call runs at >= 100,000 letters/s
  (one fsync for the batch; the lines are canonicalized before the clock).

Run: .venv/bin/python bench/bench_append.py [--singles N] [--batch N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import dovecote
from _common import fmt_s, med, settle, timed, verdict
from dovecote.handle.api import Dovecote, init
from dovecote.model.addresses import HOME, Address
from dovecote.model.letters import canonical_line
from dovecote.verbs import ProjectAdd

SINGLE_TARGET = 3.0
BATCH_TARGET = 100_000


def line(n: int, tag: str) -> bytes:
    return canonical_line(
        {
            "ts": "2026-07-05T10:00:00Z",
            "agent": "bench",
            "repo": "repo-a",
            "tool": "seek",
            "class": "friction",
            "what": f"append benchmark letter {tag} #{n}: the result came back empty after ingest",
            "expected": "the symbol that was just ingested",
        }
    )


def bare_append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def singles(dc: Dovecote, bare_path: Path, n: int) -> tuple[list[float], list[float]]:
    """``n`` durable single appends to the home box through the warm handle ``dc``, each followed by a bare
    one of the same line to ``bare_path`` (same directory, so both see the same disk): both lists of seconds."""
    dc.store.append(HOME, [line(-1, "warm")])  # the handle is warm: its reader and the file exist
    bare_append(bare_path, line(-1, "warm") + b"\n")
    lib: list[float] = []
    bare: list[float] = []
    for k in range(n):
        ln = line(k, "single")
        t0 = time.perf_counter()
        dc.store.append(HOME, [ln])
        t1 = time.perf_counter()
        bare_append(bare_path, ln + b"\n")
        t2 = time.perf_counter()
        lib.append(t1 - t0)
        bare.append(t2 - t1)
    return lib, bare


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--singles", type=int, default=300)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="dovecote-bench-append-") as d:
        root = Path(d)
        home, _ = init(root / "home")
        dc = dovecote.open(home)
        for r in range(args.repeat):
            dc.add_project(ProjectAdd(name=f"batch{r}", root=str(root / "repos" / f"batch{r}")))
        lib, bare = singles(dc, root / "bare.jsonl", args.singles)
        lib_m, bare_m = med(lib), med(bare)
        ratio = lib_m / bare_m
        print(f"bench_append: {args.singles} single appends each, interleaved, same directory")
        print(f"  dovecote store.append (lock, dedup, write, fsync)  median {lib_m * 1e6:8.1f} us")
        print(f"  bare open+write+flush+fsync+close                  median {bare_m * 1e6:8.1f} us")
        print(f"  ratio: {ratio:.2f}x (target <= {SINGLE_TARGET}x): {verdict(ratio <= SINGLE_TARGET)}")

        rates: list[float] = []
        times: list[float] = []
        for r in range(args.repeat):
            lines = [line(n, f"batch{r}") for n in range(args.batch)]
            addr = Address("project", f"batch{r}")
            settle()
            t, got = timed(lambda lines=lines, addr=addr: dc.store.append(addr, lines))
            assert sum(fresh for _, fresh in got) == args.batch
            times.append(t)
            rates.append(args.batch / t)
            del lines, got
        rate = med(rates)
        print(f"  batch of {args.batch:,} in one call: median {fmt_s(med(times))}, {rate:,.0f} letters/s")
        print(f"    runs: {', '.join(f'{x:,.0f}/s' for x in rates)}")
        print(f"  target >= {BATCH_TARGET:,} letters/s: {verdict(rate >= BATCH_TARGET)}")


if __name__ == "__main__":
    main()

"""`cases` over a large corpus against `sweep` over the same corpus (issue 10).

Target: `cases` over 1,000,000 letters costs at most 1.5x `sweep` over the same
corpus, measured in the same run. Both are cold: a new handle each time, in
two states of the cache, interleaved round by round:

* no cache at all (``cache/`` deleted before each call): each folds every ledger;
* from their snapshots (``cache/sweep`` and ``cache/cases`` written by the
  previous call): what a second CLI run does, reading only what was appended.

A sweep shows the case overlay (``recurrence``, ``kindless``), so its time
includes the case fold; the case fold alone (``CaseBook.feed`` over letters
already read) is printed too, so the overlay's share of the sweep is visible.
The corpus is ``_common.build``'s (the sweep bench's), with one honesty letter
in 50 given a symptom so that there are cases to find.

Run: .venv/bin/python bench/bench_cases.py [--letters N] [--boxes B] [--repeat R]
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson

import dovecote
from _common import build, fmt_s, med, runs, settle, timed, verdict
from dovecote.derive.cases.book import CaseBook
from dovecote.handle.api import init
from dovecote.model.letters import canonical_line
from dovecote.model.results import builtins
from dovecote.verbs import Sweep

TARGET = 1.5
SYMPTOMS = ("false_absence", "crash", "stale_claim", "wrong_route")


def give_symptoms(paths: list[Path], seed: int = 7) -> int:
    """Rewrite the corpus so one honesty letter in 50 carries a symptom (before any handle reads it)."""
    rng = random.Random(seed)
    n = 0
    for p in paths:
        out = []
        for line in p.read_bytes().splitlines():
            obj = orjson.loads(line)
            if obj.get("class") == "honesty" and rng.random() < 0.02:
                obj["symptom"] = rng.choice(SYMPTOMS)
                n += 1
            out.append(canonical_line(obj))
        p.write_bytes(b"\n".join(out) + b"\n")
    return n


def sweep_once(home: Path) -> tuple[Any, int]:
    res = dovecote.open(home).sweep(Sweep(distribute=False))
    return res, len(res.letter_ids()) + len(res.cases["recurrence"])


def cases_once(home: Path) -> tuple[Any, int]:
    out = builtins(dovecote.open(home).cases())
    return out, out["count"]


def fold_only(home: Path) -> float:
    """The case fold alone over letters already read (the overlay's share of a sweep)."""
    dc = dovecote.open(home)
    sources = [("spool", None), *((a, str(a)) for a in dc.roster.report_boxes())]
    reads = [(label, dc.store.read(w).letters) for w, label in sources]  # type: ignore[arg-type]
    book = CaseBook()
    t, _ = timed(lambda: [book.feed(label, letters) for label, letters in reads])
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--letters", type=int, default=1_000_000)
    ap.add_argument("--boxes", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="dovecote-bench-cases-") as d:
        root = Path(d)
        t_build, (corpus, _) = timed(lambda: build(root, args.letters, args.boxes))
        given = give_symptoms(corpus.paths)
        print(
            f"bench_cases: {corpus.letters:,} letters in {len(corpus.paths)} project boxes "
            f"({corpus.bytes / 1e6:.1f} MB, {given:,} with a symptom), built in {t_build:.1f} s; {args.repeat} rounds"
        )
        warm_home, _ = init(root / "warmup")  # load every lazily imported module outside the clock
        dovecote.open(warm_home).sweep(Sweep(distribute=False)).letter_ids()
        dovecote.open(warm_home).cases()
        cache = corpus.home / "cache"
        t: dict[str, list[float]] = {k: [] for k in ("sweep none", "cases none", "sweep snap", "cases snap", "fold")}
        found = 0
        for _ in range(args.repeat):
            for name, fn in (("sweep", sweep_once), ("cases", cases_once)):
                shutil.rmtree(cache, ignore_errors=True)
                settle()
                took, (res, n) = timed(lambda fn=fn: fn(corpus.home))  # type: ignore[misc]
                t[f"{name} none"].append(took)
                del res
                settle()
                took, (res, n) = timed(lambda fn=fn: fn(corpus.home))  # type: ignore[misc]
                t[f"{name} snap"].append(took)
                found = n if name == "cases" else found
                del res
            settle()
            t["fold"].append(fold_only(corpus.home))
        m = {k: med(v) for k, v in t.items()}
        for k, label in (("sweep none", "cold sweep, no cache"), ("cases none", "cold cases, no cache"),
                         ("sweep snap", "cold sweep, from its snapshots"),
                         ("cases snap", "cold cases, from its snapshot"),
                         ("fold", "the case fold alone (letters read)")):
            print(f"  {label:<38} median {fmt_s(m[k]):>10}   [{runs(t[k])}]")
        r_none, r_snap = m["cases none"] / m["sweep none"], m["cases snap"] / m["sweep snap"]
        print(f"  ratio cases/sweep, no cache:      {r_none:.2f}x (target <= {TARGET}x): {verdict(r_none <= TARGET)}")
        print(f"  ratio cases/sweep, from snapshot: {r_snap:.2f}x (target <= {TARGET}x): {verdict(r_snap <= TARGET)}")
        print(f"  the case fold is {m['fold'] / m['sweep none']:.0%} of a sweep with no cache; {found:,} cases")


if __name__ == "__main__":
    main()

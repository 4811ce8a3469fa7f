"""The live feed behind /api/v1/events: what one poll of every box costs.

A server polls the feed every 250 ms per open event stream, so an idle poll
(nothing new anywhere) must cost about what checking each ledger's size costs,
never a re-read. Measured on the sweep corpus: an idle poll; a poll after
another handle appended one letter to one box; and, once per round, a resume
from a cursor (``watch(cursor)`` + its first poll, from the handle's warm readers).

Reference (same run): ``os.stat`` of every ledger, the least an idle check can do.

Run: .venv/bin/python bench/bench_feed.py [--letters N] [--boxes B] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import dovecote
from _common import MONTH_SECONDS, build, fmt_s, med, runs, settle, timed

POLLS = 200


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--letters", type=int, default=200_000)
    ap.add_argument("--boxes", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="dovecote-bench-feed-") as d:
        corpus, maker = build(Path(d), args.letters, args.boxes)
        print(f"bench_feed: {corpus.letters:,} letters in {len(corpus.paths)} boxes; {args.rounds} rounds")
        dc = dovecote.open(corpus.home)
        writer = dovecote.open(corpus.home)
        watch = dc.watch()
        idle, stat, one, resume = [], [], [], []
        ts = MONTH_SECONDS
        for _ in range(args.rounds):
            settle()
            t, _ = timed(lambda: [dc.poll(watch) for _ in range(POLLS)])
            idle.append(t / POLLS)
            t, _ = timed(lambda: [[os.stat(p) for p in corpus.paths] for _ in range(POLLS)])
            stat.append(t / POLLS)
            lines = maker.batch(corpus.boxes[0], [ts])
            ts += 1
            writer.store.append(corpus.boxes[0], lines)
            t, got = timed(lambda: dc.poll(watch))
            assert len(got) == 1
            one.append(t)
            cursor = watch.cursor
            t, again = timed(lambda c=cursor: dc.poll(dc.watch(c)))
            assert again == []
            resume.append(t)
        ratio = med(idle) / med(stat)
        print(f"  idle poll of {len(corpus.paths) + 2} ledgers   median {fmt_s(med(idle)):>9}   [{runs(idle)}]")
        print(f"  os.stat of every ledger     median {fmt_s(med(stat)):>9}   [{runs(stat)}]   ratio {ratio:.1f}x")
        print(f"  poll after +1 letter        median {fmt_s(med(one)):>9}   [{runs(one)}]")
        print(f"  resume from a cursor        median {fmt_s(med(resume)):>9}   [{runs(resume)}]")


if __name__ == "__main__":
    main()

"""Warm re-sweep: after a full sweep, 1,000 new letters arrive; sweep again.

Target (issue 2): the re-sweep through the same handle (counts and the open
letters, oldest first) takes at most 100 ms. The new letters are written by a
second handle, as another agent's process would, so the swept handle has to
find and read them itself; some are receipts closing older letters and some
pick letters up, so fates move, not only totals.

Run: .venv/bin/python bench/bench_resweep.py [--letters N] [--boxes B] [--rounds R]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import dovecote
from _common import MONTH_SECONDS, build, fmt_s, med, runs, settle, timed, verdict
from dovecote.verbs import Sweep

TARGET_S = 0.100
PER_ROUND = 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--letters", type=int, default=1_000_000)
    ap.add_argument("--boxes", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="dovecote-bench-resweep-") as d:
        root = Path(d)
        t_build, (corpus, maker) = timed(lambda: build(root, args.letters, args.boxes))
        print(
            f"bench_resweep: {corpus.letters:,} letters in {len(corpus.paths)} project boxes "
            f"({corpus.bytes / 1e6:.1f} MB), built in {t_build:.1f} s; {args.rounds} rounds of {PER_ROUND:,}"
        )
        dc = dovecote.open(corpus.home)
        t_full, first = timed(lambda: dc.sweep(Sweep(distribute=False)))
        first.letter_ids()
        print(f"  full sweep on the handle: {fmt_s(t_full)} (total {first.total:,}, open {first.open:,})")
        writer = dovecote.open(corpus.home)  # another agent's handle
        for addr in corpus.boxes:  # its readers load once, outside the clock
            writer.store.read(addr)

        times: list[float] = []
        totals: list[int] = []
        opens: list[int] = []
        ts = MONTH_SECONDS
        for _ in range(args.rounds):
            for k, addr in enumerate(corpus.boxes):
                n = PER_ROUND // len(corpus.boxes) + (1 if k < PER_ROUND % len(corpus.boxes) else 0)
                lines = maker.batch(addr, [ts + i for i in range(n)])
                got = writer.store.append(addr, lines)
                assert all(fresh for _, fresh in got)
                ts += n
            settle()

            def resweep() -> tuple[dict[str, int], int, list[str], int]:
                res = dc.sweep(Sweep(distribute=False))
                return res.counts, res.open, res.letter_ids(), res.total

            t, (counts, open_, ids, total) = timed(resweep)
            times.append(t)
            totals.append(total)
            opens.append(open_)

        m = med(times)
        print(f"  warm re-sweep after +{PER_ROUND:,} letters  median {fmt_s(m):>9}   [{runs(times)}]")
        print(f"  target <= {TARGET_S * 1000:.0f} ms: {verdict(m <= TARGET_S)}")
        print(f"  totals per round: {', '.join(f'{t:,}' for t in totals)}; open: {', '.join(f'{o:,}' for o in opens)}")

        cold = dovecote.open(corpus.home).sweep(Sweep(distribute=False))
        same = (cold.counts, cold.open, cold.letter_ids(), cold.total) == (counts, open_, ids, total)
        print(f"  last warm answer equals a cold sweep of the same files: {same}")


if __name__ == "__main__":
    main()

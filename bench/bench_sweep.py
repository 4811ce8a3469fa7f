"""Full cold sweep of a large corpus against a bare orjson parse of the same bytes.

Target (issue 2): a full sweep of 1,000,000 letters across 20 boxes costs at
most 2.5x a bare orjson parse of the same bytes, measured in the same run.
Two bare parses are reported, because they bound the honest comparison from
both sides: one throws every object away (the cheapest possible read), one
keeps them (what any reader that answers questions afterwards must do).

Run: .venv/bin/python bench/bench_sweep.py [--letters N] [--boxes B] [--repeat R]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import orjson

import dovecote
from _common import build, fmt_s, med, runs, settle, timed, verdict
from dovecote.handle.api import init
from dovecote.verbs import Sweep

TARGET = 2.5


def dovecote_sweep(home: Path) -> tuple[Any, tuple[dict[str, int], int, list[str], int]]:
    """What `dovecote sweep --no-distribute` computes, from a cold handle.

    The result (and the handle's letters with it) is returned so that, like the
    parse that keeps its objects, it is freed outside the clock.
    """
    res = dovecote.open(home).sweep(Sweep(distribute=False))
    return res, (res.counts, res.open, res.letter_ids(), res.total)


def bare_discard(paths: list[Path]) -> int:
    n = 0
    for p in paths:
        data = p.read_bytes()
        for line in data.split(b"\n"):
            if line:
                orjson.loads(line)
                n += 1
    return n


def bare_keep(paths: list[Path]) -> list[Any]:
    out: list[Any] = []
    for p in paths:
        lines = p.read_bytes().split(b"\n")
        out += [orjson.loads(ln) for ln in lines if ln]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--letters", type=int, default=1_000_000)
    ap.add_argument("--boxes", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="dovecote-bench-sweep-") as d:
        root = Path(d)
        t_build, (corpus, _) = timed(lambda: build(root, args.letters, args.boxes))
        print(
            f"bench_sweep: {corpus.letters:,} letters in {len(corpus.paths)} project boxes "
            f"({corpus.bytes / 1e6:.1f} MB), built in {t_build:.1f} s; {args.repeat} rounds"
        )
        warm_home, _ = init(root / "warmup")  # load every lazily imported module outside the clock
        dovecote.open(warm_home).sweep(Sweep(distribute=False)).letter_ids()

        t_dc: list[float] = []
        t_discard: list[float] = []
        t_keep: list[float] = []
        summary: tuple[dict[str, int], int, list[str], int] | None = None
        for _ in range(args.repeat):
            t, (res, summary) = timed(lambda: dovecote_sweep(corpus.home))
            t_dc.append(t)
            del res
            settle()
            t, n = timed(lambda: bare_discard(corpus.paths))
            t_discard.append(t)
            assert n == corpus.letters
            settle()
            t, kept = timed(lambda: bare_keep(corpus.paths))
            t_keep.append(t)
            del kept
            settle()

        assert summary is not None
        counts, open_, ids, total = summary
        dc_m, dis_m, keep_m = med(t_dc), med(t_discard), med(t_keep)
        r_dis, r_keep = dc_m / dis_m, dc_m / keep_m
        print(f"  dovecote cold sweep (counts, open, open ids)  median {fmt_s(dc_m):>10}   [{runs(t_dc)}]")
        print(f"  bare orjson parse, discarding objects         median {fmt_s(dis_m):>10}   [{runs(t_discard)}]")
        print(f"  bare orjson parse, keeping objects            median {fmt_s(keep_m):>10}   [{runs(t_keep)}]")
        print(f"  ratio vs discarding parse: {r_dis:.2f}x (target <= {TARGET}x): {verdict(r_dis <= TARGET)}")
        print(f"  ratio vs keeping parse:    {r_keep:.2f}x (target <= {TARGET}x): {verdict(r_keep <= TARGET)}")
        print(f"  sweep answer: total={total:,} open={open_:,} open ids listed={len(ids):,} counts={counts}")


if __name__ == "__main__":
    main()

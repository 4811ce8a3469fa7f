"""Cold CLI sweep: ``dovecote sweep --json --no-distribute > /dev/null`` as a new process.

Targets (issue 7 §5), each against a reference measured in the same run, every
side a new process (users run the CLI that way):

* no cache (``cache/`` deleted before each run): at most 2.5x a new process
  that parses the same files with orjson and keeps the objects;
* after +1,000 letters with the fold snapshots present: at most 1x that parse
  (the snapshot path never re-parses what it folded);
* cost and peak memory per letter from 100k to 1M letters (``--scale``):
  linear, at most 1.5 KiB/letter peak (max RSS of the process).

Run: .venv/bin/python bench/bench_cli_sweep.py [--letters N] [--boxes B] [--repeat R] [--scale]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import MONTH_SECONDS, Corpus, Maker, build, fmt_s, med, runs, verdict

TARGET_COLD, TARGET_SNAP, TARGET_KIB = 2.5, 1.0, 1.5
PER_ROUND = 1000

PARSE = """
import sys, orjson
out = []
for p in sys.argv[1:]:
    with open(p, "rb") as f:
        lines = f.read().split(b"\\n")
    out += [orjson.loads(ln) for ln in lines if ln]
"""


def run(cmd: list[str]) -> tuple[float, float, float]:
    """Wall time, peak RSS (KiB on Linux) and CPU time (user + system; both from wait4) of one new process;
    stdout to /dev/null."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    t = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, cmd
    return t, float(usage.ru_maxrss), usage.ru_utime + usage.ru_stime


def sweep_cmd(home: Path) -> list[str]:
    script = Path(sys.executable).parent / "dovecote"
    return [sys.executable, str(script), "--home", str(home), "sweep", "--json", "--no-distribute"]


def grow(corpus: Corpus, maker: Maker, ts: int) -> int:
    """Append ``PER_ROUND`` letters spread over the boxes (as another agent would)."""
    boxes = corpus.boxes
    for k, (addr, path) in enumerate(zip(boxes, corpus.paths, strict=True)):
        n = PER_ROUND // len(boxes) + (1 if k < PER_ROUND % len(boxes) else 0)
        with open(path, "ab") as f:
            f.write(b"\n".join(maker.batch(addr, [ts + i for i in range(n)])) + b"\n")
        ts += n
    return ts


def measure(letters: int, boxes: int, repeat: int, root: Path) -> dict[str, float]:
    t_build = time.perf_counter()
    corpus, maker = build(root, letters, boxes)
    t_build = time.perf_counter() - t_build
    print(
        f"  {corpus.letters:,} letters in {len(corpus.paths)} boxes ({corpus.bytes / 1e6:.1f} MB), "
        f"built in {t_build:.1f} s; {repeat} rounds"
    )
    cache = corpus.home / "cache"
    cmd = sweep_cmd(corpus.home)
    parse = [sys.executable, "-c", PARSE, *map(str, corpus.paths)]
    run(cmd)  # warm the page cache and the interpreter's files
    cold: list[float] = []
    snap: list[float] = []
    ref: list[float] = []
    rss: list[float] = []
    cpu: dict[str, list[float]] = {"cold": [], "snap": [], "ref": []}  # a shared machine moves these far less
    ts = MONTH_SECONDS
    for _ in range(repeat):
        shutil.rmtree(cache, ignore_errors=True)
        t, m, c = run(cmd)
        cold.append(t)
        rss.append(m)
        cpu["cold"].append(c)
        t, _, c = run(parse)
        ref.append(t)
        cpu["ref"].append(c)
        ts = grow(corpus, maker, ts)  # +1,000 letters; the snapshots written by the cold run stay
        t, _, c = run(cmd)
        snap.append(t)
        cpu["snap"].append(c)
    c, s, r = med(cold), med(snap), med(ref)
    print(f"    cold CLI sweep, no cache              median {fmt_s(c):>10}   [{runs(cold)}]")
    print(f"    cold CLI sweep, snapshots, +{PER_ROUND:,}     median {fmt_s(s):>10}   [{runs(snap)}]")
    print(f"    new process: orjson parse, keeping    median {fmt_s(r):>10}   [{runs(ref)}]")
    cc, cs, cr = med(cpu["cold"]), med(cpu["snap"]), med(cpu["ref"])
    print(f"    CPU time (medians): no cache {fmt_s(cc)}, snapshots {fmt_s(cs)}, the parse {fmt_s(cr)}: "
          f"{cc / cr:.2f}x and {cs / cr:.2f}x")
    kib = med(rss) / letters
    print(f"    peak RSS of the cold sweep: {med(rss) / 1024:.0f} MiB ({kib:.2f} KiB/letter)")
    return {"cold": c, "snap": s, "ref": r, "kib": kib, "us": c / letters * 1e6, "cold_cpu": cc, "snap_cpu": cs,
            "ref_cpu": cr}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--letters", type=int, default=500_000)
    ap.add_argument("--boxes", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--scale", action="store_true", help="also 100k and 1M letters: cost and memory per letter")
    args = ap.parse_args()
    sizes = [100_000, args.letters, 1_000_000] if args.scale else [args.letters]
    print("bench_cli_sweep: `dovecote sweep --json --no-distribute > /dev/null`, each run a new process")
    out: dict[int, dict[str, float]] = {}
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="dovecote-bench-cli-sweep-") as d:
            out[n] = measure(n, args.boxes, args.repeat, Path(d))
        m = out[n]
        rc, rs = m["cold"] / m["ref"], m["snap"] / m["ref"]
        print(f"    no cache:   {rc:.2f}x the parse (target <= {TARGET_COLD}x): {verdict(rc <= TARGET_COLD)}")
        print(f"    snapshots:  {rs:.2f}x the parse (target <= {TARGET_SNAP}x): {verdict(rs <= TARGET_SNAP)}")
        kib = m["kib"]
        print(f"    memory:     {kib:.2f} KiB/letter (target <= {TARGET_KIB}): {verdict(kib <= TARGET_KIB)}")
    if args.scale:
        per = (f"{n:,}: {m['us']:.1f} us/letter, {m['kib']:.2f} KiB/letter" for n, m in out.items())
        print("  scaling: " + "; ".join(per))


if __name__ == "__main__":
    main()

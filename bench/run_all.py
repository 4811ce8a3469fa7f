"""Run every benchmark in turn (``make bench``).

Every ``bench_*.py`` next to this file runs, each in its own interpreter so
one's heap does not bill the next; the four of issue 2 run first. ``--quick`` shrinks the corpora for a smoke run; its
numbers are not the ones the targets are stated for.

Run: .venv/bin/python bench/run_all.py [--quick]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUICK: dict[str, list[str]] = {  # the known ones, in this order; --quick passes these
    "bench_version.py": ["--runs", "10"],
    "bench_append.py": ["--singles", "50", "--batch", "20000"],
    "bench_sweep.py": ["--letters", "50000"],
    "bench_resweep.py": ["--letters", "50000"],
    "bench_cli_sweep.py": ["--letters", "50000", "--repeat", "2"],
    "bench_mcp.py": ["--clients", "5", "--sends", "20", "--rounds", "2"],
    "bench_delivery.py": ["--envelopes", "2000", "--history", "4000", "--repeat", "2", "--trips", "100"],
    "bench_rest.py": ["--clients", "5", "--sends", "20", "--rounds", "2"],
    "bench_send.py": ["--clients", "5", "--sends", "20", "--rounds", "2"],
}


def benches() -> list[str]:
    found = sorted(p.name for p in HERE.glob("bench_*.py"))
    return [n for n in QUICK if n in found] + [n for n in found if n not in QUICK]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small corpora: a smoke run, not a measurement")
    args = ap.parse_args()
    failed = []
    for name in benches():
        cmd = [sys.executable, str(HERE / name), *(QUICK.get(name, []) if args.quick else [])]
        print(f"== {name} {' '.join(cmd[2:])}".rstrip(), flush=True)
        t0 = time.perf_counter()
        rc = subprocess.run(cmd).returncode
        print(f"   ({time.perf_counter() - t0:.1f} s, exit {rc})\n", flush=True)
        if rc:
            failed.append(name)
    if failed:
        print(f"benchmarks that did not run to the end: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""How many crash points each swept operation has, and that every one was run: the table for the site.

Not a timing: it runs the crash-point and I/O-fault sweeps (``tests/crash/test_crash_*.py``)
through pytest with ``DOVECOTE_CRASH_TABLE`` set, so each sweep appends its row
(operation, crash points, points run, crashes or faults run), and prints the rows
as a Markdown table. ``--full`` runs every point (the ``make stress`` twins);
without it, the sample ``make test`` runs.

    .venv/bin/python bench/crash_points.py --full -n 2 --save docs/crash_points.json

``--save`` (with ``--full``, after a green run) keeps the rows in the file the
site's crash-point page is drawn from when it is built (``docs/design/crash-points.md``); every sweep, sample or
full, fails when its operation's count of crash points is not the one saved, so
the site cannot go on naming a count the code no longer has.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="every crash point (make stress), not the sample")
    ap.add_argument("-n", default="1", help="pytest-xdist workers (at most 2 on a shared machine)")
    ap.add_argument("--save", type=Path, metavar="JSON", help="with --full: keep the rows of a green run here")
    args = ap.parse_args()
    if args.save and not args.full:
        ap.error("--save keeps the rows of a full run: add --full")
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "rows.jsonl"
        tests = sorted(str(p) for p in (ROOT / "tests").glob("test_crash_*.py"))
        marks = "stress" if args.full else "not stress"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-n", args.n, "-m", marks, *tests]
        env = {**os.environ, "DOVECOTE_CRASH_TABLE": str(table)}
        if args.save:  # the counts are being measured afresh: none is checked against the old file
            env["DOVECOTE_CRASH_RECOUNT"] = "1"
        rc = subprocess.run(cmd, cwd=ROOT, env=env).returncode
        rows = [orjson.loads(x) for x in table.read_bytes().splitlines()] if table.exists() else []
    crashes = {r["operation"]: r for r in rows if not r["operation"].endswith(" (I/O faults)")}
    faults = {r["operation"].removesuffix(" (I/O faults)"): r for r in rows if r["operation"].endswith(" (I/O faults)")}
    print("\n| operation | crash points | points run | crashes run (4 power-cut modes) | I/O faults run |")
    print("|---|---|---|---|---|")
    for name in sorted(crashes):
        c, f = crashes[name], faults.get(name)
        print(f"| {name} | {c['points']} | {c['run']} | {c['crashes']} | {f['crashes'] if f else '-'} |")
    total = sum(c["crashes"] for c in crashes.values()), sum(f["crashes"] for f in faults.values())
    print(f"\n{len(crashes)} operations, {total[0]} crashes and {total[1]} I/O faults run"
          f" ({'every point' if args.full else 'the make test sample'}); pytest exit {rc}")
    if args.save and rc == 0:
        keep = sorted(({k: r[k] for k in ("operation", "points", "run", "crashes")} for r in rows),
                      key=lambda r: r["operation"])
        args.save.write_bytes(orjson.dumps(keep, option=orjson.OPT_INDENT_2) + b"\n")
        print(f"kept {len(keep)} rows in {args.save}: the site's crash-point page is drawn from it at its next build")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())

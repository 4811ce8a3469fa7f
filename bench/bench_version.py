"""Start-up cost: ``dovecote --version`` against ``python -c pass``.

Target (issue 7; issue 2 asked 4x): at most 2x ``-c pass`` of the same interpreter. Agents call
the CLI in hooks and loops, so start-up is paid on every call; only lazy
imports keep it low. A version-manager shim (pyenv, asdf) would add its own
start-up to both sides and flatter the ratio, so the interpreter is resolved
to its real binary and checked to be one; the console script is run by that
interpreter through the virtualenv's own link, which is what its shebang does.

Run: .venv/bin/python bench/bench_version.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import med, verdict

TARGET = 2.0


def is_binary(path: str) -> bool:
    """A real interpreter is an ELF or Mach-O file; a shim is a shell script."""
    with open(path, "rb") as f:
        head = f.read(4)
    return head == b"\x7fELF" or head in (b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


def run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()

    venv_python = sys.executable  # the venv's link: site-packages are found next to it
    real = os.path.realpath(venv_python)
    script = Path(venv_python).parent / "dovecote"
    if not is_binary(real):
        print(f"bench_version: {real} is not a binary interpreter (a shim?); the ratio would be wrong")
        sys.exit(1)
    if not script.exists():
        print(f"bench_version: no console script at {script}; run `make test` or pip install -e .")
        sys.exit(1)
    version = subprocess.run([venv_python, str(script), "--version"], capture_output=True, text=True, check=True)

    # Interleaved, after one warm-up each, so the page cache treats both alike.
    commands = {
        "dovecote --version": [venv_python, str(script), "--version"],
        "python -c pass": [venv_python, "-c", "pass"],
        "python -c pass (real binary, no venv)": [real, "-c", "pass"],
    }
    times: dict[str, list[float]] = {k: [] for k in commands}
    for cmd in commands.values():
        run(cmd)
    for _ in range(args.runs):
        for name, cmd in commands.items():
            times[name].append(run(cmd))

    dv, base = med(times["dovecote --version"]), med(times["python -c pass"])
    ratio = dv / base
    print(f"bench_version: {args.runs} runs each; interpreter {venv_python} -> {real} (binary)")
    print(f"  printed: {version.stdout.strip()}")
    for name, xs in times.items():
        print(f"  {name:<40} median {med(xs) * 1000:7.2f} ms   (min {min(xs) * 1000:.2f}, max {max(xs) * 1000:.2f})")
    print(f"  ratio dovecote --version / -c pass: {ratio:.2f}x (target <= {TARGET}x): {verdict(ratio <= TARGET)}")


if __name__ == "__main__":
    main()

"""Absence sentinels (R11 organ 3): run the probe of every fixed receipt.

Law (CASE-INV-4): only a ``fixed`` receipt carries a sentinel; a red one adds a
witness to the existing case. A probe is a command run without a shell
(``shlex.split``), in the case's project root, with stdin closed, a timeout,
and a fixed environment (``PROBE_ENV``: a plain PATH, ``DOVECOTE_READ_ONLY=1``); it writes nothing to dovecote
through this code. Green means: ``exit0``, it exited 0; ``absent``, it printed
nothing and exited 0 (or 1, as grep does when nothing matched).

A red probe mints one regression letter (class bug, the case's symptom) into
the case's box, once per red streak: the streak's number is in the letter, and
the box lock's check (a letter of that streak is there already) keeps two
runners at once from writing two. A
green probe after a red streak mints the marker that ends it, so the next red
starts streak n+1. Nothing is written while the state stays as it was.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from dovecote.model.addresses import HOME, parse_address
from dovecote.model.letters import format_ts
from dovecote.model.results import Result
from dovecote.ops.cases import engine
from dovecote.ops.warm import cases as casebook

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Where

GREEN, RED, UNREACHABLE = "green", "red", "unreachable"
#: A probe's whole environment: fixed, so its verdict never depends on who ran ``sentinels``.
PROBE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "DOVECOTE_READ_ONLY": "1"}


def probe(command: str, cwd: Path, expect: str, timeout: float) -> tuple[str, str]:
    """(green or red, one line saying why) for one probe run."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        return RED, f"the probe does not parse: {e}"
    if not argv:
        return RED, "the probe is empty"
    try:
        done = subprocess.run(
            argv, cwd=cwd, env=PROBE_ENV, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return RED, f"timed out after {timeout:g}s"
    except OSError as e:
        return RED, f"cannot run: {e.strerror or e}"
    out = done.stdout.strip()
    if expect == "exit0":
        return (GREEN, "exit 0") if done.returncode == 0 else (RED, f"exit {done.returncode}")
    if done.returncode in (0, 1) and not out:
        return GREEN, f"exit {done.returncode}, no output"
    return RED, f"exit {done.returncode}, {len(out)} bytes of output"


def root_of(ctx: Context, where: Where) -> Path | None:
    """Where a case's probe runs: its project's root, the owner's root for home; None if not here."""
    text = None
    if where == HOME or where == "spool":
        text = ctx.roster.owner_roots[0] if ctx.roster.owner_roots else str(ctx.layout.root)
    elif not isinstance(where, str) and where.kind == "project":
        p = ctx.roster.project(where.name)
        text = p.root if p else None
    path = Path(text) if text else None
    return path if path is not None and path.is_dir() else None


class SentinelRun(Result, frozen=True):
    """One fixed receipt's probe run: green, red or unreachable (and why), and the letter it minted, if any."""

    fingerprint: str
    receipt: str
    probe: str | None
    expect: str
    state: str
    why: str | None
    box: str
    minted: str | None


class Sentinels(Result, frozen=True):
    """Every guarded case's probe run: how many are green, red, unreachable; the letters minted; one line."""

    guarded: int
    green: int
    red: int
    unreachable: int
    minted: list[str]
    sentinels: list[SentinelRun]
    line: str


def sentinels(ctx: Context, timeout: float = 30.0) -> Sentinels:
    """Run every sentinel; counts ``guarded`` (sentinels), ``green``, ``red``, ``unreachable``."""
    book = casebook.load(ctx).book
    now = format_ts(ctx.now())
    groups = book.by_fingerprint()
    rows: list[SentinelRun] = []
    minted: list[str] = []
    for fp, r in sorted(book.latest_receipts().items()):
        if r.disposition != "fixed" or r.probe is None:
            continue
        where: Where = engine.case_box(ctx, groups.get(fp, [])) or (parse_address(r.box) if r.box else HOME)
        root = root_of(ctx, where)
        expect = r.expect or "absent"
        if root is None:
            state, why = UNREACHABLE, f"the root of {where} is not on this machine"
        else:
            state, why = probe(r.probe, root, expect, timeout)
        number, red = book.streak(fp)
        wrote = None
        if state == RED and not red:
            wrote = engine.mint(ctx, where, engine.regression(fp, r.id, r.probe, number + 1, now),
                                engine.same("regression", fingerprint=fp, sentinel_streak=number + 1))
        elif state == GREEN and red:
            wrote = engine.mint(ctx, where, engine.green(fp, r.id, number, now),
                                engine.same("green", fingerprint=fp, sentinel_streak=number))
        if wrote is not None and wrote[1]:
            minted.append(wrote[0])
        rows.append(SentinelRun(fp, r.id, r.probe, expect, state, why, str(where), wrote[0] if wrote else None))
    counts = {s: sum(1 for x in rows if x.state == s) for s in (GREEN, RED, UNREACHABLE)}
    line = (f"sentinels: {len(rows)} guarded · {counts[GREEN]} green · {counts[RED]} red"
            + (f" · {counts[UNREACHABLE]} unreachable" if counts[UNREACHABLE] else ""))
    return Sentinels(len(rows), counts[GREEN], counts[RED], counts[UNREACHABLE], minted, rows, line)

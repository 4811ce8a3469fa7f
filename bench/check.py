"""Guard the headline ratios of ``bench/`` (``make bench-check``): each against its threshold, in one run.

Every check is measured by the bench script that owns it (``_check_groups.py`` calls their functions: one
implementation of each measurement), with its reference measured beside it in the same run and every cold
path a new process. The goals live in ``thresholds.toml``, once; the rule is here, once:

* a measurement within its goal is ``met``; past the goal by at most the tolerance (25%) it is
  ``tolerated``; further than that it is ``past``;
* a ``past`` measurement is measured again at once, and the check fails only if the second is ``past`` too:
  the machine is shared and noisy, so one slow moment must not block a landing, while a real regression is
  past both times;
* an ``exact`` goal (0 lost) has no tolerance and no second chance: one lost letter fails.

Each group of checks runs in a process of its own (one group's heap and threads do not bill the next), and
the whole run prints one table: check, reference, dovecote, ratio, threshold, verdict. Exit 1 when a check
fails or could not be measured.

Run: .venv/bin/python bench/check.py [--only GROUP ...]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
THRESHOLDS = HERE / "thresholds.toml"

MET, TOLERATED, PAST = "met", "tolerated", "past"
#: Seconds one group's measurement may take: its slowest took 106 s at load 9 on this 2-core machine.
MEASURE_TIMEOUT = 600
DIRECTIONS = ("at_most", "at_least", "exact")

#: Which measurement yields which checks, in the order they run (the cheap ones first, the long sweep last).
GROUPS: dict[str, tuple[str, ...]] = {
    "append": ("durable_append",),
    "inbox": ("warm_inbox", "cold_injection"),
    "gcmail": ("gc_ensure_running", "gc_send", "gc_inbox", "gc_count", "gc_read"),
    "rest": ("rest_sends", "rest_lost"),
    "mcp": ("mcp_sends", "mcp_lost"),
    "agentmail": ("agentmail_sends", "agentmail_p95", "agentmail_lost"),
    "sweep": ("cold_sweep", "snapshot_sweep"),
}


@dataclass(frozen=True)
class Threshold:
    """One check's goal, as ``thresholds.toml`` writes it."""

    name: str
    what: str
    on: str  # "ratio" (dovecote / reference) or "dovecote" (dovecote's own figure)
    direction: str  # one of DIRECTIONS
    goal: float
    unit: str  # of the reference and dovecote figures: "s", "ms", "us", "/s", "count"


@dataclass(frozen=True)
class Measured:
    """One measurement of one check: the reference's figure (None where there is none) and dovecote's."""

    reference: float | None
    dovecote: float


@dataclass
class Outcome:
    """A check's measurements (one, or two when the first was past), their states, and an error when the
    measurement itself broke."""

    threshold: Threshold
    measured: list[Measured] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None or failed(self.threshold, self.states)


def load(path: Path = THRESHOLDS) -> tuple[float, list[Threshold]]:
    """The tolerance and every threshold of ``path``."""
    doc = tomllib.loads(path.read_text())
    tolerance = float(doc.pop("tolerance"))
    out = []
    for name, t in doc.items():
        if t["direction"] not in DIRECTIONS or t["on"] not in ("ratio", "dovecote"):
            raise ValueError(f"{path.name}: [{name}] has direction {t['direction']!r}, on {t['on']!r}")
        out.append(Threshold(name, t["what"], t["on"], t["direction"], float(t["goal"]), t["unit"]))
    return tolerance, out


def value(t: Threshold, m: Measured) -> float:
    """The figure the goal is compared with: the ratio to the reference, or dovecote's own."""
    if t.on == "ratio":
        assert m.reference is not None, t.name
        return m.dovecote / m.reference
    return m.dovecote


def limit(t: Threshold, tolerance: float) -> float:
    """Past this a measurement is ``past``: the goal moved by the tolerance in the direction that is worse."""
    if t.direction == "at_most":
        return t.goal * (1 + tolerance)
    if t.direction == "at_least":
        return t.goal * (1 - tolerance)
    return t.goal


def state(t: Threshold, x: float, tolerance: float) -> str:
    """``met``, ``tolerated`` (past the goal by at most the tolerance) or ``past``."""
    if t.direction == "exact":
        return MET if x == t.goal else PAST
    sign = 1 if t.direction == "at_most" else -1  # how "worse" points: up for at_most, down for at_least
    if sign * x <= sign * t.goal:
        return MET
    return TOLERATED if sign * x <= sign * limit(t, tolerance) else PAST


def again(t: Threshold, states: list[str]) -> bool:
    """Whether to measure once more: the first measurement was past, and the goal has a tolerance."""
    return t.direction != "exact" and states == [PAST]


def failed(t: Threshold, states: list[str]) -> bool:
    """Two measurements in a row past the goal, or (an exact goal) any."""
    if t.direction == "exact":
        return PAST in states
    return states[-2:] == [PAST, PAST]


Measure = Callable[[str], dict[str, Measured]]


def run_checks(thresholds: Iterable[Threshold], tolerance: float, measure: Measure,
               groups: dict[str, tuple[str, ...]] = GROUPS) -> list[Outcome]:
    """Measure each group of checks, then again each group that has a check ``past`` once (only those
    checks take the second measurement); an exception from ``measure`` is that group's error."""
    outcomes = {t.name: Outcome(t) for t in thresholds}
    for group, names in groups.items():
        todo = [n for n in names if n in outcomes]
        while todo:
            try:
                got = measure(group)
            except Exception as e:  # a broken measurement fails its checks; the other groups still run
                for n in todo:
                    outcomes[n].error = f"{type(e).__name__}: {e}"
                break
            for n in todo:
                o = outcomes[n]
                o.measured.append(got[n])
                o.states.append(state(o.threshold, value(o.threshold, got[n]), tolerance))
            todo = [n for n in todo if again(outcomes[n].threshold, outcomes[n].states)]
    return list(outcomes.values())


def shown(x: float | None, unit: str) -> str:
    if x is None:
        return "-"
    if unit == "s":
        return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"
    if unit == "/s":
        return f"{x:,.0f}/s"
    if unit == "count":
        return f"{x:,.0f}"
    return f"{x:,.{1 if x < 100 else 0}f} {'µs' if unit == 'us' else unit}"


def goal_shown(t: Threshold, tolerance: float) -> str:
    """The goal and where a measurement turns ``past``, in the figure the goal is compared with."""
    def fig(x: float) -> str:
        return f"{x:.3g}x" if t.on == "ratio" else shown(x, t.unit)
    if t.direction == "exact":
        return f"= {fig(t.goal)}"
    sign, worse = ("<=", ">") if t.direction == "at_most" else (">=", "<")
    return f"{sign} {fig(t.goal)} (past {worse} {fig(limit(t, tolerance))})"


def table(outcomes: list[Outcome], tolerance: float) -> list[str]:
    """One row a measurement; the last of a check carries its verdict."""
    head = ("check", "reference", "dovecote", "ratio", "threshold", "verdict")
    rows = [head]
    for o in outcomes:
        t = o.threshold
        for i, (m, st) in enumerate(zip(o.measured, o.states, strict=True)):
            ratio = "-" if m.reference in (None, 0) or t.unit == "count" else f"{m.dovecote / m.reference:.2f}x"
            last = i == len(o.measured) - 1 and o.error is None
            verdict = ("FAIL" if o.failed else f"pass ({st})") if last else f"{st}: measured again"
            rows.append((t.name if i == 0 else "  again", shown(m.reference, t.unit), shown(m.dovecote, t.unit),
                         ratio, goal_shown(t, tolerance), verdict))
        if o.error is not None:
            rows.append((t.name if not o.measured else "  again", "-", "-", "-", goal_shown(t, tolerance),
                         f"FAIL: not measured ({o.error})"))
    widths = [max(len(r[c]) for r in rows) for c in range(len(head))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def measure_in_child(group: str) -> dict[str, Measured]:
    """Run one group's measurement in a new interpreter (its output goes straight to ours) and read back its
    figures. Bytecode caching is on in it and its children, as an installed ``dovecote`` runs; its output is
    unbuffered (``-u``: that process only, not the ones it measures), so a log shows each step as it happens."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="dovecote-check-") as d:
        out = Path(d) / "figures.json"
        t0 = time.perf_counter()
        print(f"== {group}", flush=True)
        # a session of its own, so a measurement that hangs (a server that stops answering) is ended with
        # every process it started, and the run goes on to fail its checks instead of waiting for CI's limit
        child = subprocess.Popen([sys.executable, "-u", __file__, "--measure", group, "--out", str(out)], env=env,
                                 start_new_session=True)
        try:
            rc = child.wait(timeout=MEASURE_TIMEOUT)
        except BaseException as e:  # the timeout, or Ctrl-C: the child's session is not the terminal's
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            if isinstance(e, subprocess.TimeoutExpired):
                raise RuntimeError(f"the {group} measurement took more than {MEASURE_TIMEOUT} s") from None
            raise
        print(f"   ({time.perf_counter() - t0:.0f} s)", flush=True)
        if rc != 0:
            raise RuntimeError(f"the {group} measurement exited {rc}")
        got = json.loads(out.read_text())
    return {name: Measured(ref, dc) for name, (ref, dc) in got.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=list(GROUPS), help="measure only these groups")
    ap.add_argument("--measure", choices=list(GROUPS), help=argparse.SUPPRESS)  # a child: one group
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    tolerance, thresholds = load()
    if args.measure:
        from _check_groups import MEASURES

        figures = MEASURES[args.measure]({t.name: t.goal for t in thresholds})
        args.out.write_text(json.dumps({n: [m.reference, m.dovecote] for n, m in figures.items()}))
        return 0
    groups = {g: names for g, names in GROUPS.items() if not args.only or g in args.only}
    t0 = time.perf_counter()
    outcomes = run_checks(thresholds, tolerance, measure_in_child, groups)
    outcomes = [o for o in outcomes if o.measured or o.error]
    print(f"\nbench-check ({time.perf_counter() - t0:.0f} s; load average {os.getloadavg()[0]:.1f}); "
          f"a check fails when two measurements in a row are more than {tolerance:.0%} past its goal")
    print("\n".join(table(outcomes, tolerance)))
    width = max((len(o.threshold.name) for o in outcomes), default=0)
    print("\n".join(f"  {o.threshold.name.ljust(width)}  {o.threshold.what}" for o in outcomes))
    bad = [o.threshold.name for o in outcomes if o.failed]
    print(f"FAILED: {', '.join(bad)}" if bad else f"all {len(outcomes)} checks pass")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""``make bench-check``'s rule (``bench/check.py``), on made-up measurements: nothing here is timed.

What a landing relies on: a goal is compared in its own direction (a ratio or a time must not rise above
it, a rate must not fall below it); a measurement up to 25% past its goal is tolerated; one further past is
measured again, and the check fails only when the second is past too; a lost letter fails at once, with
no tolerance and no second chance; a measurement that breaks fails its checks; the run exits non-zero on a
failure. And ``bench/thresholds.toml`` holds today's goals, each measured by one group.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import check
from check import MET, PAST, TOLERATED, Measured, Outcome, Threshold, run_checks, state, table, value

TOL = 0.25


def goal(direction: str, x: float, on: str = "dovecote", name: str = "c") -> Threshold:
    return Threshold(name, "made up", on, direction, x, "ms")


def scripted(figures: dict[str, list[float]], calls: list[str]) -> check.Measure:
    """A measure that answers each check's next figure in turn (a group measured again gets the next one;
    ``run_checks`` reads only its group's) and records which groups it measured."""
    left = {name: iter(xs) for name, xs in figures.items()}

    def measure(group: str) -> dict[str, Measured]:
        calls.append(group)
        return {name: Measured(1.0, next(xs)) for name, xs in left.items()}

    return measure


def outcome(t: Threshold, *xs: float) -> tuple[Outcome, list[str]]:
    calls: list[str] = []
    [o] = run_checks([t], TOL, scripted({t.name: list(xs)}, calls), {"g": (t.name,)})
    return o, calls


def test_an_at_most_goal_tolerates_25_percent_past_it_and_no_more() -> None:
    t = goal("at_most", 2.0)
    assert [state(t, x, TOL) for x in (1.0, 2.0, 2.2, 2.5, 2.51, 8.0)] == [
        MET, MET, TOLERATED, TOLERATED, PAST, PAST]


def test_an_at_least_goal_points_the_other_way() -> None:
    t = goal("at_least", 400)
    # a high rate is met, however high; 25% below the goal is the last tolerated figure
    assert [state(t, x, TOL) for x in (10_000, 400, 350, 300, 299.9, 0)] == [
        MET, MET, TOLERATED, TOLERATED, PAST, PAST]


def test_a_ratio_goal_is_compared_with_dovecote_over_its_reference() -> None:
    t = goal("at_most", 2.5, on="ratio")
    assert value(t, Measured(2.0, 6.0)) == 3.0
    assert state(t, value(t, Measured(2.0, 6.0)), TOL) == TOLERATED
    assert state(t, value(t, Measured(2.0, 7.0)), TOL) == PAST
    assert value(goal("at_most", 20), Measured(None, 17.0)) == 17.0


def test_one_measurement_past_the_goal_is_measured_again_and_fails_only_if_the_second_is_past_too() -> None:
    t = goal("at_most", 10)
    slow_moment, calls = outcome(t, 20, 9)
    assert (slow_moment.states, slow_moment.failed, calls) == ([PAST, MET], False, ["g", "g"])
    regression, calls = outcome(t, 20, 13)
    assert (regression.states, regression.failed, calls) == ([PAST, PAST], True, ["g", "g"])
    near, _ = outcome(t, 20, 12.5)
    assert (near.states, near.failed) == ([PAST, TOLERATED], False)


def test_a_measurement_within_the_tolerance_is_not_measured_again() -> None:
    for x in (8, 12):
        o, calls = outcome(goal("at_most", 10), x, 99)
        assert (len(o.measured), o.failed, calls) == (1, False, ["g"])


def test_only_the_checks_past_once_take_a_group_s_second_measurement() -> None:
    calls: list[str] = []
    a, b = goal("at_most", 10, name="a"), goal("at_least", 100, name="b")
    # a is past, b met: the group is measured again for a; b's second figure (past) is not b's to judge
    outcomes = run_checks([a, b], TOL, scripted({"a": [30, 30], "b": [100, 1]}, calls), {"g": ("a", "b")})
    assert calls == ["g", "g"]
    assert [(o.threshold.name, o.states, o.failed) for o in outcomes] == [("a", [PAST, PAST], True),
                                                                           ("b", [MET], False)]


def test_zero_lost_is_exact_and_one_lost_letter_fails_at_once() -> None:
    lost = goal("exact", 0, name="lost")
    calls: list[str] = []
    [o] = run_checks([lost], TOL, scripted({"lost": [1, 0]}, calls), {"h": ("lost",)})
    assert (o.states, o.failed, calls) == ([PAST], True, ["h"])  # no tolerance, no second chance
    none_lost, _ = outcome(goal("exact", 0), 0)
    assert (none_lost.states, none_lost.failed) == ([MET], False)


def test_a_measurement_that_breaks_fails_its_checks_and_the_next_group_still_runs() -> None:
    calls: list[str] = []

    def measure(group: str) -> dict[str, Measured]:
        calls.append(group)
        if group == "g":
            raise RuntimeError("the server did not start")
        return {"lost": Measured(9000, 0)}

    outcomes = run_checks([goal("at_most", 1, name="a"), goal("exact", 0, name="lost")], TOL, measure,
                          {"g": ("a",), "h": ("lost",)})
    assert calls == ["g", "h"]
    assert [(o.threshold.name, o.failed) for o in outcomes] == [("a", True), ("lost", False)]
    assert "not measured (RuntimeError: the server did not start)" in "\n".join(table(outcomes, TOL))


def test_a_second_measurement_that_breaks_fails_the_check_and_keeps_the_first_in_the_table() -> None:
    answers: list[float] = [30]

    def measure(group: str) -> dict[str, Measured]:
        if not answers:
            raise OSError("No space left on device")
        return {"a": Measured(1.0, answers.pop())}

    [o] = run_checks([goal("at_most", 10, name="a")], TOL, measure, {"g": ("a",)})
    assert (o.states, o.failed) == ([PAST], True)
    _, first, second = table([o], TOL)
    assert first.endswith("past: measured again") and second.endswith("FAIL: not measured (OSError: No space left "
                                                                       "on device)")


def test_the_table_shows_every_measurement_with_its_reference_ratio_threshold_and_verdict() -> None:
    o, _ = outcome(goal("at_most", 2.5, on="ratio", name="cold_sweep"), 8, 9)
    head, first, second = table([o], TOL)
    assert head.split() == ["check", "reference", "dovecote", "ratio", "threshold", "verdict"]
    assert first.split()[:4] == ["cold_sweep", "1.0", "ms", "8.0"] and "8.00x" in first
    assert "<= 2.5x (past > 3.12x)" in first and first.endswith("past: measured again")
    assert second.split()[0] == "again" and second.endswith("FAIL")


@pytest.fixture
def measured_as(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, float]]:
    """``check.main`` measuring every check at the figure the test sets (a ratio's reference is 1)."""
    figures: dict[str, float] = {}

    def fake(group: str) -> dict[str, Measured]:
        return {n: Measured(1.0, figures[n]) for n in check.GROUPS[group]}

    monkeypatch.setattr(check, "measure_in_child", fake)
    monkeypatch.setattr(sys, "argv", ["check.py"])
    yield figures


def test_the_run_exits_non_zero_when_a_check_fails(measured_as: dict[str, float],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _, thresholds = check.load()
    measured_as.update({t.name: t.goal for t in thresholds})
    assert check.main() == 0
    assert "all 17 checks pass" in capsys.readouterr().out
    measured_as["rest_lost"] = 1
    assert check.main() == 1
    assert "FAILED: rest_lost" in capsys.readouterr().out


def test_the_thresholds_file_holds_today_s_goals_each_measured_by_one_group() -> None:
    tolerance, thresholds = check.load()
    assert tolerance == 0.25
    assert {t.name: (t.on, t.direction, t.goal) for t in thresholds} == {
        "cold_sweep": ("ratio", "at_most", 2.5),
        "snapshot_sweep": ("ratio", "at_most", 1.5),
        "cold_injection": ("ratio", "at_most", 10.0),
        "warm_inbox": ("dovecote", "at_most", 20.0),
        "durable_append": ("ratio", "at_most", 3.0),
        "gc_ensure_running": ("ratio", "at_most", 3.0),
        "gc_send": ("ratio", "at_most", 12.0),
        "gc_inbox": ("ratio", "at_most", 12.0),
        "gc_count": ("ratio", "at_most", 12.0),
        "gc_read": ("ratio", "at_most", 12.0),
        "rest_sends": ("dovecote", "at_least", 500.0),
        "mcp_sends": ("dovecote", "at_least", 400.0),
        "rest_lost": ("dovecote", "exact", 0.0),
        "mcp_lost": ("dovecote", "exact", 0.0),
        "agentmail_sends": ("ratio", "at_least", 0.75),
        "agentmail_p95": ("dovecote", "at_most", 200.0),
        "agentmail_lost": ("dovecote", "exact", 0.0),
    }
    grouped = [n for names in check.GROUPS.values() for n in names]
    assert sorted(grouped) == sorted(t.name for t in thresholds)  # each check in exactly one group
    from _check_groups import MEASURES

    assert set(MEASURES) == set(check.GROUPS)

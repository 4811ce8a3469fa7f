"""What the fuzz modules (``test_fuzz_*.py``) share: two depths, a count of the cases run, and the two checks.

Each family runs at two depths from one body: ``quick`` in ``make test`` (a few dozen cases, so the suite stays
fast) and ``deep`` under ``make stress`` (the ``stress`` marker, hundreds of cases). ``fuzz`` runs the cases and
returns how many ran (hypothesis may stop early when a strategy has no more to give), which each test checks
and prints (``pytest -s`` shows the counts per family).

The checks are the issue's properties: no exception escapes but a ``Refusal`` (whose constructor already
insists on a keyword of ``errors.REASONS``), and what was stored is never lost or changed: every file of the
home that existed before is a prefix of itself after (ledgers only grow), except caches.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dovecote.errors import REASONS, Refusal
from helpers import snapshot

#: Examples per depth (``deep`` runs under ``make stress``).
COUNTS = {"quick": 30, "deep": 500}
DEPTHS = [pytest.param("quick"), pytest.param("deep", marks=pytest.mark.stress)]

T = TypeVar("T")


def fuzz(depth: str, family: str, strategy: st.SearchStrategy[T], check: Callable[[T], None]) -> int:
    """Run ``check`` over ``COUNTS[depth]`` examples of ``strategy``; return (and print) how many ran."""
    ran = 0

    @settings(max_examples=COUNTS[depth], deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def cases(value: T) -> None:
        nonlocal ran
        ran += 1
        check(value)

    cases()
    print(f"fuzz {family} ({depth}): {ran} cases")
    assert ran >= min(COUNTS[depth], 10), (family, ran)
    return ran


def refused_or_done(call: Callable[[], T]) -> T | Refusal:
    """``call()``'s result, or the ``Refusal`` it raised; any other exception fails the test."""
    try:
        return call()
    except Refusal as r:
        assert r.reason in REASONS and r.detail, r
        return r


def assert_only_grew(before: dict[str, bytes], root: Path, *, views: bool = False) -> dict[str, bytes]:
    """Every file of ``before`` is still there, a prefix of what it is now (nothing stored was lost or
    changed). Folder views (``views/``) are caches a write may rewrite; ``views`` keeps them in the check."""
    after = snapshot(root)
    for name, data in before.items():
        if not views and name.startswith("views/"):
            continue
        assert name in after, f"{name} disappeared"
        assert after[name][: len(data)] == data, f"{name} was rewritten"
    return after


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

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dovecote.errors import REASONS, Refusal
from helpers import snapshot

#: Examples per depth (``deep`` runs under ``make stress``).
COUNTS = {"quick": 30, "deep": 500}
DEPTHS = [pytest.param("quick"), pytest.param("deep", marks=pytest.mark.stress)]

T = TypeVar("T")

#: Text of any code point, lone surrogates included (what a decoder of hostile JSON can hand over).
TEXT = st.text(max_size=20)
#: Scalars a hostile writer puts where a field belongs, and the strings that try something.
ODD = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT,
    st.sampled_from(["\x1b[31m", "\u202e", "\x00", "../../etc/passwd", "/etc/passwd", "dovecote:engine", "\ud800",
                     "9" * 400, "", " ", "entity:../x", "project:", "home", "ent_ops", "ent_builder"]),
)
#: Any JSON-ish value of those, nested a little.
VALUE = st.recursive(ODD, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                     max_leaves=6)


def dumps(obj: Any) -> bytes:
    """JSON bytes for anything, a lone surrogate or a 400-digit integer included (orjson writes neither)."""
    import json

    return json.dumps(obj, ensure_ascii=True).encode()


def mutated(valid: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """``valid`` with some fields (top-level or one level down) dropped or set to a hostile value, some added."""
    paths = [(k,) for k in valid] + [(k, j) for k, v in valid.items() if isinstance(v, dict) for j in v]

    def apply(changes: list[tuple[tuple[str, ...], Any, bool]], extra: dict[str, Any]) -> dict[str, Any]:
        out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in valid.items()}
        for path, value, drop in changes:
            parent = out
            for key in path[:-1]:
                parent = parent[key] if isinstance(parent.get(key), dict) else {}
            if drop:
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = value
        return {**out, **extra}

    change = st.tuples(st.sampled_from(paths), VALUE, st.booleans())
    return st.builds(apply, st.lists(change, max_size=4), st.dictionaries(TEXT, VALUE, max_size=2))


def fuzz(depth: str, family: str, strategy: st.SearchStrategy[T], check: Callable[[T], None],
         scale: float = 1.0) -> int:
    """Run ``check`` over ``COUNTS[depth]`` examples of ``strategy`` (times ``scale``, for a family whose case
    is slow); return (and print) how many ran."""
    ran = 0
    wanted = max(int(COUNTS[depth] * scale), 5)

    # In CI the examples are the same every run (a run proven green stays green; a new finding comes from a
    # developer's run, which explores afresh each time).
    @settings(max_examples=wanted, deadline=None, database=None, suppress_health_check=list(HealthCheck),
              derandomize=bool(os.environ.get("CI")))
    @given(strategy)
    def cases(value: T) -> None:
        nonlocal ran
        ran += 1
        check(value)

    cases()
    print(f"fuzz {family} ({depth}): {ran} cases")
    assert ran >= min(wanted, 5), (family, ran)
    return ran


def refused_or_done(call: Callable[[], T]) -> T | Refusal:
    """``call()``'s result, or the ``Refusal`` it raised; any other exception fails the test."""
    try:
        return call()
    except Refusal as r:
        assert r.reason in REASONS and r.detail, r
        return r


def assert_only_grew(before: dict[str, bytes], root: Path, *, moving: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file of ``before`` is still there, a prefix of what it is now (nothing stored was lost or
    changed). Folder views (``views/``) are caches a write may rewrite, and ``moving`` names folders whose
    files move by design (an intake queue); neither is checked."""
    after = snapshot(root)
    for name, data in before.items():
        if name.startswith(("views/", *moving)):
            continue
        assert name in after, f"{name} disappeared"
        assert after[name][: len(data)] == data, f"{name} was rewritten"
    return after


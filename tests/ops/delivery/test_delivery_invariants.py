"""No black holes (issue 9): every envelope that entered intake is, at every moment, in exactly one of
pending, delivered (to each of its recipients) and quarantined, and ``status`` adds up.

A property test drives a home through random drops and intake runs and checks the whole invariant after
every step; a real-process test watches two mailman processes at work from outside and checks it at the
moments it can see (each listing of the folders, each read of the boxes after one).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deliveryhelpers import AGENTS, T0, box_letters, delivery_home, drop, envelope
from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.verbs import Intake, Status
from helpers import DOVECOTE_BIN, cli_env

pytestmark = pytest.mark.files_only

WORKERS = [a for a in AGENTS if a != "aya"]
FOLDERS = ("pending", "processed", "quarantine")


def _content(kind: str, i: int) -> tuple[bytes, list[str]]:
    """An envelope file of one kind and whom it delivers to (nobody: it can only be quarantined)."""
    eid = f"env_{kind}_{i:05d}"
    to = WORKERS[i % len(WORKERS)]
    if kind == "task":
        return orjson.dumps(envelope(envelope_id=eid, to=to)), [to]
    if kind == "broadcast":
        to_all = [WORKERS[i % len(WORKERS)], WORKERS[(i + 1) % len(WORKERS)]]
        env = {k: v for k, v in envelope(envelope_id=eid, to_all=to_all).items() if k != "to"}
        return orjson.dumps(env), sorted(to_all)
    if kind == "unknown":
        return orjson.dumps(envelope(envelope_id=eid, to="nobody")), []
    if kind == "trust":
        return orjson.dumps(envelope(envelope_id=eid, trust_plane="plane-a", intent_class="execute")), []
    return b'{"envelope_id": "torn', []  # torn JSON


def _names(folder: Path, which: str) -> set[str]:
    try:
        return {n for n in os.listdir(folder / which) if n.endswith(".json") and not n.endswith(".reason.json")}
    except FileNotFoundError:
        return set()


def _delivered(dc: Dovecote) -> dict[str, set[str]]:
    """envelope id -> the recipients whose boxes hold its delivery."""
    out: dict[str, set[str]] = {}
    for w in WORKERS:
        for x in box_letters(dc, w):
            if x.get("kind") == "task" and x.get("to") == w:
                out.setdefault(x["envelope_id"], set()).add(w)
    return out


def _check(dc: Dovecote, entered: dict[str, tuple[str, list[str]]]) -> None:
    folder = dc.layout.root / "intake"
    where = {which: _names(folder, which) for which in FOLDERS}
    delivered = _delivered(dc)
    for name, (eid, to) in entered.items():
        places = [which for which in FOLDERS if name in where[which]]
        assert len(places) == 1, (name, places)  # exactly one folder, never none, never two
        if places[0] == "processed":  # delivered, to each recipient
            assert delivered.get(eid) == set(to), (name, delivered.get(eid), to)
        elif places[0] == "quarantine":
            assert to == [] and (folder / "quarantine" / f"{name}.reason.json").is_file()
            assert eid not in delivered
        else:
            assert eid not in delivered or delivered[eid] <= set(to)
    s = builtins(dc.status(Status(), now=T0))["intake"]
    assert (s["pending"], s["processed"], s["quarantined"]) == tuple(len(where[w]) for w in FOLDERS)
    assert s["entered"] == len(entered)
    processed = [to for name, (_, to) in entered.items() if name in where["processed"]]
    assert builtins(dc.status(Status(), now=T0))["tracker_counts"]["total"] == sum(len(to) for to in processed)


_STEPS = st.lists(st.one_of(
    st.tuples(st.just("drop"), st.lists(st.sampled_from(["task", "task", "broadcast", "unknown", "trust", "torn"]),
                                        min_size=1, max_size=6)),
    st.tuples(st.just("intake"), st.just([])),
), min_size=1, max_size=8)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_STEPS)
def test_every_envelope_is_in_exactly_one_place_after_every_step(steps: list[tuple[str, list[str]]]) -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        dc = delivery_home(Path(tmp))
        entered: dict[str, tuple[str, list[str]]] = {}
        for n, (action, kinds) in enumerate(steps):
            if action == "intake":
                dc.intake(Intake(), now=T0 + timedelta(seconds=n))
            for kind in kinds:
                i = len(entered)
                data, to = _content(kind, i)
                name = f"env_{kind}_{i:05d}.json"
                drop(dc, data, name=name)
                entered[name] = (name.removesuffix(".json"), to)
            _check(dc, entered)
        dc.intake(Intake(), now=T0 + timedelta(hours=1))
        _check(dc, entered)
        assert not _names(dc.layout.root / "intake", "pending")  # nothing left behind, nothing retried forever


def test_two_mailman_processes_watched_from_outside_never_lose_or_duplicate_an_envelope(tmp_path: Path) -> None:
    """While two ``mailman --once`` processes work through 1,000 envelopes, a watcher lists the folders
    again and again. Files only move out of pending, so a listing of pending then the others sees every
    envelope at least once (never in none), a listing of the others then pending at most once (never in
    two), and every envelope seen in processed is already in its recipients' boxes (delivered first)."""
    dc = delivery_home(tmp_path)
    entered: dict[str, tuple[str, list[str]]] = {}
    kinds = ["task"] * 8 + ["broadcast", "unknown", "torn", "trust"]
    for i in range(1000):
        data, to = _content(kinds[i % len(kinds)], i)
        name = f"env_{kinds[i % len(kinds)]}_{i:05d}.json"
        drop(dc, data, name=name)
        entered[name] = (name.removesuffix(".json"), to)
    folder = dc.layout.root / "intake"
    env = cli_env(tmp_path, dc.layout.root)
    procs = [subprocess.Popen([str(DOVECOTE_BIN), "mailman", "--once", "--json"], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    try:
        looks = 0
        moved_seen = 0
        deadline = time.monotonic() + 120
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            pending = _names(folder, "pending")
            others = _names(folder, "processed") | _names(folder, "quarantine")
            assert set(entered) <= pending | others  # never in none
            settled = _names(folder, "processed") | _names(folder, "quarantine")
            assert not (settled & _names(folder, "pending"))  # never in two (moves are one way)
            processed = _names(folder, "processed")
            delivered = _delivered(dc)
            for name in processed:
                eid, to = entered[name]
                assert delivered.get(eid) == set(to), name  # durably in each box before the move
            looks += 1
            moved_seen += len(processed)
    except BaseException:  # a failed look must not leave two mailmen writing into the next test
        for p in procs:
            p.kill()
            p.communicate()
        raise
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        outs.append(orjson.loads(out))
    assert looks > 0
    _check(dc, entered)
    delivered = [sum(run["intake"]["letters_appended"] for run in o) if isinstance(o, list)
                 else o["intake"]["letters_appended"] for o in outs]
    want = sum(len(to) for _, to in entered.values())
    assert sum(delivered) == want  # between them, each delivery appended exactly once
    rows: list[dict[str, Any]] = builtins(dc.trackers())["trackers"]
    assert len(rows) == want == len({(t["envelope_id"], t["recipient"]) for t in rows})


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=16,
)


@settings(deadline=None)
@given(st.dictionaries(st.text(max_size=6), _JSON, max_size=8), st.dictionaries(st.text(max_size=6), _JSON,
                                                                                  max_size=4))
def test_the_presorted_envelope_makes_the_same_letter_bytes(env: dict[str, Any], rest: dict[str, Any]) -> None:
    """Intake sorts a kept envelope once (``presorted``) instead of once per recipient; the letter must be the
    same bytes, so the same id as before, or a re-run after a crash would deliver twice."""
    from dovecote.model.letters import canonical_line
    from dovecote.ops.delivery.intake import presorted

    letter = {**rest, "kind": "task", "envelope": env}
    assert canonical_line({**letter, "envelope": presorted(env)}) == canonical_line(letter)

"""Crash at every file operation of a mission post and of a receipt import
(``crashsweep``: a sample in ``make test``, every point in ``make stress``).

After each crash every ledger reads cleanly, every letter acknowledged before
the crash is there once, and the next run converges on exactly the letters a
run with no crash writes, with ``verify`` passing. A mission post is a
compare-and-swap on the head: the retry of a post that landed is refused
``stale_head`` or dedups (the same bytes), never a second letter; a repeated
receipt import dedups.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from crashsweep import DEPTHS, SWEEPS, Sweeper, acknowledge, converging
from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from helpers import add_project, new_home
from missionhelpers import PASSPHRASE, VECTOR, VECTOR_AGENT, for_phase, keyed

pytestmark = pytest.mark.files_only

NOW = datetime(2026, 7, 9, 1, 0, tzinfo=UTC)
PHASES = ["judging", "executing", "gate", "merge_wait"]


def _home(tree: Path) -> Path:
    return tree / "owner" / ".dovecote"


def _ok(tree: Path) -> bool:
    return Dovecote(_home(tree)).verify(now=NOW).ok


def _post(dc: Dovecote, seq: int, ids: list[str]) -> None:
    letter = for_phase(PHASES[seq - 1], seq, ids[-1] if ids else None)
    try:
        ids.append(builtins(dc.mission_post(verbs.MissionPost(letter=letter, as_project="repo-a"),
                                   actor=VECTOR_AGENT))["letter_id"])
    except Refusal as e:  # the retry of a post that landed: the head has moved on to it
        if e.reason == "disk_full":
            raise  # the injected fault itself: the sweep counts the refusal
        assert e.reason == "stale_head", e
        ids.append(builtins(dc.mission(verbs.Mission(mission_id=VECTOR["mission_id"])))["head_letter_id"])


def _base(tmp: Path, posted: int) -> tuple[Path, Path]:
    base, work = tmp / "base", tmp / "work"
    dc = new_home(work)
    add_project(dc, work, "repo-a")
    dc.block_add(verbs.BlockAdd(block_id="sb_alpha", project="repo-a"))
    keyed(dc)  # a cheap hash: the sweep imports dozens of times, and what it sweeps is the import's writes
    ids: list[str] = []
    for seq in range(1, posted + 1):
        _post(dc, seq, ids)
    (work / "ids").write_text(" ".join(ids))
    work.rename(base)
    return base, work


def _posts(tree: Path, acked: list[str]) -> None:
    """Post letters 2 and 3 of the chain (each names the head the one before made)."""
    dc = Dovecote(_home(tree))
    ids = (tree / "ids").read_text().split()
    for seq in (2, 3):
        if len(ids) < seq:
            _post(dc, seq, ids)
        acknowledge(tree, acked)


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_two_mission_posts(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    base, work = _base(tmp_path, posted=1)

    def retry(tree: Path, acked: list[str]) -> None:
        (tree / "ids").write_text((base / "ids").read_text())  # the retrying agent knows what it had posted
        _posts(tree, acked)

    points = sweeper("two mission posts", base, work, _posts, converging(_home, retry, _ok), depth)
    assert points.count("fsync") >= 2, points


def _import(tree: Path, acked: list[str]) -> None:
    Dovecote(_home(tree)).receipt_import(verbs.ReceiptImport(mission_id=VECTOR["mission_id"]),
                                         gesture="terminal", passphrase=PASSPHRASE, actor="human.me",
                                         now=NOW)
    acknowledge(tree, acked)


@pytest.mark.parametrize("sweeper", SWEEPS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_crash_point_of_a_receipt_import(tmp_path: Path, depth: str, sweeper: Sweeper) -> None:
    base, work = _base(tmp_path, posted=len(PHASES))
    points = sweeper("receipt import", base, work, _import, converging(_home, _import, _ok), depth)
    assert points.count("fsync") >= 1, points

"""The JSON of every read verb on the demo home, pinned byte for byte.

A result's JSON is what a face prints (the CLI's ``--json``) and answers (REST bodies, MCP's
``structuredContent``): a change to how results are typed must leave it exactly as it was. The
demo is built in process on a fixed clock, then every read the handle offers is encoded the way
the faces encode it and compared with ``verb_json.golden.json``. Only the demo's folder (a temporary
directory) is replaced by ``<DEMO>``: everything else is what a user reads.

To record the golden file again after a change that is meant to change the JSON:
``DOVECOTE_GOLDEN=write pytest tests/handle/test_verb_json.py``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from dovecote import verbs
from dovecote.cli import demo
from dovecote.handle.api import Actor, Dovecote, open_home
from dovecote.model import envelope
from dovecote.model.results import builtins

GOLDEN = Path(__file__).with_name("verb_json.golden.json")
#: Later than every demo letter, so the inbox's clock and ages are those of a reader a day on.
NOW = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)


def _reads(dc: Dovecote) -> dict[str, Callable[[], Any]]:
    """Every read verb of the handle, by a name that says which call it is (the demo's boxes and items)."""
    box_names = [str(a) for a in dc.report_boxes()] + ["entity:ent_builder", "entity:ent_ops"]
    reads: dict[str, Callable[[], Any]] = {
        "projects": lambda: dc.projects(),
        "entities": lambda: dc.entities(),
        "sweep": lambda: dc.sweep(verbs.Sweep(distribute=False)),
        "sweep --include-all": lambda: dc.sweep(verbs.Sweep(distribute=False, include_all=True)),
        "doctor": lambda: dc.doctor(now=NOW),
        "inbox ent_builder": lambda: dc.inbox(verbs.Inbox(entity_id="ent_builder")),
        "inbox ent_builder --current-tic 109": lambda: dc.inbox(verbs.Inbox(entity_id="ent_builder", current_tic=109)),
        "inbox ent_builder --direction both --include-terminal": lambda: dc.inbox(
            verbs.Inbox(entity_id="ent_builder", direction=verbs.Direction.both, include_terminal=True)),
        "inbox ent_ops --direction both": lambda: dc.inbox(
            verbs.Inbox(entity_id="ent_ops", direction=verbs.Direction.both)),
        "search seek --include-terminal": lambda: dc.search(verbs.Search(query="seek", include_terminal=True)),
        "stale-check --current-tic 109": lambda: dc.stale_check(verbs.StaleCheck(current_tic=109)),
        "organize ent_builder": lambda: dc.organize(verbs.Organize(entity_id="ent_builder")),
        "cases": lambda: dc.cases(),
        "claims": lambda: dc.claims(),
        "monitors": lambda: dc.monitors(),
        "trackers": lambda: dc.trackers(),
        "presence": lambda: dc.presence(),
        "status": lambda: dc.status(),
        "missions": lambda: dc.missions(),
        "leases --include-ended": lambda: dc.leases(verbs.Leases(include_ended=True), now=NOW),
        "blocks": lambda: dc.blocks(),
        "tokens": lambda: dc.tokens(),
    }
    for name in box_names:
        reads[f"box {name}"] = lambda name=name: dc.box(verbs.Box(address=name, include_all=True))
    inbox = builtins(dc.inbox(verbs.Inbox(entity_id="ent_builder", include_terminal=True)))
    for item in inbox["items"]:
        ref = item["id"]
        reads[f"show ent_builder {ref}"] = lambda ref=ref: dc.show(verbs.Show(entity_id="ent_builder", ref=ref,
                                                                              current_tic=109))
    for case in builtins(dc.cases())["cases"]:
        fp = case["fingerprint"]
        reads[f"case {fp}"] = lambda fp=fp: dc.case(verbs.Case(fingerprint=fp))
    return reads


def demo_home(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Dovecote:
    """The demo home built under ``tmp / "demo"`` on the fixed clock, opened on it (the demo's mail is sent at
    the clock's time with numbered message ids: its letter ids hash both, so they are the same every run)."""
    ids = itertools.count(1)
    monkeypatch.setattr(envelope, "new_message_id", lambda: f"msg_demo_{next(ids)}")
    monkeypatch.setattr(demo, "open_home", lambda home, actor=None: open_home(home, actor=actor, clock=lambda: NOW))
    home = demo.build_demo(tmp / "demo", actor=Actor(entity="ent_builder"))
    return open_home(home, clock=lambda: NOW)


def _record(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Every read's JSON on the demo home, as the CLI's ``--json`` prints it."""
    dc = demo_home(tmp, monkeypatch)
    out: dict[str, str] = {}
    for name, read in _reads(dc).items():
        text = orjson.dumps(builtins(read()), option=orjson.OPT_INDENT_2).decode()
        out[name] = text.replace(str(tmp / "demo"), "<DEMO>")
    return out


def test_every_read_verb_answers_the_json_it_answered_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's scripts read these exact bytes: the typing of results must not change one of them."""
    got = _record(tmp_path, monkeypatch)
    if os.environ.get("DOVECOTE_GOLDEN") == "write":
        GOLDEN.write_text(orjson.dumps(got, option=orjson.OPT_INDENT_2).decode() + "\n")
    want = orjson.loads(GOLDEN.read_text())
    assert list(got) == list(want)
    for name in want:
        assert got[name] == want[name], name

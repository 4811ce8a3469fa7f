"""Every result a handle method returns is a snapshot (issue 7 §3).

Two promises, checked for each method: a later call (after more letters) never
changes a result already returned, and a caller changing a result in place
never changes the next answer. The warm handle keeps folds and views between
calls, so a result that shared memory with them broke both; the next answer is
compared with a cold handle's, which shares nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.verbs import Box, ImportInboxTree, Inbox, Move, Organize, Search, Show, StaleCheck, Sweep, View
from helpers import add_project, lid, rep
from mailhelpers import ENTITY, cgg_tree, mail_home, send

NOW = datetime(2026, 7, 6, 12, 0, tzinfo=UTC)


def plain(result: Any) -> Any:
    """A result as the JSON a face would print (dataclass results through ``to_dict``)."""
    return orjson.loads(orjson.dumps(result.to_dict() if hasattr(result, "to_dict") else result))


def scribble(value: Any) -> None:
    """Change every dict and list inside ``value`` in place, as a careless caller might."""
    if isinstance(value, dict):
        for v in list(value.values()):
            scribble(v)
        for k in list(value):
            if isinstance(value[k], (str, int)):
                value[k] = "scribbled"
        value["scribbled"] = True
    elif isinstance(value, list):
        for v in value:
            scribble(v)
        value.append("scribbled")
    elif hasattr(value, "to_dict"):  # a typed result: what it prints, then its plain fields (a Struct's are slots)
        scribble(value.to_dict())
        fields = value.__struct_fields__ if not hasattr(value, "__dict__") else ()
        inner = [getattr(value, f) for f in fields] if fields else list(vars(value).values())
        for v in inner:
            if isinstance(v, (dict, list)) or hasattr(v, "to_dict"):
                scribble(v)


def home(tmp: Path) -> Dovecote:
    """A home with field reports (one picked up) and entity mail (one item claimed)."""
    dc = mail_home(tmp)
    add_project(dc, tmp, "repo-a")
    first = rep("first", ts="2026-07-05T10:00:00Z")
    dc.report([first, rep("second", ts="2026-07-05T11:00:00Z")])
    dc.report([rep("on it", ts="2026-07-05T12:00:00Z", klass="friction", answers=[lid(first)])])
    item = send(dc, "rebuild the index zebra")
    send(dc, "second zebra item", priority="high")
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=item, current_tic=101))
    dc.distribute()
    return dc


def more_letters(dc: Dovecote) -> None:
    """Letters that change every answer: a receipt, a new report, new mail, a transition."""
    rows = dc.sweep(Sweep(distribute=False, include_all=True)).letters()
    first = next(r["id"] for r in rows if r["what"] == "first")
    dc.report([
        rep("done", ts="2026-07-05T13:00:00Z", klass="triage", tool="triage", answers=[first], disposition="fixed"),
        rep("third", ts="2026-07-05T14:00:00Z"),
    ])
    item = send(dc, "third zebra item", current_tic=102)
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=item, current_tic=103))
    dc.distribute()


# Each method once, as a face would call it on a warm handle.
CALLS: dict[str, Callable[[Dovecote], Any]] = {
    "sweep": lambda dc: dc.sweep(Sweep(distribute=False, include_all=True)),
    "box": lambda dc: dc.box(Box(address="project:repo-a", include_all=True)),
    "doctor": lambda dc: dc.doctor(now=NOW),
    "inbox": lambda dc: dc.inbox(Inbox(
        entity_id=ENTITY, current_tic=104, direction="both", include_terminal=True
    ), now=NOW),
    "search": lambda dc: dc.search(Search(query="zebra", include_terminal=True), now=NOW),
    "stale_check": lambda dc: builtins(dc.stale_check(StaleCheck(current_tic=104), now=NOW)),
    "organize": lambda dc: builtins(dc.organize(Organize(entity_id=ENTITY, current_tic=104), now=NOW)),
    "show": lambda dc: dc.show(
        Show(entity_id=ENTITY, ref=builtins(dc.inbox(Inbox(entity_id=ENTITY, current_tic=104)))["items"][0]["id"],
             current_tic=104)
    ),
    "view": lambda dc: dc.view(View(entity_id=ENTITY, current_tic=104), now=NOW),
}

#: The calls whose answer the letters of ``more_letters`` change (the rest answer about other things).
CHANGES = ("box", "doctor", "inbox", "search", "sweep")


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_later_call_never_changes_a_result_already_returned(tmp_path: Path, name: str) -> None:
    dc = home(tmp_path)
    call = CALLS[name]
    result = call(dc)
    before = copy.deepcopy(plain(result))
    more_letters(dc)
    later = call(dc)
    if name in CHANGES:
        assert plain(later) != before, "the letters added should change this answer"
    assert plain(result) == before


@pytest.mark.parametrize("name", sorted(CALLS))
def test_changing_a_result_never_changes_the_next_answer(tmp_path: Path, name: str) -> None:
    dc = home(tmp_path)
    call = CALLS[name]
    if name == "view":  # the view writes files: run it once so both handles see the same tree
        call(dc)
    scribble(call(dc))
    cold = plain(call(Dovecote(dc.layout.root)))
    assert plain(call(dc)) == cold


def test_a_sweep_total_stays_what_it_was_after_a_later_sweep(tmp_path: Path) -> None:
    """The reported bug: ``r1.total`` changed after a later ``sweep()``."""
    dc = home(tmp_path)
    r1 = dc.sweep(Sweep(distribute=False))
    total, counts, letters = r1.total, r1.counts, r1.letters()
    more_letters(dc)
    r2 = dc.sweep(Sweep(distribute=False))
    assert r2.total == total + 2
    assert (r1.total, r1.counts, r1.letters()) == (total, counts, letters)
    assert plain(r2) == plain(Dovecote(dc.layout.root).sweep(Sweep(distribute=False)))


def test_changing_an_inbox_item_never_changes_the_next_inbox(tmp_path: Path) -> None:
    """The reported bug: mutating ``dc.inbox(...)["items"][0]`` changed the next answer."""
    dc = home(tmp_path)
    first = dc.inbox(Inbox(entity_id=ENTITY, current_tic=104), now=NOW)
    expected = copy.deepcopy(builtins(first))
    assert first.items
    first.items[0]["subject"] = "changed"
    first.items[0]["flags"].append("changed")
    first.counts["inbound"] = 99
    assert builtins(dc.inbox(Inbox(entity_id=ENTITY, current_tic=104), now=NOW)) == expected


def test_an_import_result_is_a_snapshot(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    root = tmp_path / "mbox"
    cgg_tree(root / ENTITY)
    first = dc.import_inbox_tree(ImportInboxTree(path=str(root), current_tic=110))
    before = copy.deepcopy(plain(first))
    assert before["entities"][ENTITY]
    send(dc, "after the import", current_tic=111)
    again = dc.import_inbox_tree(ImportInboxTree(path=str(root), current_tic=111))
    assert plain(first) == before
    scribble(again)
    assert plain(dc.import_inbox_tree(ImportInboxTree(
        path=str(root), current_tic=111
    ))) == plain(Dovecote(dc.layout.root).import_inbox_tree(ImportInboxTree(path=str(root), current_tic=111)))

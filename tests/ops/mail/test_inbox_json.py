"""The inbox view as plain data: the same as a generic conversion, made without copying the rows again,
and without waking the cyclic collector right after a read of many rows."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest

from dovecote.handle.api import Dovecote, init
from dovecote.model.results import builtins
from dovecote.verbs import EntityAdd, Inbox, Message, Move
from helpers import open_home


def home(tmp_path: Path, messages: int) -> tuple[Dovecote, list[str]]:
    """A box of ``messages`` in every open state (waiting, claimed, deferred), some urgent, some overdue after tic 3,
    and one outbound draft."""
    h, _ = init(tmp_path / ".dovecote", owner_root=str(tmp_path))
    dc = open_home(h)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    ids = [dc.send(Message(sender="ent_a", recipient="ent_b", subject=f"s{i} é", priority="urgent" if i % 5 == 0
                           else "normal", reminder_tic=3 if i % 7 == 0 else None, current_tic=1)).id
           for i in range(messages)]
    dc.move(Move(kind="claim", entity_id="ent_b", ref=ids[1], current_tic=2))
    dc.move(Move(kind="defer", entity_id="ent_b", ref=ids[2], until_tic=1000, current_tic=2))
    dc.move(Move(kind="seen", entity_id="ent_b", ref=ids[3], current_tic=2))
    dc.draft(Message(sender="ent_b", recipient="ent_a", subject="a draft"))
    return dc, ids


@pytest.mark.parametrize("direction", ["inbound", "outbound", "both"])
def test_to_dict_is_the_generic_conversion(tmp_path: Path, direction: str) -> None:
    dc, _ = home(tmp_path, 12)
    view = dc.inbox(Inbox(entity_id="ent_b", current_tic=500, direction=direction))
    data = builtins(view)
    assert data == msgspec.to_builtins(view)
    assert orjson.dumps(data) == orjson.dumps(msgspec.to_builtins(view))  # the same keys in the same order
    assert ("items" in data) == (direction != "outbound")
    assert ("outbound" in data) == (direction != "inbound")
    if "items" in data:
        assert {r["state"] for r in data["items"]} == {"WAIT", "ACTIVE", "DEFER"}
        assert any(r["flags"] for r in data["items"])  # overdue (and stale) at tic 500


def test_rows_are_handed_over_not_copied(tmp_path: Path) -> None:
    """The rows are this answer's own (the audit copied them for it): converting them again made one new
    object a row, which on a box of thousands was most of a warm read's time."""
    dc, _ = home(tmp_path, 60)
    view = dc.inbox(Inbox(entity_id="ent_b", current_tic=5))
    was = gc.isenabled()
    gc.disable()
    try:
        before = gc.get_count()[0]
        data = builtins(view)
        made = gc.get_count()[0] - before
    finally:
        if was:
            gc.enable()
    assert len(data["items"]) == 60
    assert made <= 4
    assert data["items"] is view.items
    again = builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=5)))
    data["items"][0]["subject"] = "changed by the caller"
    assert again["items"][0]["subject"] != "changed by the caller"  # the next read has its own rows


def test_no_collection_between_the_read_and_its_data(tmp_path: Path) -> None:
    """Right after a read the collector's count holds the fresh rows; the first object made before the face
    drops them would have it walk every one. ``builtins`` of the view makes none before its pause."""
    dc, _ = home(tmp_path, 60)
    ran: list[Any] = []

    def started(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            ran.append(info)

    old = gc.get_threshold()
    gc.set_threshold(30, old[1], old[2])
    try:
        view = dc.inbox(Inbox(entity_id="ent_b", current_tic=5))
        assert gc.get_count()[0] > 30  # otherwise this test proves nothing
        gc.callbacks.append(started)
        data = builtins(view)
        gc.callbacks.remove(started)
    finally:
        gc.set_threshold(*old)
    assert ran == []
    assert len(data["items"]) == 60

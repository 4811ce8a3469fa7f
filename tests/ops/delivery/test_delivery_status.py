"""``status`` filters search the ledgers, not only the recent rows (notes B11: vNext searched trackers plus
every ledger row), and never write."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from deliveryhelpers import T0, delivery_home
from dovecote.model.results import builtins
from dovecote.verbs import Ack, Mailman, Send, Status
from helpers import run_cli, snapshot

pytestmark = pytest.mark.files_only


def _task(dc, n: int, work_item_id: str, at: int = 0):  # type: ignore[no-untyped-def]
    return dc.send(Send(type="task", recipient="tariq", sender="aya", subject=f"task {n}",
                        work_item_id=work_item_id, ack_timeout=60, max_repings=1, reping_interval=60),
                   now=T0 + timedelta(seconds=at))


def test_a_filter_finds_an_old_delivery_and_everything_that_refers_to_it(tmp_path: Path) -> None:
    dc = delivery_home(tmp_path)
    old = _task(dc, 0, "wi-old")
    dc.mailman(Mailman(), now=T0 + timedelta(minutes=2))  # a reping of the old task
    for n in range(1, 40):  # newer deliveries push it far out of the recent rows
        _task(dc, n, "wi-new", at=200 + n)
    dc.ack(Ack(entity_id="tariq", ref=old.envelope_id), now=T0 + timedelta(minutes=20))
    dc.send(Send(recipient="tariq", sender="aya", subject="about the old one", thread_id="wi-old"), now=T0)
    before = snapshot(dc.layout.root)
    s = builtins(dc.status(Status(work_item_id="wi-old", limit=3), now=T0 + timedelta(minutes=30)))
    assert snapshot(dc.layout.root) == before  # a read
    found = s["search"]
    assert found["filters"] == {"work_item_id": "wi-old", "thread_id": None}
    delivery = old.deliveries[0]["id"]
    # the delivery's notify record (mode none: disabled) and the ack's notice to the sender
    assert found["source_counts"] == {"ack": 1, "notify": 2, "reping": 1, "task": 1}
    assert (found["total_matches"], found["returned_matches"], found["truncated"]) == (5, 3, True)
    newest = found["matches"][:2]  # newest first: the ack and its notice, written together
    assert {m["kind"] for m in newest} == {"ack", "notify"} and {m["ts"] for m in newest} == {"2026-03-18T10:20:00Z"}
    assert all(m["box"] == "entity:tariq" for m in found["matches"])
    assert {m["ref"] for m in found["matches"] if m["matched_by"] == "ref"} == {delivery}
    assert s["tracker_counts"]["total"] == 1 and s["tracker_counts"]["acked"] == 1
    by_thread = builtins(dc.status(Status(thread_id="wi-old", limit=50), now=T0))["search"]
    assert by_thread["source_counts"] == {"ack": 1, "message": 1, "notify": 2, "reping": 1, "task": 1}
    assert builtins(dc.status(Status(work_item_id="wi-none"), now=T0))["search"]["total_matches"] == 0
    assert builtins(dc.status(Status(), now=T0))["search"] is None
    r = run_cli(tmp_path, "status", "--work-item", "wi-old", "--json", home=dc.layout.root)
    assert r.returncode == 0 and b'"total_matches":5' in r.stdout.replace(b" ", b"")
    text = run_cli(tmp_path, "status", "--thread", "wi-old", home=dc.layout.root)
    assert text.returncode == 0 and b"ledger search: 6 letter(s) match (ack 1, message 1, notify 2" in text.stdout


def test_a_value_json_escapes_is_still_matched_exactly(tmp_path: Path) -> None:
    dc = delivery_home(tmp_path)
    _task(dc, 0, "wi-é\"q")
    _task(dc, 1, "wi-é")
    found = builtins(dc.status(Status(work_item_id="wi-é\"q"), now=T0))["search"]
    assert found["source_counts"] == {"notify": 1, "task": 1}

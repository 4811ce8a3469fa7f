"""Notices to the sender of the first ack and of the timeout (``notify_on_ack``, ``notify_on_timeout``; notes
B5: vNext's watcher nudged the sender on an ack; B13.12: it never read ``notify_on_timeout``). Assistive
like every nudge: the ack and the timeout are the durable letters, the notice follows the notifier mode."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from deliveryhelpers import T0, delivery_home, drop, envelope, kinds, nudging_home
from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.verbs import Ack, Mailman, Send

pytestmark = pytest.mark.files_only

QUICK = {"ack_required": True, "ack_timeout_s": 60, "max_repings": 0, "reping_interval_s": 60,
         "escalation_target": "none"}


def _tracker(dc: Dovecote, envelope_id: str) -> dict[str, Any]:
    (t,) = [t for t in builtins(dc.trackers(now=T0))["trackers"] if t["envelope_id"] == envelope_id]
    return t


def _notices(dc: Dovecote, about: str) -> list[dict[str, Any]]:
    return [n for n in kinds(dc, "tariq", "notify") if n.get("about") == about]


@pytest.mark.parametrize(("mode", "state"), [("none", "disabled"), ("discover-only", "discovered_only")])
def test_a_passive_mode_records_the_notices_with_the_ack_and_the_timeout(
    tmp_path: Path, mode: str, state: str
) -> None:
    dc = delivery_home(tmp_path, mode=mode)
    acked, late = envelope(ack_policy=QUICK), envelope(ack_policy=QUICK)
    drop(dc, acked)
    drop(dc, late)
    dc.mailman(Mailman(), now=T0)
    assert _tracker(dc, acked["envelope_id"])["ack_notice"] is None  # nothing happened yet
    dc.ack(Ack(entity_id="tariq", ref=acked["envelope_id"]), now=T0 + timedelta(seconds=30))
    dc.mailman(Mailman(), now=T0 + timedelta(minutes=2))  # the other one times out
    dc.mailman(Mailman(), now=T0 + timedelta(minutes=3))  # and is never noticed twice
    a, t = _tracker(dc, acked["envelope_id"]), _tracker(dc, late["envelope_id"])
    assert (a["ack_notice"], a["timeout_notice"]) == (state, None)
    assert (t["ack_state"], t["timeout_notice"], t["ack_notice"]) == ("timed_out", state, None)
    (n,) = _notices(dc, "ack")
    assert (n["notify"], n["outcome"], n["ref"], n["delivery_truth"]) == ("aya", state, a["delivery_id"], False)
    assert [x["ref"] for x in _notices(dc, "timeout")] == [t["delivery_id"]]
    dc.ack(Ack(entity_id="tariq", ref=late["envelope_id"]), now=T0 + timedelta(minutes=4))  # late: noticed too
    assert _tracker(dc, late["envelope_id"])["ack_notice"] == state and len(_notices(dc, "ack")) == 2


def test_a_policy_that_says_no_gets_no_notice(tmp_path: Path) -> None:
    dc = delivery_home(tmp_path)
    env = envelope(ack_policy={**QUICK, "notify_on_ack": False, "notify_on_timeout": False})
    drop(dc, env)
    dc.mailman(Mailman(), now=T0)
    dc.mailman(Mailman(), now=T0 + timedelta(minutes=2))
    dc.ack(Ack(entity_id="tariq", ref=env["envelope_id"]), now=T0 + timedelta(minutes=3))
    t = _tracker(dc, env["envelope_id"])
    assert (t["ack_state"], t["ack_late"], t["ack_notice"], t["timeout_notice"]) == ("acked", True, None, None)
    assert _notices(dc, "ack") == [] == _notices(dc, "timeout")


def test_agent_turn_nudge_runs_each_notice_once_naming_the_sender(tmp_path: Path) -> None:
    dc, marker = nudging_home(tmp_path)
    s = dc.send(Send(type="task", recipient="tariq", sender="kimi", subject="review", work_item_id="wi-7",
                     ack_timeout=60, max_repings=0, escalation_target="none"), now=T0)
    other = dc.send(Send(type="task", recipient="tariq", sender="kimi", subject="other", work_item_id="wi-8",
                         ack_timeout=60, max_repings=0, escalation_target="none"), now=T0)
    dc.ack(Ack(entity_id="tariq", ref=s.envelope_id, status="rejected"), now=T0 + timedelta(seconds=10))
    assert _tracker(dc, s.envelope_id)["ack_notice"] == "not_attempted"  # the ack wrote nothing more
    for minute in (2, 3):  # the second pass claims nothing again
        dc.mailman(Mailman(), now=T0 + timedelta(minutes=minute))
    lines = marker.read_text().splitlines()
    to_sender = [line for line in lines if line.startswith("kimi|")]
    assert len(to_sender) == 2 and sum("rejected task" in x for x in to_sender) == 1
    assert sum("No ack from tariq" in x and str(other.envelope_id) in x for x in to_sender) == 1
    assert sorted(line.split("|")[0] for line in lines) == ["kimi", "kimi", "tariq", "tariq"]  # + the deliveries
    assert _tracker(dc, s.envelope_id)["ack_notice"] == "nudge_sent"
    assert _tracker(dc, other.envelope_id)["timeout_notice"] == "nudge_sent"
    claims = [n for n in kinds(dc, "tariq", "notify") if n.get("about") and n["outcome"] == "claimed"]
    assert len(claims) == 2 and {n["notify"] for n in claims} == {"kimi"}

"""``needs``: what waits on a person, each reason from the letters that make it, each with its age and the action
that clears it; narrowed by what the caller says its reader may read; nothing written by reading it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from deliveryhelpers import T0, delivery_home, drop
from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.verbs import EntityAdd, Intake, Mailman, Message, Move, Send
from helpers import snapshot

pytestmark = pytest.mark.files_only

PERSON = "human.alice"


def home(tmp: Path) -> Dovecote:
    """A person, an escalation to them, a blocked and an awaiting response, a clarification, an overdue ack, a
    plain note to the person, a quarantined envelope, and one item that waits on an agent alone."""
    dc = delivery_home(tmp)
    dc.add_entity(EntityAdd(entity_id=PERSON))
    dc.send(Send(type="task", recipient="tariq", sender="aya", subject="review", work_item_id="wi-1", max_repings=0,
                 escalation_target=PERSON), now=T0)
    dc.mailman(Mailman(), now=T0 + timedelta(hours=1))  # timed out: escalated to the person
    parent = dc.send(Send(type="task", recipient="tariq", sender="aya", subject="build", work_item_id="wi-2",
                          ack_required=False), now=T0).envelope_id
    for subject, extra in (("stuck", {"blocker_flag": True}), ("which key?", {"status": "awaiting_input"}),
                           ("what scope?", {"response_type": "clarification", "status": "in_progress"}),
                           ("done", {})):
        dc.send(Send(type="response", recipient="aya", sender="tariq", subject=subject, work_item_id="wi-2",
                     parent_id=parent, ack_required=False, **extra), now=T0 + timedelta(minutes=5))
    dc.send(Message(recipient=PERSON, sender="aya", subject="lunch?"), now=T0 + timedelta(minutes=10))
    drop(dc, b"{not json", name="bad.json")
    dc.intake(Intake(), now=T0)
    return dc


def test_each_reason_with_its_age_and_action(tmp_path: Path) -> None:
    dc = home(tmp_path)
    before = snapshot(dc.layout.root)
    got = builtins(dc.needs(now=T0 + timedelta(hours=3)))
    assert snapshot(dc.layout.root) == before  # a read: nothing appended, nothing moved
    rows = {(n["reason"], n["what"].split(" ")[0]) for n in got["needs"]}
    assert {("escalation", "Escalation:"), ("blocker", "stuck"), ("awaiting_input", "which"),
            ("clarification", "what"), ("addressed_to_person", "lunch?"),
            ("quarantined", "intake")} <= rows | {(r, w.capitalize()) for r, w in rows}, rows
    assert not any(n["what"] == "done" for n in got["needs"])  # a plain result waits on no person
    assert got["count"] == len(got["needs"]) == sum(got["by_reason"].values())
    by = {n["reason"]: n for n in got["needs"]}
    assert by["blocker"]["action"] == "reply" and by["blocker"]["path"] == f"/entities/aya/items/{by['blocker']['ref']}"
    assert by["blocker"]["age_hours"] == pytest.approx(2.9, abs=0.1)
    assert by["escalation"]["box"] == f"entity:{PERSON}" and by["quarantined"]["action"] == "inspect"
    assert [n["since"] for n in got["needs"] if n["since"]] == sorted(n["since"] for n in got["needs"] if n["since"])


def test_what_the_reader_may_not_read_is_left_out(tmp_path: Path) -> None:
    dc = home(tmp_path)
    own = builtins(dc.needs(lambda e: e == "aya", everything=False, now=T0 + timedelta(hours=3)))
    assert {n["box"] for n in own["needs"]} == {"entity:aya"}
    assert {n["reason"] for n in own["needs"]} == {"blocker", "awaiting_input", "clarification"}


def test_an_item_moved_on_no_longer_waits(tmp_path: Path) -> None:
    dc = home(tmp_path)
    got = builtins(dc.needs(now=T0 + timedelta(hours=3)))
    (note,) = [n for n in got["needs"] if n["reason"] == "addressed_to_person"]
    for kind in ("seen", "claim", "complete"):
        dc.move(Move(kind=kind, entity_id=PERSON, ref=note["ref"]), actor=PERSON)
    after = builtins(dc.needs(now=T0 + timedelta(hours=3)))
    assert note["ref"] not in {n["ref"] for n in after["needs"]} and after["count"] == got["count"] - 1


def test_a_mission_waiting_for_a_gesture_and_a_red_sentinel(tmp_path: Path) -> None:
    from dovecote import verbs
    from helpers import add_project, new_home, run_cli
    from missionhelpers import VECTOR_AGENT, for_phase

    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    dc.block_add(verbs.BlockAdd(block_id="sb_alpha", project="repo-a"))
    first = builtins(dc.mission_post(verbs.MissionPost(letter=for_phase("judging", 1, None), as_project="repo-a"),
                                     actor=VECTOR_AGENT))
    assert builtins(dc.needs())["by_reason"]["mission_gesture"] == 0  # judging waits on agents
    dc.mission_post(verbs.MissionPost(letter=for_phase("failed", 2, first["letter_id"]), as_project="repo-a"),
                    actor=VECTOR_AGENT)
    (gesture,) = builtins(dc.needs())["needs"]
    assert (gesture["reason"], gesture["action"], gesture["path"]) == (
        "mission_gesture", "gesture", f"/missions?mission={first['mission_id']}")
    ids = [run_cli(tmp_path, "report", "--tool", "seek", "--class", "honesty", "--symptom", "false_absence",
                   "--what", f"empty answer {k}", "--repo", "repo-a", home=dc.layout.root).stdout.decode().split()[0]
           for k in range(2)]
    dc.receipt(verbs.Receipt(answers=ids, disposition=verbs.Disposition.fixed, sentinel_probe="echo still-broken"))
    assert builtins(dc.needs())["by_reason"]["red_sentinel"] == 0  # guarded until a probe runs red
    dc.sentinels(verbs.Sentinels())
    red = [n for n in builtins(dc.needs())["needs"] if n["reason"] == "red_sentinel"]
    assert [(n["ref"], n["action"]) for n in red] == [("fp:seek/false_absence", "fix")]

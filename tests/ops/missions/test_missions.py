"""Missions through the handle, on both stores: blocks, posting (guards, compare-and-swap, dedup),
reading heads and chains, receipt import and archive as human gestures, and what sweeps never count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from helpers import add_project, box_bytes, new_home, rep
from missionhelpers import PASSPHRASE, VECTOR, VECTOR_AGENT, VECTOR_ID, candidate, for_phase, keyed, letter

pytestmark = pytest.mark.both_stores
MID = VECTOR["mission_id"]


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    dc.block_add(verbs.BlockAdd(block_id="sb_alpha", project="repo-a"))
    return dc


def post(dc: Dovecote, data: dict[str, Any], project: str | None = "repo-a", agent: str = VECTOR_AGENT
         ) -> dict[str, Any]:
    return builtins(dc.mission_post(verbs.MissionPost(letter=data, as_project=project), actor=agent))


def refused(fn: Any, *args: Any, **kw: Any) -> Refusal:
    with pytest.raises(Refusal) as e:
        fn(*args, **kw)
    return e.value


def walk(dc: Dovecote, phases: list[str], project: str | None = "repo-a") -> list[str]:
    ids: list[str] = []
    for seq, phase in enumerate(phases, 1):
        ids.append(post(dc, for_phase(phase, seq, ids[-1] if ids else None), project)["letter_id"])
    return ids


def test_the_vector_posted_as_m1nd_does_gets_m1nds_id_and_replays_dedup(dc: Dovecote) -> None:
    got = post(dc, VECTOR)
    assert got == {"letter_id": VECTOR_ID, "mission_id": MID, "mission_seq": 1, "phase": "judging",
                   "box": "project:repo-a", "deduped": False}
    before = box_bytes(dc, _box("repo-a"))
    assert post(dc, VECTOR)["deduped"] is True
    assert box_bytes(dc, _box("repo-a")) == before


def _box(name: str) -> Any:
    from dovecote.model.addresses import project

    return project(name)


def test_blocks_are_letters_and_the_registry_is_derived(dc: Dovecote) -> None:
    again = dc.block_add(verbs.BlockAdd(block_id="sb_alpha", project="repo-a"))
    assert again.appended is False and again.boundary_version == 1
    bumped = dc.block_bump(verbs.BlockBump(block_id="sb_alpha"))
    assert bumped.boundary_version == 2 and bumped.store_version == 0
    listed = dc.blocks(verbs.Blocks(project="repo-a"))
    assert [(b.block_id, b.boundary_version) for b in listed.blocks] == [("sb_alpha", 2)]
    assert listed.skeletons == {"repo-a": "skeleton:repo-a"}
    assert refused(dc.block_bump, verbs.BlockBump(block_id="sb_none")).reason == "unknown_block"
    assert refused(dc.block_add, verbs.BlockAdd(block_id="b", project="nope")).reason == "unknown_project"


def test_the_guards(dc: Dovecote) -> None:
    before = box_bytes(dc, _box("repo-a"))
    assert refused(post, dc, {**VECTOR, "brain_ref": "repo-b"}).reason == "brain_mismatch"
    assert refused(post, dc, {**VECTOR, "block_id": "sb_beta"}).reason == "unknown_block"
    assert refused(post, dc, {**VECTOR, "phase": "judging", "receipt_candidate": candidate(boundary=7)}
                   ).reason == "stale_scope"
    assert refused(post, dc, {**VECTOR, "receipt_candidate": candidate(block="sb_gone")}).reason == "unknown_block"
    assert refused(post, dc, {**VECTOR, "phase": "archived"}).reason == "human_gesture_required"
    assert refused(post, dc, VECTOR, agent="dovecote:engine").reason == "reserved_agent"
    assert refused(post, dc, VECTOR, agent="Dovecote:\u200bEngine").reason == "reserved_agent"  # a look-alike too
    assert box_bytes(dc, _box("repo-a")) == before
    assert post(dc, {**VECTOR, "block_id": "skeleton:repo-a"})["mission_seq"] == 1  # the skeleton anchors
    assert post(dc, {**VECTOR, "mission_id": "msn_00000000000f", "block_id": "x", "synthetic": True})


def test_an_unbound_caller_posts_to_home_and_may_name_any_project(dc: Dovecote) -> None:
    got = post(dc, VECTOR, project=None)
    assert got["box"] == "home"
    assert refused(post, dc, {**VECTOR, "mission_id": "msn_00000000000e", "brain_ref": "elsewhere"},
                   project=None).reason == "unknown_block"


def test_the_compare_and_swap(dc: Dovecote) -> None:
    first = post(dc, VECTOR)["letter_id"]
    before = box_bytes(dc, _box("repo-a"))
    r = refused(post, dc, letter(2, "0123456789ab", "executing"))
    assert r.reason == "stale_head" and first in r.detail and "0123456789ab" in r.detail
    assert r.extra == {"expected_head": first, "given": "0123456789ab"}
    assert refused(post, dc, letter(3, first, "executing")).reason == "stale_head"
    assert refused(post, dc, {**VECTOR, "updated_at": "2026-07-09T09:00:00Z"}).reason == "stale_head"
    assert refused(post, dc, for_phase("merge_wait", 2, first)).reason == "invalid_transition"
    assert box_bytes(dc, _box("repo-a")) == before
    assert post(dc, letter(2, first, "executing"))["mission_seq"] == 2


def test_a_chain_must_start_at_judging(dc: Dovecote) -> None:
    assert refused(post, dc, letter(1, None, "executing")).reason == "invalid_transition"


def test_the_full_flow_with_the_gestures(dc: Dovecote) -> None:
    keyed(dc)
    ids = walk(dc, ["judging", "executing", "gate", "merge_wait"])
    listed = builtins(dc.missions(verbs.Missions()))
    assert listed["landing"] == 1 and listed["count"] == 1 and listed["by_phase"]["merge_wait"] == 1
    (head,) = listed["missions"]
    assert head["head_letter_id"] == ids[-1] and head["superseded_count"] == 3 and head["box"] == "project:repo-a"
    # a landed letter before the import claims a receipt no person imported: the agent may post it only once
    # a person has imported (store_version comes from the import)
    before = box_bytes(dc, _box("repo-a"))
    imp = verbs.ReceiptImport(mission_id=MID)
    assert refused(dc.receipt_import, imp).reason == "human_gesture_required"
    assert refused(dc.receipt_import, imp, gesture="agent", passphrase=PASSPHRASE
                   ).reason == "human_gesture_required"
    assert box_bytes(dc, _box("repo-a")) == before
    got = builtins(dc.receipt_import(imp, gesture="terminal", passphrase=PASSPHRASE, actor="human.me"))
    assert got["store_version"] == 1 and got["candidate_letter_id"] == ids[-1] and got["deduped"] is False
    assert builtins(dc.receipt_import(imp, gesture="terminal", passphrase=PASSPHRASE))["deduped"] is True
    assert dc.blocks(verbs.Blocks()).blocks[0].store_version == 1
    landed = post(dc, for_phase("landed", 5, ids[-1]))
    arch = verbs.MissionArchive(mission_id=MID)
    assert refused(dc.mission_archive, arch).reason == "human_gesture_required"
    done = builtins(dc.mission_archive(arch, gesture="human-view", passphrase=PASSPHRASE, actor="human.me"))
    assert done["phase"] == "archived" and done["mission_seq"] == 6
    shown = builtins(dc.mission(verbs.Mission(mission_id=MID)))
    assert [e["phase"] for e in shown["chain"]] == ["judging", "executing", "gate", "merge_wait", "landed",
                                                   "archived"]
    assert shown["chain"][4]["letter_id"] == landed["letter_id"] and shown["chain"][5]["agent"] == "human.me"
    assert refused(dc.mission_archive, arch, gesture="terminal", passphrase=PASSPHRASE
                   ).reason == "invalid_transition"
    assert refused(post, dc, letter(7, done["letter_id"], "executing")).reason == "invalid_transition"


def test_landed_stands_only_on_an_import_the_block_registry_records(dc: Dovecote) -> None:
    """The letter's own receipt {imported: true, store_version} is a claim; landed_law unless a person's import of
    this mission's candidate (of the merge_wait head it follows) at that store version is in the registry."""
    ids = walk(dc, ["judging", "executing", "gate", "merge_wait"])
    before = box_bytes(dc, _box("repo-a"))
    r = refused(post, dc, for_phase("landed", 5, ids[-1]))  # an agent forging the claim: no import yet
    assert r.reason == "landed_law" and "receipt import" in r.detail and ids[-1] in r.detail
    assert box_bytes(dc, _box("repo-a")) == before
    keyed(dc)
    imp = verbs.ReceiptImport(mission_id=MID)
    dc.receipt_import(imp, gesture="terminal", passphrase=PASSPHRASE, actor="human.me")
    before = box_bytes(dc, _box("repo-a"))
    landed_at_2 = for_phase("landed", 5, ids[-1], receipt={"imported": True, "store_version": 2})
    assert refused(post, dc, landed_at_2).reason == "landed_law"  # not the store version imported
    assert box_bytes(dc, _box("repo-a")) == before
    # back to work and a new merge_wait: the earlier import was of the earlier candidate, so it lands nothing
    for seq, phase in enumerate(["executing", "gate", "merge_wait"], 5):
        ids.append(post(dc, for_phase(phase, seq, ids[-1]))["letter_id"])
    assert refused(post, dc, for_phase("landed", 8, ids[-1])).reason == "landed_law"
    builtins(dc.receipt_import(imp, gesture="terminal", passphrase=PASSPHRASE, actor="human.me"))  # store version 2 now
    assert refused(post, dc, for_phase("landed", 8, ids[-1])).reason == "landed_law"  # it claims 1
    got = post(dc, for_phase("landed", 8, ids[-1], receipt={"imported": True, "store_version": 2}))
    assert got["phase"] == "landed" and got["mission_seq"] == 8


def test_landed_law_holds_for_a_mission_in_home_and_one_naming_no_project(dc: Dovecote) -> None:
    """An unbound caller posts into home: the import is looked for in its brain_ref project's registry."""
    ids = walk(dc, ["judging", "executing", "gate", "merge_wait"], project=None)
    assert refused(post, dc, for_phase("landed", 5, ids[-1]), None).reason == "landed_law"
    keyed(dc)
    dc.receipt_import(verbs.ReceiptImport(mission_id=MID), gesture="terminal", passphrase=PASSPHRASE)
    assert post(dc, for_phase("landed", 5, ids[-1]), None)["box"] == "home"
    probe = {**VECTOR, "mission_id": "msn_00000000000c", "brain_ref": "nowhere", "synthetic": True}
    pids = [post(dc, probe, None)["letter_id"]]
    for seq, phase in enumerate(["executing", "gate", "merge_wait"], 2):
        pids.append(post(dc, {**for_phase(phase, seq, pids[-1]), **{k: probe[k] for k in
                                                                    ("mission_id", "brain_ref", "synthetic")}},
                         None)["letter_id"])
    landed = {**for_phase("landed", 5, pids[-1]), **{k: probe[k] for k in ("mission_id", "brain_ref", "synthetic")}}
    r = refused(post, dc, landed, None)
    assert r.reason == "landed_law" and "no reachable block registry" in r.detail


def test_a_gesture_needs_the_persons_passphrase(dc: Dovecote) -> None:
    """No passphrase set, none given, a wrong one, or no face's origin: human_gesture_required, nothing
    appended; the right one typed at a face makes the gesture."""
    ids = walk(dc, ["judging", "executing", "gate", "merge_wait"])
    imp = verbs.ReceiptImport(mission_id=MID)
    before = box_bytes(dc, _box("repo-a"))
    r = refused(dc.receipt_import, imp, gesture="terminal", passphrase=PASSPHRASE)
    assert r.reason == "human_gesture_required" and "dovecote gesture-key set" in r.detail  # none set yet
    keyed(dc)
    for kw in ({"gesture": "terminal"}, {"gesture": "terminal", "passphrase": "kestrel"},
               {"gesture": "human-view", "passphrase": PASSPHRASE.upper()}, {"passphrase": PASSPHRASE}):
        assert refused(dc.receipt_import, imp, **kw).reason == "human_gesture_required", kw
        assert refused(dc.mission_archive, verbs.MissionArchive(mission_id=MID), **kw
                       ).reason == "human_gesture_required", kw
    assert box_bytes(dc, _box("repo-a")) == before
    assert builtins(dc.receipt_import(imp, gesture="terminal", passphrase=PASSPHRASE))["candidate_letter_id"] == ids[-1]


def test_import_refusals(dc: Dovecote) -> None:
    keyed(dc)
    ids = walk(dc, ["judging", "executing", "gate"])
    imp = verbs.ReceiptImport(mission_id=MID)
    assert refused(dc.receipt_import, imp, gesture="terminal", passphrase=PASSPHRASE).reason == "invalid_phase"
    post(dc, for_phase("merge_wait", 4, ids[-1]))
    dc.block_bump(verbs.BlockBump(block_id="sb_alpha", project="repo-a"))
    r = refused(dc.receipt_import, imp, gesture="terminal", passphrase=PASSPHRASE)
    assert r.reason == "stale_scope" and r.extra == {"expected": 2, "given": 1}
    assert dc.blocks(verbs.Blocks()).blocks[0].store_version == 0
    assert refused(dc.mission, verbs.Mission(mission_id="msn_ffffffffffff")).reason == "unknown_mission"
    assert refused(dc.mission_archive, verbs.MissionArchive(mission_id=MID), gesture="terminal",
                   passphrase=PASSPHRASE).reason == "invalid_transition"


def test_mission_letters_are_never_field_reports_nor_open(dc: Dovecote) -> None:
    dc.report([verbs.decode(verbs.Report, rep("a bug", repo="repo-a"))])
    dc.distribute()
    walk(dc, ["judging", "executing", "gate", "merge_wait"])
    walk(dc, ["judging"], project=None)
    s = dc.sweep().to_dict()
    assert s["total"] == 1 and s["open"] == 1 and len(s["letters"]) == 1
    box = dc.box(verbs.Box(address="project:repo-a", include_all=True)).to_dict()
    assert box["total"] == 1 and box["open"] == 1
    assert builtins(dc.missions(verbs.Missions(project="repo-a")))["count"] == 1
    assert builtins(dc.missions(verbs.Missions()))["count"] == 2


def test_no_token_reaches_a_human_gesture() -> None:
    """The gestures are no REST route, no MCP tool and no remote call: only a terminal or the page's session."""
    from dovecote.handle import remote
    from dovecote.http import rest
    from dovecote.mcp.tools import TOOLS

    gestures = {"mission_archive", "receipt_import"}
    assert gestures <= set(verbs.VERBS) and gestures <= verbs.WRITES
    assert not gestures & ({r.verb for r in rest.ROUTES} | set(TOOLS) | set(remote.CALLS))


def test_m1nd_lines_already_in_a_box_are_read_as_they_are(dc: Dovecote, tmp_path: Path) -> None:
    """A line m1nd wrote (its own layout) is the chain's root; a dovecote post continues it."""
    from dovecote.derive.missions.letter import line_of, validate

    line = line_of(validate(VECTOR), VECTOR_AGENT)
    dc.store.append(_box("repo-a"), [line])
    assert builtins(dc.mission(verbs.Mission(mission_id=MID)))["head_letter_id"] == VECTOR_ID
    assert post(dc, letter(2, VECTOR_ID, "executing"))["mission_seq"] == 2

"""``import vnext`` counts what the vNext status view counts (``reference_vnext_status``), and migrates as vNext does.

Fixture directories are written by ``vnext_fixture.VnextDir`` the way the vNext
scripts write them; generated directories mix legacy and v3 trackers with
drifted, missing and oddly typed fields. The importer's dry run must print,
for every one of them, the same ``tracker_counts`` (and per-axis counts) as
the reference.
"""

from __future__ import annotations

import json
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dovecote.derive.delivery import vnext_trackers as vt
from dovecote.verbs import ImportVnext
from helpers import new_home, run_cli
from reference_vnext_status import (
    ref_ack_state,
    ref_drift,
    ref_migrate,
    ref_operator_notify,
    reference_counts,
    reference_status,
)
from vnext_fixture import (
    AGENTS,
    STATE_COUNTS,
    T0,
    VnextDir,
    busy,
    busy_with_legacy,
    home_with_agents,
    vnext_counts_of,
    write_json,
)

SECTIONS = ("tracker_counts", "delivery_state_counts", "ack_state_counts", "live_notify_state_counts",
            "schema_drift_counts")


def dry_run(tmp: Path, root: Path) -> dict[str, Any]:
    dc = new_home(tmp / "home")
    return dc.import_vnext(ImportVnext(path=str(root))).to_dict()


def assert_same_counts(tmp: Path, root: Path) -> dict[str, Any]:
    got, want = dry_run(tmp, root), reference_status(root)
    for key in SECTIONS:
        assert got[key] == want[key], key
    assert got["intake"]["pending"] == want["intake_pending_count"]
    return got


def test_a_busy_directory_counts_as_the_status_view_counts(tmp_path: Path) -> None:
    root = tmp_path / "mailbox"
    busy_with_legacy(root)
    got = assert_same_counts(tmp_path, root)
    assert got["tracker_counts"] == {
        "total": 7, "pending_ack": 1, "acked": 3, "rejected": 1, "timed_out": 2, "escalated": 3,
        "legacy_compat_only": 3, "schema_drifted": 3,
    }
    assert got["intake"] == {"pending": 1, "processed": 5, "quarantine": 0}
    assert got["live_notify_state_counts"]["legacy_nudge_attempted"] == 2
    assert got["acks"]["files"] == 1


def test_drift_is_counted_as_written_not_after_normalization(tmp_path: Path) -> None:
    """B13.3: vNext migrated first and so always counted 0 drifted; a legacy file is drifted until migrated."""
    root = tmp_path / "mailbox"
    v = VnextDir(root)
    v.legacy("jabari", "tariq", ack_status="pending")
    assert dry_run(tmp_path, root)["tracker_counts"]["schema_drifted"] == 1
    assert dry_run(tmp_path / "again", root)["tracker_counts"]["legacy_compat_only"] == 1
    v.tick(T0)  # the vNext mailman migrates trackers in place: then the file is v3 and not drifted
    got = assert_same_counts(tmp_path / "third", root)
    assert got["tracker_counts"]["schema_drifted"] == 0 and got["tracker_counts"]["pending_ack"] == 1


def test_the_cli_prints_the_tracker_block_the_status_view_prints(tmp_path: Path) -> None:
    root = tmp_path / "mailbox"
    busy(root).legacy("jabari", "tariq", ack_status="acked")
    home = tmp_path / "home"
    new_home(home)
    res = run_cli(tmp_path, "import", "vnext", str(root), home=home / "owner" / ".dovecote")
    assert res.returncode == 0, res.stderr
    counts = reference_status(root)["tracker_counts"]
    block = "Trackers:\n" + "".join(f"  - {k}: {counts[k]}\n" for k in vt.COUNT_KEYS)
    assert block in res.stdout.decode()


# -- generated directories ---------------------------------------------------------

TIMES = st.sampled_from(["2026-03-10T10:00:00+00:00", "2026-03-10T10:05:00Z", None, ""])
ODD = st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.text("abx_", max_size=3))
ACK_STATES = st.one_of(st.sampled_from(["pending", "acked", "rejected", "timed_out", "unknown", ""]), ODD)
LEGACY_STATUS = st.one_of(st.sampled_from(["pending", "acked", "rejected", "timed_out", "escalated"]), ODD)
NOTIFY = st.one_of(st.sampled_from(["not_attempted", "nudge_sent", "nudge_failed", "disabled", "discovered_only",
                                    "attempted_legacy"]), ODD)
MODES = st.one_of(st.sampled_from(["none", "discover-only", "agent-turn-nudge"]), st.none())
ADAPTERS = st.one_of(st.sampled_from(["legacy_ping", "session_discovery", "disabled", "openclaw-agent-cli"]),
                     st.none())
OPTIONAL: dict[str, st.SearchStrategy[Any]] = {
    "schema_version": st.sampled_from(["mailbox-tracker-v3", "mailbox-tracker-v2", None]),
    "ack_state": ACK_STATES, "ack_status": LEGACY_STATUS, "escalated": ODD,
    "delivery_state": st.one_of(st.just("durably_delivered"), ODD), "delivered_ts": TIMES,
    "file_delivery": st.one_of(st.none(), st.just({"path": "x"})),
    "live_notify_state": NOTIFY, "notify_mode": MODES, "adapter": ADAPTERS, "last_ping_ts": TIMES,
    "session_delivery": st.one_of(st.none(), st.just({"method": "session_discovery_only"}), st.just({"method": "x"})),
    "event_family": st.just("comms/delivery"), "state_class": st.just("delivery_state"),
    "component": st.sampled_from(["haiku_mailman", ""]), "provenance_writer": st.just("receipt_watcher"),
    "receipt_path": st.none(), "reping_count": st.integers(0, 3),
    "migration_inference": st.just({"ack_state": "migration:derived_ack_state"}),
    "legacy_fields_preserved": st.just({"ack_status": "pending"}),
}


@st.composite
def trackers(draw: st.DrawFn) -> dict[str, Any]:
    """A tracker of any vintage: each optional field present or absent, with plausible or odd values."""
    keys = draw(st.sets(st.sampled_from(sorted(OPTIONAL))))
    t: dict[str, Any] = {"delivery_id": f"del_{draw(st.integers(0, 10**6))}", "envelope_id": "env_1",
                         "recipient": draw(st.sampled_from(AGENTS)), "sender": "aya"}
    for k in sorted(keys):
        t[k] = draw(OPTIONAL[k])
    return t


@given(st.lists(trackers(), max_size=12))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_generated_directories_count_as_the_status_view(ts: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "mailbox"
        (root / "haiku" / "tracking").mkdir(parents=True)
        for n, t in enumerate(ts):
            write_json(root / "haiku" / "tracking" / f"del_{n:03d}.json", t)
        assert_same_counts(Path(d), root)


@given(st.lists(trackers(), max_size=30))
@settings(max_examples=200, deadline=None)
def test_the_pure_counts_equal_the_reference(ts: list[dict[str, Any]]) -> None:
    got = vt.summarize(vt.view(t) for t in ts).to_dict()
    want = reference_counts(ts)
    assert {k: got[k] for k in SECTIONS} == want


@given(trackers())
@settings(max_examples=300, deadline=None)
def test_migration_is_vnexts_additive_migration(t: dict[str, Any]) -> None:
    m = vt.migrate(t, "2026-03-10T11:00:00+00:00")
    want, changed = ref_migrate(t)
    assert m.changed == changed
    assert {k: v for k, v in m.tracker.items() if k not in ("migrated_at", "migration_notes")} == want
    for k, v in t.items():  # additive: nothing is removed; the schema version and a null notify_mode are set
        if k not in ("schema_version", "migration_inference", "legacy_fields_preserved") and (k, v) != (
            "notify_mode", None
        ):
            assert m.tracker[k] == v
    if changed:
        assert m.tracker["migration_version"] == vt.MIGRATION_V1 and m.tracker["migrated_at"]
        assert set(m.tracker["migration_inference"]) >= {k for k in vt.drift(t) if k == "schema_version"}
    assert vt.migrate(m.tracker, "later").changed is False  # a migrated tracker is v3: migrating again is a no-op
    assert vt.drift(m.tracker) == [] and ref_drift(m.tracker) == []
    assert vt.ack_state(m.tracker) == ref_ack_state(want) and vt.operator_notify(m.tracker) == ref_operator_notify(want)


def test_a_legacy_tracker_is_normalized_with_its_reasons_and_lineage() -> None:
    legacy = {"delivery_id": "del-1", "envelope_id": "env-1", "recipient": "tariq",
              "delivered_ts": "2026-03-09T02:11:50+00:00",
              "ack_status": "escalated", "escalated": True, "last_ping_ts": "2026-03-09T02:24:43+00:00",
              "receipt_path": "/x/receipts.jsonl"}
    m = vt.migrate(legacy, "2026-03-10T00:00:00+00:00").tracker
    assert m["schema_version"] == "mailbox-tracker-v3" and m["ack_state"] == "timed_out"
    assert m["legacy_fields_preserved"] == {"ack_status": "escalated", "receipt_path": "/x/receipts.jsonl"}
    assert m["ack_status"] == "escalated"  # kept where it was too
    assert m["migration_inference"] == {
        "ack_state": "migration:derived_ack_state", "adapter": "migration:derived_from_last_ping",
        "component": "migration:legacy_tracker_component", "delivery_state": "migration:derived_delivery_state",
        "event_family": "migration:default_delivery_family",
        "live_notify_state": "migration:derived_live_notify_state",
        "notify_mode": "migration:derived_from_last_ping", "provenance_writer": "migration:derived_provenance_writer",
        "schema_version": "migration:set_tracker_schema_version",
        "state_class": "migration:default_delivery_tracker_state_class",
    }
    assert m["migration_version"] == "mailbox-tracker-migration-v1" and m["migrated_at"] == "2026-03-10T00:00:00+00:00"
    assert vt.operator_notify(m) == "legacy_nudge_attempted" and m["live_notify_state"] == "attempted_legacy"


def test_a_real_vnext_tracker_file_reads_as_vnext_reads_it(tmp_path: Path) -> None:
    """The shape of the repository's own ``del-2026-03-09-*`` files (legacy, acked late after escalating)."""
    root = tmp_path / "mailbox"
    write_json(root / "haiku" / "tracking" / "del-2026-03-09-021150-9214.json", json.loads(
        '{"delivery_id": "del-2026-03-09-021150-9214", "envelope_id": "env-2026-03-09-021150-3354",'
        ' "thread_id": "wi-ping-test-001", "work_item_id": "wi-ping-test-001", "sender": "jabari",'
        ' "recipient": "tariq", "delivered_ts": "2026-03-09T02:11:50+00:00", "ack_due_ts": "2026-03-09T02:29:43+00:00",'
        ' "ack_status": "acked", "ack_ts": "2026-03-09T07:14:23+00:00", "last_ping_ts": "2026-03-09T02:24:43+00:00",'
        ' "reping_count": 2, "max_repings": 2, "reping_interval_s": 300, "notify_on_delivery": true,'
        ' "notify_on_ack": true, "notify_on_timeout": true, "escalation_target": "aya", "escalated": true,'
        ' "receipt_path": null}'))
    got = assert_same_counts(tmp_path, root)
    assert got["tracker_counts"] == {"total": 1, "pending_ack": 0, "acked": 1, "rejected": 0, "timed_out": 0,
                                     "escalated": 1, "legacy_compat_only": 1, "schema_drifted": 1}


# -- generated histories: the vNext scripts run in any order -------------------------

STEPS = st.lists(st.one_of(
    st.tuples(st.just("send"), st.sampled_from(AGENTS), st.sampled_from(AGENTS), st.booleans(),
              st.sampled_from(["aya", "none"]), st.integers(0, 2)),
    st.tuples(st.just("mailman"), st.integers(0, 40)),
    st.tuples(st.just("ack"), st.integers(0, 20), st.sampled_from(["accepted", "rejected"])),
    st.tuples(st.just("watch")),
    st.tuples(st.just("legacy"), st.sampled_from(["pending", "acked", "rejected", "escalated", "timed_out"]),
              st.booleans(), st.booleans()),
), max_size=25)


def play(root: Path, steps: list[tuple[Any, ...]]) -> None:
    """Run the vNext scripts in the order ``steps`` says, over the directory ``root``."""
    v = VnextDir(root)
    sent: list[dict[str, Any]] = []
    clock = T0
    for step in steps:
        if step[0] == "send":
            _, frm, to, ack, target, repings = step
            sent.append(v.send(frm, to, at=clock, ack_required=ack, escalation_target=target,
                               max_repings=repings))
        elif step[0] == "mailman":
            clock += timedelta(minutes=step[1])
            v.mailman(clock)
        elif step[0] == "ack" and sent:
            env = sent[step[1] % len(sent)]
            v.ack(env["to"], env["envelope_id"], clock, status=step[2])
        elif step[0] == "watch":
            v.watch(clock)
        elif step[0] == "legacy":
            v.legacy("kimi", "tariq", ack_status=step[1], escalated=step[2], pinged=step[3])


@given(STEPS)
@settings(max_examples=40, deadline=None)
def test_generated_histories_count_as_the_status_view(steps: list[tuple[Any, ...]]) -> None:
    """Sends (with and without acks, escalating or not), mailman loops at any time, acks late or early,
    watcher passes, legacy trackers: whatever the scripts left behind, the counts are vNext's."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "mailbox"
        play(root, steps)
        got = assert_same_counts(Path(d), root)
        assert got["tracker_counts"]["total"] == len(list((root / "haiku" / "tracking").glob("*.json")))


@given(STEPS)
@settings(max_examples=25, deadline=None)
def test_after_importing_generated_histories_dovecotes_trackers_count_as_the_dry_run(
    steps: list[tuple[Any, ...]],
) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "mailbox"
        play(root, steps)
        dc = home_with_agents(Path(d))
        dry = dc.import_vnext(ImportVnext(path=str(root))).to_dict()
        dc.import_vnext(ImportVnext(path=str(root), write=True))
        assert vnext_counts_of(dc) == {k: dry["tracker_counts"][k] for k in STATE_COUNTS}


def test_the_dry_run_lists_each_normalized_tracker_with_its_reasons(tmp_path: Path) -> None:
    root = tmp_path / "mailbox"
    v = busy(root)
    legacy = v.legacy("jabari", "tariq", ack_status="acked", escalated=True)
    got = dry_run(tmp_path, root)
    (only,) = got["migrated_trackers"]  # the v3 trackers the mailman wrote need nothing
    assert only["delivery_id"] == legacy["delivery_id"] and only["recipient"] == "tariq"
    assert only["legacy_fields_preserved"] == {"ack_status": "acked", "receipt_path": None}
    assert only["migration_inference"]["ack_state"] == "migration:derived_ack_state"
    assert "legacy_ack_status" in only["schema_drift"] and got["needs_migration"] == 1

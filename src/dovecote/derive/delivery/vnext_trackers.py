"""vNext trackers as values: legacy -> v3 migration, schema drift, and the status view's counts.

Pure: a tracker is the ``dict`` its JSON file holds; nothing here reads a file
or a clock (the migration time is an argument). The rules are the vNext
tools' own (notes B4, B10, B11), so ``import vnext`` prints the counts the
vNext status view prints for the same directory, with one defect fixed:

* **Drift is measured on the tracker as it is on disk** (``drift``), before
  any normalization. The vNext view migrated each tracker in memory first and
  measured drift on the result, so drift was always empty and
  ``schema_drifted``/``legacy_compat_only`` always 0 (B13.3).

Everything else follows vNext exactly, including its reading of JSON values
with Python truthiness (``"escalated": 1`` counts as escalated, an empty
``ack_state`` falls back to the legacy ``ack_status``) and ``str()`` of a
non-text state (a state ``5`` is counted under ``"5"``), because the point is
to count what the vNext view counts. ``tests/reference_vnext_status.py`` is the
spec these are checked against.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

TRACKER_V3 = "mailbox-tracker-v3"
MIGRATION_V1 = "mailbox-tracker-migration-v1"
MIGRATION_NOTES = (
    "Legacy tracker normalized toward v3 without deleting legacy fields; "
    "inferred values are listed in migration_inference."
)
#: The ack states the view counts (anything else counts toward ``total`` only).
COUNTED_ACK_STATES = ("pending", "acked", "rejected", "timed_out")
#: The keys of ``tracker_counts``, in the order the vNext view prints them.
COUNT_KEYS = ("total", "pending_ack", "acked", "rejected", "timed_out", "escalated", "legacy_compat_only",
              "schema_drifted")
#: Legacy fields the migration copies to ``legacy_fields_preserved`` (never deleted).
LEGACY_FIELDS = ("ack_status", "receipt_path", "session_delivery")
#: Drift checks: (name, the field whose absence is the drift). ``schema_version`` and
#: ``legacy_ack_status`` are checked by value below.
_MISSING = (
    ("missing_delivery_state", "delivery_state"),
    ("missing_live_notify_state", "live_notify_state"),
    ("missing_event_family", "event_family"),
    ("missing_state_class", "state_class"),
    ("missing_component", "component"),
    ("missing_provenance_writer", "provenance_writer"),
    ("missing_notify_mode", "notify_mode"),
    ("missing_adapter", "adapter"),
)


def _text(value: Any) -> str:
    """A JSON value as vNext's ``str()`` spells it (``True``, ``5``, ``['a']``)."""
    return value if isinstance(value, str) else str(value)


def _hashable(value: Any) -> bool:
    return not isinstance(value, (list, dict))


def _discovery_only(t: Mapping[str, Any]) -> bool:
    sd = t.get("session_delivery")
    return isinstance(sd, dict) and sd.get("method") == "session_discovery_only"


def ack_state(t: Mapping[str, Any]) -> str:
    """The ack axis: ``ack_state`` if set, else the legacy ``ack_status`` (``escalated`` -> timed_out)."""
    if t.get("ack_state"):
        return _text(t["ack_state"])
    legacy = t.get("ack_status")
    if _hashable(legacy) and legacy in COUNTED_ACK_STATES:
        return str(legacy)
    if legacy == "escalated" or t.get("escalated"):
        return "timed_out"
    return "unknown"


def delivery_state(t: Mapping[str, Any]) -> str:
    """The delivery axis: ``delivery_state`` if set, else durably_delivered when a delivery is on record."""
    if t.get("delivery_state"):
        return _text(t["delivery_state"])
    return "durably_delivered" if t.get("delivered_ts") or t.get("file_delivery") else "unknown"


def notify_state(t: Mapping[str, Any]) -> str:
    """The live-notify axis, raw: ``attempted_legacy`` stays as written (B4)."""
    if t.get("live_notify_state"):
        return _text(t["live_notify_state"])
    by_mode = {"none": "disabled", "discover-only": "discovered_only"}
    mode = t.get("notify_mode")
    if _hashable(mode) and mode in by_mode:
        return by_mode[mode]
    if _discovery_only(t):
        return "discovered_only"
    return "attempted_legacy" if t.get("last_ping_ts") else "not_attempted"


def operator_notify(t: Mapping[str, Any]) -> str:
    """The notify state as operators read it: ``attempted_legacy`` re-labelled, never rewritten."""
    raw = notify_state(t)
    if raw != "attempted_legacy":
        return raw
    if t.get("notify_mode") == "agent-turn-nudge" and t.get("adapter") == "legacy_ping":
        return "legacy_nudge_attempted"
    if t.get("notify_mode") == "discover-only" or t.get("adapter") == "session_discovery":
        return "legacy_discovery_only"
    return "legacy_unknown_attempt"


def drift(t: Mapping[str, Any]) -> list[str]:
    """How the tracker *as written* departs from v3, in vNext's order (empty: it is v3)."""
    out = [] if t.get("schema_version") == TRACKER_V3 else ["schema_version"]
    if "ack_state" not in t and "ack_status" in t:
        out.append("legacy_ack_status")
    return out + [name for name, key in _MISSING if key not in t]


@dataclass(frozen=True)
class Migration:
    """A tracker normalized to v3 (additive only) and whether anything changed."""

    tracker: dict[str, Any]
    changed: bool


def migrate(t: Mapping[str, Any], migrated_at: str | None) -> Migration:
    """``t`` normalized toward v3 the way vNext's ``migrate_tracker_record`` does (B10).

    Additive: legacy fields are copied to ``legacy_fields_preserved``, each
    missing field is filled with its reason in ``migration_inference``, and on
    any change the lineage fields are added. Nothing is removed or rewritten,
    except ``schema_version``, which becomes v3.
    """
    out = dict(t)
    inferred: dict[str, str] = dict(t.get("migration_inference") or {})
    preserved: dict[str, Any] = dict(t.get("legacy_fields_preserved") or {})
    changed = False
    for key in LEGACY_FIELDS:
        if key in t and key not in preserved:
            preserved[key] = t[key]
            changed = True
    if out.get("schema_version") != TRACKER_V3:
        out["schema_version"] = TRACKER_V3
        inferred["schema_version"] = "migration:set_tracker_schema_version"
        changed = True
    fills: tuple[tuple[str, Any, str], ...] = (
        ("delivery_state", delivery_state(t), "migration:derived_delivery_state"),
        ("ack_state", ack_state(t), "migration:derived_ack_state"),
        ("live_notify_state", notify_state(t), "migration:derived_live_notify_state"),
        ("event_family", "comms/delivery", "migration:default_delivery_family"),
        ("state_class", "delivery_state", "migration:default_delivery_tracker_state_class"),
        ("component", "legacy_tracker", "migration:legacy_tracker_component"),
    )
    for key, value, reason in fills:
        if key not in out:
            out[key] = value
            inferred[key] = reason
            changed = True
    if "provenance_writer" not in out:
        out["provenance_writer"] = out.get("component") or "legacy_tracker"
        inferred["provenance_writer"] = "migration:derived_provenance_writer"
        changed = True
    if out.get("notify_mode") is None:
        if t.get("session_delivery"):
            out["notify_mode"], inferred["notify_mode"] = "discover-only", "migration:derived_from_session_delivery"
        elif t.get("last_ping_ts"):
            out["notify_mode"], inferred["notify_mode"] = "agent-turn-nudge", "migration:derived_from_last_ping"
        else:
            out["notify_mode"], inferred["notify_mode"] = "none", "migration:default_none"
        changed = True
    if "adapter" not in out:
        if _discovery_only(t):
            out["adapter"], inferred["adapter"] = "session_discovery", "migration:derived_from_session_delivery"
        elif t.get("last_ping_ts"):
            out["adapter"], inferred["adapter"] = "legacy_ping", "migration:derived_from_last_ping"
        else:
            out["adapter"], inferred["adapter"] = None, "migration:adapter_unknown"
        changed = True
    if changed:
        out["migration_version"] = MIGRATION_V1
        out["migrated_at"] = migrated_at
        out["migration_inference"] = dict(sorted(inferred.items()))
        out["legacy_fields_preserved"] = preserved
        out["migration_notes"] = MIGRATION_NOTES
    return Migration(out, changed)


@dataclass(frozen=True)
class TrackerView:
    """One tracker as the status view reads it: migrated, its three axes, and its drift as written."""

    raw: Mapping[str, Any]
    migrated: dict[str, Any]
    changed: bool
    ack: str
    delivery: str
    notify: str
    notify_label: str
    drift: tuple[str, ...]

    @property
    def escalated(self) -> bool:
        return bool(self.migrated.get("escalated"))


def view(t: Mapping[str, Any], migrated_at: str | None = None) -> TrackerView:
    """The status view's reading of one tracker: states from the migrated record, drift from ``t``."""
    m = migrate(t, migrated_at)
    return TrackerView(
        raw=t, migrated=m.tracker, changed=m.changed, ack=ack_state(m.tracker), delivery=delivery_state(m.tracker),
        notify=notify_state(m.tracker), notify_label=operator_notify(m.tracker), drift=tuple(drift(t)),
    )


@dataclass
class TrackerSummary:
    """The status view's tracker sections: ``tracker_counts`` and the per-axis and drift counts."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_KEYS, 0))
    delivery_state_counts: dict[str, int] = field(default_factory=dict)
    ack_state_counts: dict[str, int] = field(default_factory=dict)
    live_notify_state_counts: dict[str, int] = field(default_factory=dict)
    schema_drift_counts: dict[str, int] = field(default_factory=dict)
    needs_migration: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "tracker_counts": dict(self.counts),
            "delivery_state_counts": dict(sorted(self.delivery_state_counts.items())),
            "ack_state_counts": dict(sorted(self.ack_state_counts.items())),
            "live_notify_state_counts": dict(sorted(self.live_notify_state_counts.items())),
            "schema_drift_counts": dict(sorted(self.schema_drift_counts.items())),
            "needs_migration": self.needs_migration,
        }


def summarize(views: Iterable[TrackerView]) -> TrackerSummary:
    """The counts of the vNext status view (B11) over ``views`` (drift counted as written)."""
    s = TrackerSummary()
    counts: Counter[str] = Counter()
    axes: tuple[Counter[str], ...] = (Counter(), Counter(), Counter(), Counter())
    for v in views:
        counts["total"] += 1
        if v.ack in COUNTED_ACK_STATES:
            counts["pending_ack" if v.ack == "pending" else v.ack] += 1
        counts["escalated"] += v.escalated
        counts["schema_drifted"] += bool(v.drift)
        counts["legacy_compat_only"] += "legacy_ack_status" in v.drift
        s.needs_migration += v.changed
        axes[0][v.delivery] += 1
        axes[1][v.ack] += 1
        axes[2][v.notify_label] += 1
        axes[3].update(v.drift)
    s.counts = {k: counts[k] for k in COUNT_KEYS}
    s.delivery_state_counts, s.ack_state_counts, s.live_notify_state_counts, s.schema_drift_counts = (
        dict(c) for c in axes
    )
    return s

"""The vNext status view's tracker counting, as the spec ``import vnext`` is checked against.

``derive.delivery.vnext_trackers`` is the implementation; this is the vNext view
(``mailbox_status.py``, notes B11, with B4 and B10) written out as plainly as
possible, one tracker file at a time, so the property tests can say "the
importer prints what vNext prints". It follows vNext step by step:

1. every ``haiku/tracking/*.json`` in name order is one tracker (``total``);
2. the tracker is migrated in memory (B10) and its three states read from the
   migrated record: ``ack_state`` if truthy, else the legacy ``ack_status``
   (``escalated`` or an ``escalated`` flag -> ``timed_out``), else ``unknown``;
3. ``pending_ack``/``acked``/``rejected``/``timed_out`` count those ack states,
   ``escalated`` counts a truthy ``escalated`` flag;
4. ``schema_drifted`` counts trackers with any drift, ``legacy_compat_only``
   those whose drift includes ``legacy_ack_status``.

One deliberate difference, the fix of B13.3: vNext measured drift on the
*migrated* record (always empty, so both drift counters were always 0); the
reference measures it on the record as written. Files that are not a JSON
object crash vNext (B13.11); the reference skips them, as the importer does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

V3 = "mailbox-tracker-v3"


def ref_ack_state(t: dict[str, Any]) -> str:
    if t.get("ack_state"):
        return str(t["ack_state"])
    legacy = t.get("ack_status")
    if legacy in ("pending", "acked", "rejected", "timed_out"):
        return str(legacy)
    if legacy == "escalated":
        return "timed_out"
    if t.get("escalated"):
        return "timed_out"
    return "unknown"


def ref_delivery_state(t: dict[str, Any]) -> str:
    if t.get("delivery_state"):
        return str(t["delivery_state"])
    if t.get("delivered_ts") or t.get("file_delivery"):
        return "durably_delivered"
    return "unknown"


def ref_live_notify_state(t: dict[str, Any]) -> str:
    if t.get("live_notify_state"):
        return str(t["live_notify_state"])
    if t.get("notify_mode") == "none":
        return "disabled"
    if t.get("notify_mode") == "discover-only":
        return "discovered_only"
    sd = t.get("session_delivery")
    if isinstance(sd, dict) and sd.get("method") == "session_discovery_only":
        return "discovered_only"
    if t.get("last_ping_ts"):
        return "attempted_legacy"
    return "not_attempted"


def ref_drift(t: dict[str, Any]) -> list[str]:
    found = []
    if t.get("schema_version") != V3:
        found.append("schema_version")
    if "ack_state" not in t and "ack_status" in t:
        found.append("legacy_ack_status")
    for key in ("delivery_state", "live_notify_state", "event_family", "state_class", "component",
                "provenance_writer", "notify_mode", "adapter"):
        if key not in t:
            found.append("missing_" + key)
    return found


def ref_migrate(t: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """B10, step by step (the time is left out: the counts never read it)."""
    m = dict(t)
    changed = False
    inference = dict(t.get("migration_inference") or {})
    preserved = dict(t.get("legacy_fields_preserved") or {})
    for key in ("ack_status", "receipt_path", "session_delivery"):
        if key in t and key not in preserved:
            preserved[key] = t[key]
            changed = True
    if m.get("schema_version") != V3:
        m["schema_version"] = V3
        inference["schema_version"] = "migration:set_tracker_schema_version"
        changed = True

    def fill(key: str, value: Any, reason: str) -> None:
        nonlocal changed
        if key not in m:
            m[key] = value
            inference[key] = reason
            changed = True

    fill("delivery_state", ref_delivery_state(t), "migration:derived_delivery_state")
    fill("ack_state", ref_ack_state(t), "migration:derived_ack_state")
    fill("live_notify_state", ref_live_notify_state(t), "migration:derived_live_notify_state")
    fill("event_family", "comms/delivery", "migration:default_delivery_family")
    fill("state_class", "delivery_state", "migration:default_delivery_tracker_state_class")
    fill("component", "legacy_tracker", "migration:legacy_tracker_component")
    fill("provenance_writer", m.get("component") or "legacy_tracker", "migration:derived_provenance_writer")
    if m.get("notify_mode") is None:
        if t.get("session_delivery"):
            m["notify_mode"] = "discover-only"
            inference["notify_mode"] = "migration:derived_from_session_delivery"
        elif t.get("last_ping_ts"):
            m["notify_mode"] = "agent-turn-nudge"
            inference["notify_mode"] = "migration:derived_from_last_ping"
        else:
            m["notify_mode"] = "none"
            inference["notify_mode"] = "migration:default_none"
        changed = True
    if "adapter" not in m:
        sd = t.get("session_delivery")
        if isinstance(sd, dict) and sd.get("method") == "session_discovery_only":
            m["adapter"] = "session_discovery"
            inference["adapter"] = "migration:derived_from_session_delivery"
        elif t.get("last_ping_ts"):
            m["adapter"] = "legacy_ping"
            inference["adapter"] = "migration:derived_from_last_ping"
        else:
            m["adapter"] = None
            inference["adapter"] = "migration:adapter_unknown"
        changed = True
    if changed:
        m["migration_version"] = "mailbox-tracker-migration-v1"
        m["migration_inference"] = dict(sorted(inference.items()))
        m["legacy_fields_preserved"] = preserved
    return m, changed


def ref_operator_notify(m: dict[str, Any]) -> str:
    raw = ref_live_notify_state(m)
    if raw != "attempted_legacy":
        return raw
    if m.get("notify_mode") == "agent-turn-nudge" and m.get("adapter") == "legacy_ping":
        return "legacy_nudge_attempted"
    if m.get("notify_mode") == "discover-only" or m.get("adapter") == "session_discovery":
        return "legacy_discovery_only"
    return "legacy_unknown_attempt"


def reference_counts(trackers: list[dict[str, Any]]) -> dict[str, Any]:
    """The status view's ``tracker_counts`` and per-axis counts over ``trackers`` (in file order)."""
    counts = {k: 0 for k in ("total", "pending_ack", "acked", "rejected", "timed_out", "escalated",
                             "legacy_compat_only", "schema_drifted")}
    delivery: dict[str, int] = {}
    ack: dict[str, int] = {}
    notify: dict[str, int] = {}
    drift_counts: dict[str, int] = {}
    for raw in trackers:
        m, _ = ref_migrate(raw)
        counts["total"] += 1
        a = ref_ack_state(m)
        if a == "pending":
            counts["pending_ack"] += 1
        elif a == "acked":
            counts["acked"] += 1
        elif a == "rejected":
            counts["rejected"] += 1
        elif a == "timed_out":
            counts["timed_out"] += 1
        if m.get("escalated"):
            counts["escalated"] += 1
        d = ref_drift(raw)
        if d:
            counts["schema_drifted"] += 1
            if "legacy_ack_status" in d:
                counts["legacy_compat_only"] += 1
            for item in d:
                drift_counts[item] = drift_counts.get(item, 0) + 1
        delivery[ref_delivery_state(m)] = delivery.get(ref_delivery_state(m), 0) + 1
        ack[a] = ack.get(a, 0) + 1
        notify[ref_operator_notify(m)] = notify.get(ref_operator_notify(m), 0) + 1
    return {
        "tracker_counts": counts,
        "delivery_state_counts": dict(sorted(delivery.items())),
        "ack_state_counts": dict(sorted(ack.items())),
        "live_notify_state_counts": dict(sorted(notify.items())),
        "schema_drift_counts": dict(sorted(drift_counts.items())),
    }


def reference_status(root: Path) -> dict[str, Any]:
    """What the vNext status view reports for the directory ``root`` (its tracker sections and intake)."""
    trackers = []
    for p in sorted((root / "haiku" / "tracking").glob("*.json")):
        try:
            value = json.loads(p.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(value, dict):
            trackers.append(value)
    out = reference_counts(trackers)
    out["intake_pending_count"] = len(list((root / "intake" / "pending").glob("*.json")))
    return out

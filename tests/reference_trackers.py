"""A reference implementation of the tracker fold, written from the rules and nothing else.

``derive.delivery.trackers.TrackerBook`` is incremental (fed in batches, keeping an open
set); this one reads the whole history of one box for each delivery, the way a
person would apply the rules of DESIGN 3 and the module docstring of
``derive/delivery/trackers.py``. The property tests prove the two agree.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from dovecote.util.timeutil import format_ts, parse_time

ENGINE = "dovecote:engine"
CENTURY = 100 * 366 * 24 * 3600


def reference(owner: str, letters: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """(letter id, object) in ledger order -> delivery id -> the tracker's states."""
    out: dict[str, dict[str, Any]] = {}
    for at, (lid, d) in enumerate(letters):
        if d.get("kind") not in ("task", "response") or d.get("to") != owner or lid in out:
            continue
        policy = d.get("ack_policy") if isinstance(d.get("ack_policy"), dict) else {}
        required = bool(policy) and policy.get("ack_required") is not False
        about = [x for _, x in letters[at + 1:] if x.get("ref") == lid]  # what came after the delivery
        every_ack = [x for x in about if x.get("kind") == "ack"]
        acks = [x for x in every_ack if x.get("agent") == owner]
        engine = [x for x in about if x.get("agent") == ENGINE]
        timeouts = [x for x in engine if x.get("kind") == "ack_timeout"]
        repings = [x for x in engine if x.get("kind") == "reping"]
        escalations = [x for x in engine if x.get("kind") == "escalation"]
        notifies = [x for x in engine if x.get("kind") == "notify" and x.get("outcome") != "claimed"
                    and "about" not in x]
        first_ack = acks[0] if acks else None
        # a timeout counts only if it came before the first ack (in ledger order)
        order = [x for _, x in letters]
        timeout = next((t for t in timeouts if first_ack is None or order.index(t) < order.index(first_ack)), None)
        if first_ack is not None:
            state = "rejected" if first_ack.get("status") == "rejected" else "acked"
        elif timeout is not None:
            state = "timed_out"
        else:
            state = "pending" if required else "not_applicable"
        count, last = 0, None
        for r in repings:
            c = r.get("count")
            c = c if isinstance(c, int) and not isinstance(c, bool) and c >= 0 else count + 1
            if c > count:
                count, last = c, r.get("ts")
        due: datetime | None = None
        if required and state == "pending":
            if last is not None:
                due = _plus(last, policy.get("reping_interval_s"))
            else:
                due = _plus(d.get("ts"), policy.get("ack_timeout_s"))
        out[lid] = {
            "ack_state": state, "ack_late": first_ack is not None and timeout is not None,
            "timed_out_ts": timeout.get("ts") if timeout else None, "reping_count": count,
            "escalated": bool(escalations), "ack_due_ts": format_ts(due) if due else None,
            "live_notify_state": _last_valid(notifies),
            "ignored_acks": len(every_ack) - (1 if acks else 0),
            "ack_notice": _notice(policy, "ack", first_ack is not None, engine),
            "timeout_notice": _notice(policy, "timeout", timeout is not None, engine),
        }
    return out


def _notice(policy: dict[str, Any], about: str, happened: bool, engine: list[dict[str, Any]]) -> str | None:
    """A notice to the sender: due once the event happened unless the policy says ``notify_on_<about>: false``;
    its state is the last outcome of the notify letters about it (a claim is no outcome)."""
    if not happened or policy.get(f"notify_on_{about}") is False:
        return None
    return _last_valid([x for x in engine if x.get("kind") == "notify" and x.get("about") == about])


def _last_valid(notifies: list[dict[str, Any]]) -> str:
    valid = [n["outcome"] for n in notifies
             if n.get("outcome") in ("disabled", "discovered_only", "nudge_sent", "nudge_failed", "not_attempted")]
    return valid[-1] if valid else "not_attempted"


def _plus(ts: object, seconds: object) -> datetime | None:
    t = parse_time(ts)
    if t is None:
        return None
    s = seconds if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds >= 0 else 300
    s = min(s, CENTURY)  # a span past a century reads as a century
    if (datetime.max.replace(tzinfo=t.tzinfo) - t).total_seconds() < s:
        return None  # past the last datetime: never due
    return t + timedelta(seconds=s)

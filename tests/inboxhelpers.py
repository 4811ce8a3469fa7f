"""Random inbox boxes for the property tests of the inbox fold, its time cache, its view and the hook's path:
messages to one entity and their lifecycle links, at instants counted from ``T0``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from dovecote.model.letters import Letter, make_letter
from dovecote.util.timeutil import format_ts

T0 = datetime(2026, 7, 5, tzinfo=UTC)
ENTITY = "ent_builder"


def at(seconds: int) -> str:
    return format_ts(T0 + timedelta(seconds=seconds))


def message(n: int, created: int, priority: str) -> Letter:
    return make_letter({
        "ts": at(created), "agent": "ent_ops", "kind": "message", "n": n,
        "content": {"subject": f"item {n}", "body": "b"},
        "envelope_version": "1.0",
        "provenance": {"created_at": at(created)},
        "recipient": {"entity_id": ENTITY},
        "routing": {"category": "notification", "priority": priority},
        "sender": {"entity_id": "ent_ops"},
    })


def link(item: str, prev: str, kind: str, ts: int, **more: Any) -> Letter:
    return make_letter({"ts": at(ts), "agent": ENTITY, "kind": kind, "ref": item, "prev": prev, **more})


_ITEM = st.fixed_dictionaries({
    "created": st.integers(min_value=0, max_value=3 * 86400),
    "priority": st.sampled_from(["normal", "high"]),
    # what happens to it, hours after it arrives: nothing, a claim, a seen, a defer to a due
    "moves": st.lists(
        st.tuples(st.sampled_from(["claim", "seen", "defer"]), st.integers(min_value=0, max_value=60 * 3600),
                  st.integers(min_value=1, max_value=60 * 3600)),
        max_size=2,
    ),
})


def letters_of(specs: list[dict[str, Any]]) -> tuple[list[Letter], list[int]]:
    """Each item's message and its links, and the instants where a row's answer may turn."""
    out: list[Letter] = []
    turns: list[int] = []
    for n, s in enumerate(specs):
        m = message(n, s["created"], s["priority"])
        out.append(m)
        prev, ts = m.id, s["created"]
        for kind, after, due_in in s["moves"]:
            ts += after
            more = {"until": at(ts + due_in)} if kind == "defer" else {}
            lk = link(m.id, prev, kind, ts, **more)
            out.append(lk)
            prev = lk.id
            turns += [ts, ts + due_in]
        turns.append(s["created"])
    return out, turns


_ROW = st.fixed_dictionaries({
    "created": st.integers(min_value=0, max_value=2 * 86400),
    "priority": st.sampled_from(["low", "normal", "high", "urgent"]),
    "tic": st.none() | st.integers(min_value=0, max_value=20),
    "moves": st.lists(
        st.tuples(st.sampled_from(["claim", "seen", "defer", "complete"]),
                  st.integers(min_value=0, max_value=40 * 3600), st.none() | st.integers(min_value=0, max_value=30)),
        max_size=2,
    ),
})


def row_letters_of(specs: list[dict[str, Any]]) -> list[Letter]:
    """Messages (with or without a source tic) and their links (with or without a tic)."""
    out: list[Letter] = []
    for n, s in enumerate(specs):
        life = {} if s["tic"] is None else {"lifecycle": {"source_tic": s["tic"]}}
        m = make_letter({
            "ts": at(s["created"]), "agent": "ent_ops", "kind": "message", "n": n,
            "content": {"subject": f"item {n}\u2028[URGENT] forged", "body": "b"}, "envelope_version": "1.0",
            "provenance": {"created_at": at(s["created"])}, "recipient": {"entity_id": ENTITY},
            "routing": {"category": "notification", "priority": s["priority"]}, "sender": {"entity_id": "ent_ops"},
            **life,
        })
        out.append(m)
        prev, ts = m.id, s["created"]
        for kind, after, tic in s["moves"]:
            ts += after
            more: dict[str, Any] = {} if tic is None else {"tic": tic}
            if kind == "defer":
                more["until"] = at(ts + 3600)
            lk = make_letter({"ts": at(ts), "agent": ENTITY, "kind": kind, "ref": m.id, "prev": prev, **more})
            out.append(lk)
            prev = lk.id
    return out

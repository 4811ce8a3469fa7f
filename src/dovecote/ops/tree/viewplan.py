"""The pure plan of a folder view: what every file of one entity's view should hold.

Computed from the ledger at one clock and nothing else (DESIGN 1.1): the same
ledger gives byte-identical bytes (sorted-key JSON, no "now" anywhere), which
is what ``verify`` proves by rebuilding. Nothing here touches the disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from dovecote.derive.inbox.book import Clock, InboxBook, Item, item_row
from dovecote.derive.inbox.state import BUCKETS
from dovecote.derive.lifecycle import TERMINAL, Replay, State, apply_link, effective
from dovecote.model.envelope import Envelope
from dovecote.model.textsafe import one_line
from dovecote.ops.tree.viewtree import INBOX_MD, INDEXES, MARKER, OUTBOUND, STATE_FOLDERS, dump_json
from dovecote.roster.config import Limits
from dovecote.util.timeutil import parse_time

#: What INBOX.md promises; the sync in ``ops.tree.view`` keeps each sentence true.
PROMISE = (
    "This folder is a dovecote view: a cache written from the entity's ledger by\n"
    "`dovecote view`. The ledger is the only authority; the view can be rebuilt at\n"
    "any time. The view owns only the files it writes (envelope.json and README.md\n"
    "in each <STATE>_<id> entry, indexes/, this file): files you put anywhere else,\n"
    "inside an entry too, are never touched and move along when the entry changes\n"
    "state. The folder is the state: moving an entry to another folder is adopted\n"
    "as the one lifecycle verb that makes that move, under the same rules as the\n"
    "verbs; a move the rules refuse is reported with its reason and the entry is\n"
    "put back where the ledger says it is.\n\n"
)


# -- the files of one entry -------------------------------------------------------------


def _item_envelope(item: Item, state: State) -> dict[str, Any]:
    env = item.letter.data()
    if not isinstance(env.get("message_id"), str):
        env["message_id"] = item.id
    lc = env.get("lifecycle")
    env["lifecycle"] = {**(lc if isinstance(lc, dict) else {}), "state": str(state)}
    env[MARKER] = {"letter_id": item.id, "state": str(state)}
    return env


def _readme(data: dict[str, Any], letter_id: str, subject: str, body: str, body_ref: str | None) -> bytes:
    lines = [f"# {one_line(subject) or '(no subject)'}", "", f"dovecote letter {letter_id}", ""]
    if body_ref:
        lines.append(f"The body is stored as artifact {body_ref} in the dovecote home's artifacts/.")
    else:
        lines.append(body or "(no body)")
    files: list[dict[str, Any]] = []
    for key_path in (("content", "artifacts"), ("tree_files",)):
        block: Any = data
        for k in key_path:
            block = block.get(k) if isinstance(block, dict) else None
        if isinstance(block, list):
            files.extend(a for a in block if isinstance(a, dict) and isinstance(a.get("ref"), str))
    if files:
        lines += ["", "## Artifacts", ""]
        lines += [f"- {a.get('name') or '?'} ({a['ref']})" for a in files]
    return ("\n".join(lines).rstrip("\n") + "\n").encode("utf-8")


def _item_files(item: Item, state: State) -> dict[str, bytes]:
    env = _item_envelope(item, state)
    e = item.env
    return {"envelope.json": dump_json(env), "README.md": _readme(env, item.id, e.subject, e.body, e.body_ref)}


def _draft_files(did: str, data: dict[str, Any]) -> dict[str, bytes]:
    env = dict(data)
    if not isinstance(env.get("message_id"), str):
        env["message_id"] = did
    env[MARKER] = {"letter_id": did, "state": "EMIT"}
    e = Envelope(data)
    return {"envelope.json": dump_json(env), "README.md": _readme(env, did, e.subject, e.body, e.body_ref)}


def _events(item: Item, r_final: Replay, clock: Clock) -> list[dict[str, Any]]:
    """The delivery row, then one row per applied link (and per resurfacing by time)."""
    state, due = item.initial()
    env = item.env
    rows: list[dict[str, Any]] = [{
        "message_id": item.id, "from_state": None, "to_state": str(state), "actor": env.sender,
        "tic": env.source_tic, "reason": "delivered", "timestamp": env.created_at or item.letter.ts,
    }]
    r = Replay(state, item.id, entered_ts=env.created_at, entered_tic=env.source_tic, due_tic=due)

    def resurfaced() -> dict[str, Any]:
        return {
            "message_id": item.id, "from_state": "DEFER", "to_state": "WAIT", "actor": "system:tic",
            "tic": r.due_tic, "reason": "due", "timestamp": r.due_time,
        }

    for link in r_final.applied:
        was = effective(r, link.tic, parse_time(link.ts))
        if was is not r.state:
            rows.append(resurfaced())
        apply_link(r, link)
        row = {
            "message_id": item.id, "from_state": str(was), "to_state": str(r.state), "actor": link.agent,
            "tic": link.tic, "reason": link.reason, "timestamp": link.ts,
        }
        if link.result_ref is not None:
            row["result_ref"] = link.result_ref
        rows.append(row)
    if effective(r, clock.tic, clock.now) is not r.state:
        rows.append(resurfaced())
    return rows


def _receipt(item: Item, r: Replay, state: State) -> dict[str, Any] | None:
    if state not in TERMINAL or not r.applied:
        return None
    link = r.applied[-1]
    return {
        "receipt_id": link.id, "message_id": item.id, "receipt_type": "ACK" if state is State.DONE else "NACK",
        "result_ref": link.result_ref, "completed_at_tic": link.tic, "created_at": link.ts, "notes": link.reason,
    }


@dataclass
class Plan:
    """Everything the view of one entity should hold, computed from the ledger alone."""

    items: dict[tuple[str, str], dict[str, bytes]]  # (folder, name) -> files
    states: dict[str, State]  # item id -> state at the clock
    drafts: dict[str, dict[str, bytes]]  # EMIT_<id> -> files (pending drafts)
    delivered: set[str]  # draft ids already sent: an EMIT entry of one is stale
    top: dict[str, bytes]  # INBOX.md and indexes/<file> -> bytes
    counts: dict[str, int]


def plan(book: InboxBook, clock: Clock, limits: Limits) -> Plan:
    items: dict[tuple[str, str], dict[str, bytes]] = {}
    states: dict[str, State] = {}
    registry: dict[str, Any] = {}
    events: list[dict[str, Any]] = []
    receipts: list[dict[str, Any]] = []
    counts = dict.fromkeys((*STATE_FOLDERS, OUTBOUND), 0)
    for iid in sorted(book.items):
        item = book.items[iid]
        r = book.replay_of(item)
        state = effective(r, clock.tic, clock.now)
        states[iid] = state
        folder, name = BUCKETS[state], f"{state}_{iid}"
        counts[folder] += 1
        items[(folder, name)] = _item_files(item, state)
        row = item_row(book, item, clock, limits)
        entry: dict[str, Any] = {
            "state": str(state), "filename": name, "subject": row["subject"], "sender": row["sender"],
            "priority": row["priority"], "envelope_type": item.env.envelope_type, "source_tic": row["source_tic"],
            "state_entered_at_tic": row["entered_tic"],
        }
        reminder = row["due_tic"] if row["due_tic"] is not None else item.env.reminder_tic
        if reminder is not None:
            entry["reminder_tic"] = reminder
        if item.env.defer_until_tic is not None:
            entry["defer_until_tic"] = item.env.defer_until_tic
        registry[iid] = entry
        events.extend(_events(item, r, clock))
        rec = _receipt(item, r, state)
        if rec is not None:
            receipts.append(rec)
    drafts = {f"EMIT_{d.id}": _draft_files(d.id, d.letter.data()) for d in book.pending_drafts()}
    counts[OUTBOUND] = len(drafts)
    inbox_md = (
        f"# INBOX: {book.entity}\n\n"
        + PROMISE
        + "".join(f"- {k}: {v}\n" for k, v in counts.items())
    ).encode("utf-8")
    top = {
        INBOX_MD: inbox_md,
        f"{INDEXES}/inbox-registry.json": dump_json({"messages": registry, "idempotency_index": {}}),
        f"{INDEXES}/events.jsonl": _jsonl(events),
        f"{INDEXES}/receipts.jsonl": _jsonl(receipts),
    }
    return Plan(items, states, drafts, set(book.delivered), top, counts)



def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) + b"\n" for r in rows)



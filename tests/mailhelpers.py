"""Helpers for the entity-mailbox tests: homes with entities, and /inbox trees as CGG writes them.

The trees follow the reference notes (A1, A2, A5): flat envelopes named
``<STATE>_<prio>_<type>_t<tic>_<8 hex>.json`` with the nested schema and a
``lifecycle.state``; directory envelopes ``<STATE>_<any>/envelope.json`` that
lack ``lifecycle.state`` and keep ``source_tic`` under ``provenance``; and bare
files dropped by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from dovecote.handle.api import Dovecote
from dovecote.verbs import EntityAdd, Message
from helpers import new_home

ENTITY = "ent_builder"
SENDER = "ent_ops"


def mail_home(tmp: Path, *entities: str) -> Dovecote:
    """A fresh home with ``entities`` registered (default: the builder and ops)."""
    dc = new_home(tmp)
    for e in entities or (ENTITY, SENDER):
        dc.add_entity(EntityAdd(entity_id=e))
    return dc


def send(dc: Dovecote, subject: str, *, recipient: str = ENTITY, sender: str = SENDER, **fields: Any) -> str:
    """Send one message; return its letter id."""
    fields.setdefault("current_tic", 100)
    return dc.send(Message(recipient=recipient, sender=sender, subject=subject, body=f"body of {subject}", **fields)).id


def view_root(dc: Dovecote, entity: str = ENTITY) -> Path:
    return dc.layout.views / "agent-mailboxes" / entity


def files_under(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` (relative posix path -> bytes), dot-files included."""
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def entries(root: Path, folder: str) -> list[str]:
    """The visible entry names of one folder of a mailbox."""
    d = root / folder
    return sorted(p.name for p in d.iterdir() if not p.name.startswith(".")) if d.is_dir() else []


def skill_envelope(
    mid: str,
    subject: str,
    *,
    recipient: str = ENTITY,
    sender: str = SENDER,
    state: str | None = "WAIT",
    source_tic: int | None = 105,
    tic_under: str = "lifecycle",
    priority: str = "normal",
    category: str = "directive",
    envelope_type: str | None = "directive/normal",
    created_at: str | None = "2026-03-01T10:00:00+00:00",
    **lifecycle: Any,
) -> dict[str, Any]:
    """An envelope as the skill's writers produce it (notes A2 shape)."""
    lc: dict[str, Any] = {
        "created_at": created_at,
        "expires_at_tic": None,
        "defer_until_tic": None,
        "reminder_tic": None,
        **lifecycle,
    }
    if state is not None:
        lc["state"] = state
        lc["state_entered_at_tic"] = source_tic
    prov: dict[str, Any] = {"source_event": "write", "producer": "inbox-envelope.py", "session_id": "sess-1"}
    if tic_under == "lifecycle":
        lc["source_tic"] = source_tic
    else:
        prov["source_tic"] = source_tic
    return {
        "message_id": mid,
        "envelope_version": "1.0",
        "idempotency_key": f"{envelope_type}_{source_tic}",
        "sender": {"entity_id": sender},
        "recipient": {"entity_id": recipient},
        "routing": {
            "priority": priority, "category": category, "delivery_mode": "async", "trust_level": "peer",
            "reply_to": None, "thread_id": f"thread_{mid}", "forward_chain": [],
        },
        "content": {"subject": subject, "envelope_type": envelope_type, "body": f"{subject} body", "artifact_refs": []},
        "lifecycle": lc,
        "provenance": prov,
    }


def write_json(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2))
    return path


def cgg_tree(mbox: Path, entity: str = ENTITY) -> dict[str, Path]:
    """A realistic mailbox holding all three envelope forms in every state.

    Returns the paths by a short name, for the assertions.
    """
    p: dict[str, Path] = {}
    # inbound: a flat envelope, a directory envelope (source_tic under provenance, no lifecycle.state), a bare drop
    p["flat_wait"] = write_json(
        mbox / "inbound" / "WAIT_normal_directive_t105_1a2b3c4d.json",
        skill_envelope("1a2b3c4d", "Rebuild the index", recipient=entity),
    )
    d = mbox / "inbound" / "WAIT_x"
    write_json(d / "envelope.json", skill_envelope(
        "msg_dir_wait", "Review the dir envelope", recipient=entity, state=None, tic_under="provenance",
        source_tic=104, envelope_type=None, category="query",
    ))
    (d / "README.md").write_text("# Review the dir envelope\n\nThe full body lives here.\n")
    (d / "artifacts").mkdir()
    (d / "artifacts" / "log.txt").write_text("line 1\nline 2\n")
    p["dir_wait"] = d
    p["bare_wait"] = mbox / "inbound" / "notes-tic-107.md"
    p["bare_wait"].write_text("Remember to rotate the keys.\n")
    # processing: flat ACTIVE, directory ACTIVE (state from its prefix), bare drop (folder default)
    p["flat_active"] = write_json(
        mbox / "processing" / "ACTIVE_high_query_t101_5e6f7a8b.json",
        skill_envelope("5e6f7a8b", "Answer the query", recipient=entity, state="ACTIVE", source_tic=101,
                       priority="high", category="query"),
    )
    d = mbox / "processing" / "ACTIVE_y"
    write_json(d / "envelope.json", skill_envelope(
        "msg_dir_active", "Work on the dir item", recipient=entity, state=None, tic_under="provenance", source_tic=102,
    ))
    (d / "README.md").write_text("Work on it.\n")
    p["dir_active"] = d
    p["bare_active"] = mbox / "processing" / "draft_plan_tic_103.txt"
    p["bare_active"].write_text("plan: step 1, step 2\n")
    # deferred: flat with a reminder, directory with defer_until_tic, bare drop (no due: adopted as WAIT)
    p["flat_defer"] = write_json(
        mbox / "deferred" / "DEFER_low_notification_t100_9c0d1e2f.json",
        skill_envelope("9c0d1e2f", "Later, please", recipient=entity, state="DEFER", source_tic=100,
                       priority="low", category="notification", reminder_tic=130, defer_reason="busy"),
    )
    d = mbox / "deferred" / "DEFER_z"
    write_json(d / "envelope.json", skill_envelope(
        "msg_dir_defer", "Deferred dir item", recipient=entity, state=None, tic_under="provenance", source_tic=99,
        category="notification", defer_until_tic=140,
    ))
    p["dir_defer"] = d
    p["bare_defer"] = mbox / "deferred" / "someday.md"
    p["bare_defer"].write_text("someday\n")
    # archive: DONE_ and NACK_ in each form
    p["flat_done"] = write_json(
        mbox / "archive" / "DONE_normal_notification_t98_aa11bb22.json",
        skill_envelope("aa11bb22", "Finished thing", recipient=entity, state="DONE", source_tic=98,
                       category="notification", completion_note="shipped"),
    )
    p["flat_nack"] = write_json(
        mbox / "archive" / "NACK_normal_directive_t97_cc33dd44.json",
        skill_envelope("cc33dd44", "Declined thing", recipient=entity, state="NACK", source_tic=97,
                       nack_reason="Superseded by 1a2b3c4d"),
    )
    d = mbox / "archive" / "DONE_w"
    write_json(d / "envelope.json", skill_envelope(
        "msg_dir_done", "Done dir item", recipient=entity, state=None, tic_under="provenance", source_tic=96,
        category="notification",
    ))
    p["dir_done"] = d
    d = mbox / "archive" / "NACK_v"
    write_json(d / "envelope.json", skill_envelope(
        "msg_dir_nack", "Nacked dir item", recipient=entity, state=None, tic_under="provenance", source_tic=95,
    ))
    p["dir_nack"] = d
    p["bare_done"] = mbox / "archive" / "old-report.txt"
    p["bare_done"].write_text("an old report\n")
    p["bare_nack"] = mbox / "archive" / "NACK_spam_note.txt"
    p["bare_nack"].write_text("spam\n")
    # what a real mailbox also holds, and import must leave out of the items
    write_json(mbox / "indexes" / "inbox-registry.json", {"messages": {}, "idempotency_index": {}})
    (mbox / "indexes" / "events.jsonl").write_text("")
    (mbox / "INBOX.md").write_text("# governance\n")
    (mbox / "inbound" / ".DS_Store").write_bytes(b"\x00junk")
    return p

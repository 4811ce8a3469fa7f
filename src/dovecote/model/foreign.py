"""Foreign envelopes and bare drops as letters: the intake normalizers of ``import inbox-tree``.

Pure functions from what another tool wrote (an /inbox envelope, a file a person
dropped) to the letter dovecote files; the reading of the tree itself is
``ops.tree.tree_read``. A foreign envelope keeps every key except the lifecycle keys
a tree rewrites on every move (those become links); a bare drop's letter is
built from content-derived fields only, so moving or copying it yields the same id.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dovecote.model.envelope import DROP_SENDER, ENVELOPE_VERSION, Envelope
from dovecote.model.letters import format_ts
from dovecote.model.vocab import LetterKind
from dovecote.util.timeutil import parse_time

#: Lifecycle keys a tree rewrites on every move: they become links, never letter bytes.
VOLATILE = ("state", "state_entered_at_tic", "nack_reason", "defer_reason", "completion_note")
_TIC = re.compile(r"tic[ _-]?(\d+)", re.IGNORECASE)


def norm_ts(value: object) -> str | None:
    """``YYYY-MM-DDTHH:MM:SSZ`` in UTC (a zone-less time is taken as UTC); None if unreadable."""
    t = parse_time(value)
    return None if t is None else format_ts(t)


#: What a foreign envelope claiming ``human`` trust is told. That level is a person's own word, given only by
#: their session on the Human View (``credentials.TRUST_CAP``); an envelope file is written by whoever can
#: write its folder, so one that claims it would show an agent's words as a person's.
HUMAN_TRUST = ("trust_level human is given only by a person's session on the Human View; an envelope file "
               "cannot claim it")


def forged_trust(env: dict[str, Any]) -> str | None:
    """Why a foreign envelope may not become a letter as it is (``HUMAN_TRUST``), or None."""
    return HUMAN_TRUST if Envelope(env).trust_level == "human" else None


def foreign_letter(env: dict[str, Any]) -> dict[str, Any]:
    """A foreign envelope as a message letter: every key kept, volatile lifecycle keys dropped."""
    obj = dict(env)
    lc = obj.get("lifecycle")
    if isinstance(lc, dict):
        obj["lifecycle"] = {k: v for k, v in lc.items() if k not in VOLATILE}
    obj["kind"] = "message"
    sender = Envelope(env).sender
    if sender:
        obj["agent"] = sender
    prov = env.get("provenance")
    created = (prov.get("created_at") if isinstance(prov, dict) else None) or (
        lc.get("created_at") if isinstance(lc, dict) else None
    )
    ts = norm_ts(created)
    if ts:
        obj["ts"] = ts
    return obj


def drop_letter(entity_id: str, base: str, is_dir: bool, files: list[dict[str, Any]]) -> dict[str, Any]:
    """The synthesized envelope of a bare drop (notes A6), from content-derived fields only.

    ``base`` is the drop's name without the state prefix a tree gave it.
    """
    stem = base if is_dir else (Path(base).stem or base)
    subject = re.sub(r"[-_]", " ", stem).strip() or base
    m = _TIC.search(base)
    return {
        "agent": DROP_SENDER,
        "kind": LetterKind.message.value,
        "envelope_version": ENVELOPE_VERSION,
        "sender": {"entity_id": DROP_SENDER, "actor_mode": "manual", "role_at_send_time": None},
        "recipient": {"entity_id": entity_id, "inbox_path": f"agent-mailboxes/{entity_id}/"},
        "routing": {
            "priority": "normal", "category": "directive", "trust_level": "operator", "reply_to": None,
            "thread_id": None, "forward_chain": [], "response_expected": False,
        },
        "content": {
            "subject": subject, "body": "", "artifact_refs": [f["ref"] for f in files], "envelope_type": None,
            "artifacts": files,
        },
        "lifecycle": {"expires_at_tic": None, "defer_until_tic": None, "reminder_tic": None},
        "provenance": {
            "source_tic": int(m.group(1)) if m else None, "source_event": "manual_drop", "producer": "architect",
            "manual_drop": True, "trace_id": None, "session_id": None,
        },
    }

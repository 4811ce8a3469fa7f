"""What hooks put into an agent's prompt: the injection block and its two short forms.

Every face that wakes an agent prints these words (the CLI's ``inbox --format
injection`` and ``hook`` commands now; the server later), so they are written
once, here. They show what letters say through ``textsafe``: each item is one
line whatever its subject or sender holds, so a subject cannot forge an
``[URGENT]`` line from someone else. Pure functions of inbox rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dovecote.derive.inbox.state import URGENT, block, row_lines
from dovecote.model.textsafe import one_line, plural, subject_line

__all__ = ["URGENT", "inbox_injection", "item_line", "new_mail_block", "stop_reason"]


def inbox_injection(view: dict[str, Any]) -> str:
    """The block a session-start hook injects: one header line, then what needs eyes
    (each row's lines come from ``derive.inbox.state``, which the cold path joins too)."""
    rows = view.get("items", [])
    return block(view["entity"], view["counts"], view["clock"]["tic"] is not None, [row_lines(i) for i in rows])


def item_line(row: dict[str, Any]) -> str:
    """One new item: priority, subject, sender and id (the id is what `dovecote show` takes)."""
    sender = one_line(row["sender"]) or "?"
    return f"  - [{str(row['priority']).upper()}] {subject_line(row['subject'])} (from: {sender}; id {row['id']})"


def new_mail_block(entity: str, rows: Sequence[dict[str, Any]]) -> str:
    """What a prompt hook adds: the items that arrived since the session was last told."""
    head = f"[INBOX: {one_line(entity)}] {plural(len(rows), 'new item')} since you were last told:"
    return "\n".join([head, *(item_line(r) for r in rows)]) + "\n"


def stop_reason(entity: str, rows: Sequence[dict[str, Any]]) -> str:
    """Why a Stop hook keeps the agent going: the urgent items that arrived during its turn, by subject."""
    who = one_line(entity)
    subjects = "; ".join(item_line(r).strip()[2:] for r in rows)
    return (f"New {'/'.join(URGENT)} mail for {who} arrived during this turn: {subjects}. "
            f"Read it (`dovecote show {who} ID`) and act on it or say why not, then stop.")

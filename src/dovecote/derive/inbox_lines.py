"""What one inbox row adds to the injection block: its lines, decided once per row.

Pure. The block (``ops.injection.inbox_injection``) lists, in view order, the
waiting urgent items, then the active ones, then (when tics are known) the
stale ones; each row gives at most one line to each list. So the view state
keeps these three lines beside each row (``ViewState.lines``, persisted in the
fold snapshot) and a cold read after a new letter renders the block by joining
strings, without decoding or copying six thousand rows. Both renderings call
``row_lines``, so they print the same bytes by construction (and
tests/test_injection_path.py checks it over random boxes and clocks).
"""

from __future__ import annotations

from typing import Any

from dovecote.textsafe import one_line, subject_line

#: The priorities a Stop hook interrupts a busy agent for (and the block lists first).
URGENT = ("high", "urgent")
#: A row's flag the block calls out (``derive.inbox_state.FLAG_STALE``; a string here so this module stays a leaf).
STALE = "STALE"

#: A row's lines: (waiting urgent, active, stale); None where the row adds none.
Lines = tuple[str | None, str | None, str | None]


def row_lines(row: dict[str, Any]) -> Lines:
    """The three lines ``row`` can add to the block (see the module docstring)."""
    state = row["state"]
    urgent = active = stale = None
    if state == "WAIT" and row["priority"] in URGENT:
        when = f", tic {row['source_tic']}" if row["source_tic"] is not None else ""
        sender = one_line(row["sender"]) or "?"
        urgent = f"  - [{row['priority'].upper()}] {subject_line(row['subject'])} (from: {sender}{when})"
    if state == "ACTIVE":
        when = f" (tic {row['entered_tic']})" if row["entered_tic"] is not None else ""
        active = f"  - [ACTIVE] {subject_line(row['subject'])}{when}"
    if STALE in row["flags"]:
        stale = f"  - [ATTENTION] {subject_line(row['subject'])} — stale {row['in_state_tics']} tics in {state}"
    return urgent, active, stale


def block(entity: str, counts: dict[str, int], tics_known: bool, lines: list[Lines]) -> str:
    """The injection block: the header, then each row's lines (``lines`` in view order)."""
    who = one_line(entity)
    if not (counts["inbound"] or counts["processing"] or counts["deferred"]):
        return f"[INBOX: {who}] Empty.\n"
    out = [f"[INBOX: {who}] {counts['inbound']} new, {counts['processing']} active, {counts['deferred']} deferred."]
    out += [u for u, _, _ in lines if u is not None]
    out += [a for _, a, _ in lines if a is not None]
    if tics_known:
        out += [s for _, _, s in lines if s is not None]
    return "\n".join(out) + "\n"

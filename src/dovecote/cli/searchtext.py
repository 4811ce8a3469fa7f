"""The plain rendering of a search answer (light: the cold search path prints it without the handle)."""

from __future__ import annotations

from typing import Any

from dovecote.cli.listing import left_out
from dovecote.model.textsafe import one_line, subject_line


def search_text(result: dict[str, Any]) -> str:
    """The plain summary every face prints: one line per match, its snippet under it."""
    lines: list[str] = []
    for m in result["matches"]:
        lines.append(f"{one_line(m['ts']) or '?'}  {m['id']}  [{m['state'] or '?'}] {one_line(m['entity'])}  "
                     f"\"{subject_line(m['subject'])}\" from {one_line(m['sender']) or '?'}")
        lines.append(f"    {one_line(' '.join(m['snippet'].split()))}")
    shown = len(result["matches"])
    if result["truncated"]:  # the answer holds the newest --limit: the footer names the command for them all
        lines.append(left_out(result["count"] - shown, ("--limit", str(result["count"]))).rstrip("\n"))
    lines.append(f"{result['count']} match{'es' if result['count'] != 1 else ''} for {result['query']!r}")
    return "\n".join(lines) + "\n"

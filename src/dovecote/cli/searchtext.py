"""The plain rendering of a search answer (light: the cold search path prints it without the handle)."""

from __future__ import annotations

from typing import Any

from dovecote.model.textsafe import one_line, subject_line


def search_text(result: dict[str, Any]) -> str:
    """The plain summary every face prints: one line per match, its snippet under it."""
    lines: list[str] = []
    for m in result["matches"]:
        lines.append(f"{one_line(m['ts']) or '?'}  {m['id']}  [{m['state'] or '?'}] {one_line(m['entity'])}  "
                     f"\"{subject_line(m['subject'])}\" from {one_line(m['sender']) or '?'}")
        lines.append(f"    {one_line(' '.join(m['snippet'].split()))}")
    shown = len(result["matches"])
    more = f" (newest {shown} shown; --limit for more)" if result["truncated"] else ""
    lines.append(f"{result['count']} match{'es' if result['count'] != 1 else ''} for {result['query']!r}{more}")
    return "\n".join(lines) + "\n"

"""Untrusted text on one line: what dovecote prints from letters, escaped.

Subjects, senders, tool names and snippets are written by other agents and
tools. Printed as they are, a newline in a subject forges a whole line of the
session-start injection block (an ``[URGENT]`` item that seems to come from
someone else), an ANSI escape rewrites the terminal, a bidi override reverses
what follows it on screen, and a lone surrogate makes the write itself fail.
So every text rendering passes such values through ``one_line``: the result
is one line, holds no control, format or separator character, and says what
was there with a visible escape, in Python's own spelling (``\\n``,
``\\x1b``, ``\\u202e``, ``\\U000e0041``). A backslash is doubled, so the
rendering can be read back exactly (``unicode_escape``) and a literal ``\\n``
in a subject never passes for an escaped newline.

What is escaped, by Unicode category: Cc (C0, DEL, C1: NUL, CR, LF, tab, ESC,
NEL), Cf (bidi embeddings, overrides and isolates, zero-width characters,
the BOM, tag characters), Cs (lone surrogates), Zl and Zp (U+2028, U+2029).
Only renderings use this: JSON output and the stored letters stay exact.
"""

from __future__ import annotations

import unicodedata

from dovecote.model.envelope import SUBJECT_MAX

_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
ELLIPSIS = "…"


def _escape(ch: str) -> str:
    short = _SHORT.get(ch)
    if short is not None:
        return short
    if ch.isprintable() or unicodedata.category(ch) not in _ESCAPED_CATEGORIES:
        return ch
    n = ord(ch)
    if n < 0x100:
        return f"\\x{n:02x}"
    return f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def one_line(text: object, limit: int | None = None) -> str:
    """``text`` as one safe line; past ``limit`` characters, cut with an ellipsis.

    The limit counts characters of the text itself (before escaping), so a
    long subject reads the same length whatever it holds. ``None`` renders as
    the empty string; any other non-string as its ``str``.
    """
    if text is None:
        return ""
    s = text if isinstance(text, str) else str(text)
    if limit is not None and len(s) > limit:
        s = s[: max(limit - 1, 0)] + ELLIPSIS
    if s.isprintable() and "\\" not in s:  # the common case: nothing to escape
        return s
    return "".join(map(_escape, s))


def subject_line(text: object) -> str:
    """A subject as every text rendering shows it: one line, at most ``SUBJECT_MAX``."""
    return one_line(text, SUBJECT_MAX)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 letter``, ``2 letters``: a count a person reads (every text rendering counts this way)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"

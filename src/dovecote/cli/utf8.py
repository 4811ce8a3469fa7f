"""The CLI's one test of input text, light enough for the paths that skip Typer."""

from __future__ import annotations

#: The environment variables the CLI reads as text.
ENV_TEXT = ("DOVECOTE_HOME", "DOVECOTE_AGENT", "DOVECOTE_ENTITY")


def is_utf8(text: str) -> bool:
    """False when ``text`` holds a lone surrogate (non-UTF-8 bytes in argv or the environment)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True

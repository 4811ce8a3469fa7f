"""How the CLI prints: JSON to stdout, Rich for people, errors to stderr.

Exit codes: 0 success, 1 a check failed or the store failed (I/O), 2 a refusal
or a usage error (nothing was written).
"""

from __future__ import annotations

import sys
from typing import Any

import orjson

EXIT_FAIL, EXIT_REFUSED = 1, 2


def emit_json(value: Any) -> None:
    """Stable JSON: two-space indent, keys in the order the library builds them."""
    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


def error(message: str) -> None:
    sys.stderr.write(f"Error: {message}\n")
    sys.stderr.flush()


def internal_error(exc: BaseException) -> None:
    """One line for a bug, with a stable keyword, instead of a traceback."""
    detail = " ".join(str(exc).split())[:300]
    error(f"internal_error: {type(exc).__name__}: {detail} (a bug in dovecote; DOVECOTE_DEBUG=1 shows where)")


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 letter``, ``2 letters``: a count a person reads."""
    return f"{n} {word if n == 1 else (many or word + 's')}"

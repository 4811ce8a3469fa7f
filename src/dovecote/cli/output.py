"""How the CLI prints: JSON to stdout, Rich for people, errors to stderr.

Exit codes: 0 success, 1 a check failed or the store failed (I/O), 2 a refusal
or a usage error (nothing was written).
"""

from __future__ import annotations

import sys
from typing import Any

import orjson

from dovecote.textsafe import one_line

EXIT_FAIL, EXIT_REFUSED = 1, 2


def emit_json(value: Any) -> None:
    """Stable JSON: two-space indent, keys in the order the library builds them."""
    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


def error(message: str) -> None:
    """One line on stderr; a refusal often echoes its input, so it is shown escaped (``textsafe``)."""
    sys.stderr.write(f"Error: {one_line(message)}\n")
    sys.stderr.flush()

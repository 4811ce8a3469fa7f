"""How the CLI prints: JSON to stdout, Rich for people, errors to stderr.

Exit codes: 0 success, 1 a check failed or the store failed (I/O), 2 a refusal
or a usage error (nothing was written).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from dovecote.model.results import builtins
from dovecote.model.textsafe import one_line

EXIT_FAIL, EXIT_REFUSED = 1, 2


def emit_json(value: Any) -> None:
    """Stable JSON: two-space indent, keys in the order the library builds them."""
    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


def show(result: Any, *, json: bool, text: Callable[[Any], str | None]) -> None:
    """The one way a command prints its answer: JSON with ``--json``, else its rendering for people.

    ``result`` is a library answer (a typed result or a list of them; ``results.builtins`` is its data);
    ``text`` gets the same plain data and either prints it (Rich) or returns the
    text to write. So the summary can only show what the JSON carries.
    """
    value = builtins(result)
    if json:
        emit_json(value)
        return
    out = text(value)
    if out is not None:
        sys.stdout.write(out)
        sys.stdout.flush()


def emit_json_chunks(chunks: Iterable[bytes]) -> None:
    """``emit_json`` for an answer serialized in pieces (a sweep's rows, a batch at a time)."""
    out = sys.stdout.buffer
    for chunk in chunks:
        out.write(chunk)
    sys.stdout.flush()


def error(message: str) -> None:
    """One line on stderr; a refusal often echoes its input, so it is shown escaped (``textsafe``)."""
    sys.stderr.write(f"Error: {one_line(message)}\n")
    sys.stderr.flush()


def internal_error(exc: BaseException) -> None:
    """One line for a bug, with a stable keyword, instead of a traceback."""
    detail = " ".join(str(exc).split())[:300]
    error(f"internal_error: {type(exc).__name__}: {detail} (a bug in dovecote; DOVECOTE_DEBUG=1 shows where)")


def invocation() -> str:
    """How to run this dovecote again, as a shell command that works when pasted.

    ``make run`` starts ``.venv/bin/dovecote``, which is not on PATH: a bare
    ``dovecote`` in the hints would fail. PATH is used only when it finds this
    very program.
    """
    import os
    import shlex
    import shutil

    exe = os.path.realpath(sys.argv[0])
    if exe.endswith("__main__.py"):  # python -m dovecote
        return f"{shlex.quote(sys.executable)} -m dovecote"
    found = shutil.which("dovecote")
    if found and os.path.realpath(found) == exe:
        return "dovecote"
    rel = os.path.relpath(sys.argv[0])
    return shlex.quote(sys.argv[0] if rel.startswith("..") else rel)

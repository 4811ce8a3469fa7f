"""``dovecote-gc-mail``: the entry point Gas City runs once per mail operation.

Gas City's exec protocol (``GC_MAIL=exec:<program>``) runs ``<program> <op> [arg]``,
gives ``send`` and ``reply`` one JSON object on stdin, reads one JSON value on
stdout, and reads the exit status: 0 success, 2 "unknown operation" (taken as an
empty success, for forward compatibility), anything else an error whose text is
stderr. So this module keeps three rules a general CLI would break: a usage error
exits 1, never 2 (gc would read a failed archive as done); stdin is read only by
``send`` and ``reply`` (older gc hands the others its own terminal); and nothing
heavy is imported before it is needed, since every gc command starts this program
twice (``ensure-running`` first, which loads no handle at all).

Where the mail lives: ``$DOVECOTE_HOME``, else ``$GC_CITY/.dovecote``; never the working
directory (gc runs providers from an agent's worktree). A home that is not there yet
is made on first use, as ``dovecote init`` makes one (an atomic create: of several
processes starting at once, one writes the roster and the rest use it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: Each operation and whether it takes its one argument (only ``ensure-running`` takes none).
OPERATIONS: dict[str, bool] = {
    "ensure-running": False, "send": True, "inbox": True, "check": True, "all": True, "get": True, "read": True,
    "mark-read": True, "mark-unread": True, "archive": True, "delete": True, "reply": True, "thread": True,
    "count": True,
}
#: gc reads this exit status as "an operation this provider does not know": an empty success.
UNKNOWN_OPERATION = 2
#: The token later gc reads on stderr as its ``ErrNotFound`` (harmless to older gc).
NOT_FOUND = "gc-mail-error:not-found"


def home_path(env: dict[str, str] | os._Environ[str]) -> Path:
    """The home the mail lives in: ``$DOVECOTE_HOME``, else ``$GC_CITY/.dovecote``; a ``ValueError`` naming
    both when neither is set (the working directory is never a guess)."""
    if env.get("DOVECOTE_HOME"):
        return Path(env["DOVECOTE_HOME"]).expanduser().absolute()
    if env.get("GC_CITY"):
        return Path(env["GC_CITY"]).expanduser().absolute() / ".dovecote"
    raise ValueError("no dovecote home: set GC_CITY (the city's root) or DOVECOTE_HOME")


def ensure_home(home: Path) -> None:
    """Make the home unless its roster is there (``handle.home.init``: one atomic create wins)."""
    if (home / "config.toml").is_file():
        return
    from dovecote.handle.home import init

    init(home)


def fail(text: str, status: int = 1) -> int:
    sys.stderr.write(text.rstrip("\n") + "\n")
    return status


def main(argv: list[str] | None = None) -> int:
    """Run one operation; the exit status as the exec protocol reads it."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        return fail(f"usage: dovecote-gc-mail <operation> [argument]; operations: {', '.join(OPERATIONS)}")
    op, rest = args[0], args[1:]
    if op not in OPERATIONS:
        return fail(f"unknown operation {op!r}", UNKNOWN_OPERATION)
    if len(rest) != int(OPERATIONS[op]):
        return fail(f"{op} takes {'one argument' if OPERATIONS[op] else 'no argument'}, got {len(rest)}")
    try:
        home = home_path(os.environ)
        ensure_home(home)
        if op == "ensure-running":
            return 0
        from dovecote.gc import operations

        out = operations.run(home, op, rest[0], sys.stdin.buffer.read if op in ("send", "reply") else None)
    except Exception as e:  # every failure is one line on stderr and status 1: gc shows the line
        return fail(describe(e))
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    return 0


def describe(e: BaseException) -> str:
    """One line for gc to show: a refusal's keyword and words (an unknown id with gc's not-found token)."""
    reason = getattr(e, "reason", None)
    if reason is None:
        return f"Error: {type(e).__name__}: {e}" if not isinstance(e, ValueError) else f"Error: {e}"
    line = f"Error: {reason}: {getattr(e, 'detail', e)}"
    return f"{NOT_FOUND} {line}" if reason == "unknown_letter" else line


def run() -> None:
    """The console script."""
    sys.exit(main())

"""The one way a text listing that can be long is printed: the first rows, then what was left out.

A sweep of a big home lists hundreds of thousands of open letters; a person
wants the counts and the oldest few. So every long text listing (``sweep``,
``box``, ``inbox --detailed``, ``cases``, ``search``, ``trackers``) shows at most
``--limit`` rows (``DEFAULT_LIMIT`` unless told; ``--no-limit`` for every one),
and when it leaves rows out its last line says how many and the exact command
that lists them, as the inbox audit's compact layout points at ``--detailed``.
``--json`` is never cut here: a verb that limits its answer (``search``,
``trackers``) does so in the answer itself, the same on every face.

The rows are joined into one string and written at once: one terminal write
per row (Rich's ``print``) was 57 of a 61-second text sweep. Light (no Typer,
no Rich): the quick ``inbox`` path prints through it; the options are in
``cli.common``.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

from dovecote.cli.output import invocation

#: Rows a text listing shows unless told: a screen or two, the oldest (or newest) first, under the counts
#: that describe them all; more than that is a list to page through or to read as JSON, not to glance at.
DEFAULT_LIMIT = 50

T = TypeVar("T")


def rows_shown(limit: int | None, no_limit: bool) -> int | None:
    """How many rows a text listing shows (None: every one), from ``--limit`` and ``--no-limit``."""
    if no_limit:
        return None
    return DEFAULT_LIMIT if limit is None else limit


def rerun(replace: Sequence[str]) -> str:
    """This very command as a shell command, its ``--limit``/``--no-limit`` replaced by ``replace``."""
    argv = sys.argv[1:]
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--limit":
            skip = True
            continue
        if arg == "--no-limit" or arg.startswith("--limit="):
            continue
        kept.append(arg)
    return " ".join([invocation(), *map(shlex.quote, [*kept, *replace])])


def left_out(count: int, replace: Sequence[str] = ("--no-limit",)) -> str:
    """The footer of a listing that left ``count`` rows out: how many, and the command that lists them."""
    return f"  ({count} more left out: `{rerun(replace)}` lists them)\n"


def listing(rows: Sequence[T], line: Callable[[T], str], limit: int | None) -> str:
    """The first ``limit`` rows (None: all), each rendered to one line by ``line``, and the footer
    when some were left out: one string, for one write."""
    shown = rows if limit is None else rows[:limit]
    text = "".join(map(line, shown))
    if len(shown) < len(rows):
        text += left_out(len(rows) - len(shown))
    return text

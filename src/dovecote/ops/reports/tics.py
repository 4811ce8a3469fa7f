"""Where the current tic comes from.

In order: the ``--current-tic`` a caller passes; the roster's tic source (the
last ``{"type": "tic"}`` row of the newest ``*.jsonl`` file in that folder,
newest by name, which is how the team's tic logs are dated); otherwise none,
and staleness falls back to hours. A relative tic source is taken from the
owner's first root.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from dovecote.ops.context import Context


def tic_dir(ctx: Context) -> Path | None:
    src = ctx.roster.tic_source
    if not src:
        return None
    p = Path(src)
    if not p.is_absolute():
        base = ctx.roster.owner_roots[0] if ctx.roster.owner_roots else str(ctx.layout.root.parent)
        p = Path(base) / p
    return p


def _tic_of(row: object) -> int | None:
    if not isinstance(row, dict) or row.get("type") != "tic":
        return None
    for key in ("domain_counter_after", "tic", "n"):
        v = row.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def tic_from_source(folder: Path) -> int | None:
    """The last tic row of the newest tic file; None when there is none."""
    try:
        files = sorted(folder.glob("*.jsonl"))
    except OSError:
        return None
    for f in reversed(files):
        try:
            lines = f.read_bytes().splitlines()
        except OSError:
            continue
        for line in reversed(lines):
            try:
                tic = _tic_of(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
            if tic is not None:
                return tic
    return None


def current_tic(ctx: Context, given: int | None) -> tuple[int | None, str]:
    """(tic, where it came from: "flag", "roster" or "none")."""
    if given is not None:
        return given, "flag"
    folder = tic_dir(ctx)
    if folder is not None:
        tic = tic_from_source(folder)
        if tic is not None:
            return tic, "roster"
    return None, "none"

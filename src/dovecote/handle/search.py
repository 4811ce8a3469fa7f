"""The handle's ``search`` verb, importable without the rest of the handle.

A cold ``dovecote search`` is mostly start-up, and ``dovecote.handle.api`` loads
every use case (mail, the inbox folds, reports, the roster editor) to offer
them all. The search verb needs only a context and ``ops.search.query``, so it lives
here, and ``Dovecote.search`` calls the same function: one path, two doors.
It stands where ``api`` stands (above ops; the faces may import it).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from dovecote.errors import Refusal
from dovecote.ops.context import Actor as Actor  # re-exported: a face names who acts without loading the handle
from dovecote.ops.context import Context
from dovecote.roster.home import Layout, find_home
from dovecote.verbs import Search, checked

if TYPE_CHECKING:
    from dovecote.ops.search.query import SearchResult


def home_of(root: str | os.PathLike[str] | None) -> Path:
    """The home found the way git finds a repository (``home.find_home``); refuses ``no_home``."""
    home = find_home(root)
    if not (home / "config.toml").is_file():
        raise Refusal("no_home", f"no dovecote home at {home}; run `dovecote init`")
    return home


def search(ctx: Context, v: Search, /, *, now: datetime | None = None) -> SearchResult:
    """Full text over entity mail, newest first (see ``ops.search.query.search``)."""
    from dovecote.ops.search import query as search_op

    v = checked(v)
    return search_op.search(ctx, v.query, entity=v.entity_id, include_terminal=v.include_terminal, limit=v.limit,
                            now=now)


def search_home(root: str | os.PathLike[str] | None, v: Search, /, *, actor: Actor | None = None) -> SearchResult:
    """``open_home(root, actor=actor).search(v)`` without building the whole handle."""
    return search(Context.open(Layout(home_of(root)), actor=actor), v)

"""The roster read without ``tomllib``: ``config.toml``'s decoded document kept in ``cache/roster``.

Importing ``tomllib`` compiles its regular expressions, about thirty million
instructions, most of what a cold ``dovecote inbox`` spends on the roster. So
the document ``tomllib`` decoded is kept (``marshal``) under the SHA-256 of the
exact bytes it was decoded from, and a later process that reads the same bytes
takes the document from there. Every check ``roster.parse`` makes runs on it
as on a fresh decode, so the roster is the same value (tests/roster/test_roster_cache.py).

A cache like every other (DESIGN 1.1): written whole (tmp + rename, through
``Layout.cache_dir``), read with ``O_NOFOLLOW``, not fsynced (losing it costs
one ``tomllib`` import); an entry that does not decode, or is for other bytes,
is ignored. A document holding a TOML date or time (``marshal`` keeps neither)
is simply not kept. Reading never writes (a refused command leaves the home as
it found it): a document decoded here waits until a face calls ``keep`` after
a call that succeeded (the CLI's cold inbox and hook paths, which start a new
process each time; a long-lived handle decodes its roster once anyway).
"""

from __future__ import annotations

import marshal
import os
from typing import Any

from dovecote.errors import DovecoteError
from dovecote.roster.config import Roster, decode_toml, parse, read
from dovecote.roster.home import Layout
from dovecote.util import fileops
from dovecote.util.digests import sha256

FOLDER = "roster"
#: 1: (version, sha256 of the bytes, document)
VERSION = 1


#: The last document this process decoded per home and has not kept yet: home -> (sha256 of the bytes, document).
_decoded: dict[str, tuple[str, dict[str, Any]]] = {}


def load(layout: Layout) -> Roster:
    """The home's roster (as ``roster.load(layout.config)``), its TOML decoded once per content."""
    text = read(layout.config)
    key = sha256(text).hexdigest()
    doc = _kept(layout, key)
    if doc is None:
        doc = decode_toml(text)
        roster = parse(text, doc)
        _decoded[str(layout.root)] = (key, doc)  # kept by ``keep``, once a read with it succeeded
        return roster
    return parse(text, doc)


def keep(layout: Layout, roster: Roster) -> None:
    """Keep the document ``roster`` was parsed from, if this process decoded it (after a read that succeeded)."""
    got = _decoded.get(str(layout.root))
    if got is not None and got[0] == roster.signature:
        del _decoded[str(layout.root)]
        _keep(layout, *got)


def _entry(layout: Layout, *, create: bool) -> str:
    return os.path.join(layout.cache_dir(FOLDER, create=create), "config.marshal")


def _kept(layout: Layout, key: str) -> dict[str, Any] | None:
    try:
        with os.fdopen(os.open(_entry(layout, create=False), os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
            entry = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError, DovecoteError):
        return None
    if not (isinstance(entry, tuple) and len(entry) == 3 and entry[:2] == (VERSION, key)
            and isinstance(entry[2], dict)):
        return None
    doc: dict[str, Any] = entry[2]
    return doc


def _keep(layout: Layout, key: str, doc: dict[str, Any]) -> None:
    """Write the entry; a document marshal cannot keep, or a cache that cannot be written, is not kept."""
    try:
        fileops.replace_cache(_entry(layout, create=True), marshal.dumps((VERSION, key, doc)))
    except (OSError, ValueError, DovecoteError):
        return

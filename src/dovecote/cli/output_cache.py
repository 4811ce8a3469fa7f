"""Answer a repeated read from its cached rendering, before importing anything heavy.

Session-start hooks run ``dovecote inbox ... --format injection`` in every new
agent session, so a cold call must cost little more than starting Python.
After a cacheable command renders, it stores its exact output together with
what the output depends on: for each box it read, the store's ``Probe`` of the
mark its fold was fed to (the ledger's inode and size there: ledgers only grow,
so any new letter changes the size); for the other files (the roster, the
loose files' folder, the tic source) their (inode, size, mtime) as before the
read; and, when the output shows ages in hours, the moment the first of them
changes. The next identical call (same argv, working directory and
environment) checks those and prints the stored bytes. The cache lives in
``<home>/cache`` and is deletable like every cache. The entries are read and written only
through ``Layout.cache_dir`` and ``O_NOFOLLOW``: a ``cache`` that is a file or
a symlink (even one pointing at a real cache elsewhere) just means no cache.

This module imports only cheap parts of the standard library, and two leaf modules of its own
(the env names the CLI reads, and the one file-stamp rule).
"""

from __future__ import annotations

import marshal
import os
import sys
import time

from dovecote.cli.utf8 import ENV_TEXT
from dovecote.util.digests import sha256
from dovecote.util.osutil import file_stamp

CACHEABLE = frozenset({"inbox"})


def _split_home(argv: list[str]) -> tuple[str | None, list[str]]:
    if len(argv) >= 2 and argv[0] == "--home":
        return argv[1], argv[2:]
    if argv and argv[0].startswith("--home="):
        return argv[0].split("=", 1)[1], argv[1:]
    return None, argv


def _entry_path(argv: list[str], *, create: bool) -> str | None:
    explicit, rest = _split_home(argv)
    if not rest or rest[0] not in CACHEABLE:
        return None
    from dovecote.roster.home import Layout, find_home

    folder = Layout(find_home(explicit)).cache_dir("cli", create=create)
    h = sha256()
    for part in (*argv, os.getcwd(), *(os.environ.get(k, "") for k in ENV_TEXT)):
        h.update(part.encode("utf-8", "surrogateescape") + b"\x00")
    from dovecote._version import __version__

    h.update(__version__.encode())
    return os.path.join(folder, h.hexdigest()[:32])


def try_cached(argv: list[str]) -> bool:
    """Print the cached output of this exact call if it is still true; else False."""
    from dovecote.errors import DovecoteError

    try:
        path = _entry_path(argv, create=False)
        if path is None:
            return False
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
            entry = marshal.load(f)
        valid_until = entry["valid_until"]
        if valid_until is not None and time.time() >= valid_until:
            return False
        for dep, seen in entry["deps"]:
            if file_stamp(dep) != tuple(seen):
                return False
        for path, ident, size in entry["boxes"]:
            if file_stamp(path)[:2] != (ident, size):
                return False
        sys.stdout.buffer.write(entry["out"])
        sys.stdout.flush()
        return True
    except (OSError, EOFError, ValueError, TypeError, KeyError, DovecoteError):
        return False


def snapshot(deps: list[str]) -> list[tuple[str, tuple[int, int, int]]]:
    """Stat the inputs BEFORE reading them: a change in between then only
    makes the stored entry look older than it is, never newer."""
    return [(d, file_stamp(d)) for d in deps]


def remember(
    argv: list[str],
    out: bytes,
    deps: list[tuple[str, tuple[int, int, int]]],
    boxes: list[tuple[str, int, int]],
    valid_until: float | None,
) -> None:
    """Store a rendering for ``try_cached``; any failure just means no cache.

    Not fsynced: losing a cache entry in a crash costs one slow call, nothing more.
    """
    from dovecote.errors import DovecoteError
    from dovecote.util import fileops

    try:
        path = _entry_path(argv, create=True)
        if path is None:
            return
        body = marshal.dumps({"out": out, "deps": deps, "boxes": [tuple(b) for b in boxes], "valid_until": valid_until})
        fileops.replace_cache(path, body)
    except (OSError, ValueError, DovecoteError):
        return

"""The git merge driver for ledgers: a union by id.

Ledgers only grow, so the right merge of two versions is every line of ours
followed by every line of theirs that ours does not hold. The ancestor is not
needed. Lines are compared by id (the hash of their bytes), so a malformed line
survives like any other: a merge never drops a line and never writes conflict
markers. It does normalize line endings: blank lines (which hold no letter)
are left out and a trailing CR is removed, neither of which changes an id.

Set up once per clone::

    git config merge.dovecote.name "dovecote ledger union"
    git config merge.dovecote.driver "dovecote merge-driver %O %A %B"

and in ``.gitattributes``: ``letters.jsonl merge=dovecote`` (an in-repo box
gets that file on birth when it has none).
"""

from __future__ import annotations

from pathlib import Path

from dovecote.ledger.jsonl import write_atomic
from dovecote.model.letters import letter_id


def _lines(data: bytes) -> list[bytes]:
    return [ln.rstrip(b"\r") for ln in data.split(b"\n") if ln.strip()]


def union(ours: bytes, theirs: bytes) -> bytes:
    """Our lines, then their lines we lack; one newline-terminated line each."""
    out = _lines(ours)
    seen = {letter_id(ln) for ln in out}
    for ln in _lines(theirs):
        i = letter_id(ln)
        if i not in seen:
            seen.add(i)
            out.append(ln)
    return b"".join(ln + b"\n" for ln in out)


def merge_files(ancestor: Path, ours: Path, theirs: Path) -> int:
    """Write the union into ``ours`` (what git expects); return how many lines it gained."""
    del ancestor  # append-only: the union is right whatever the ancestor held
    mine = ours.read_bytes() if ours.exists() else b""
    other = theirs.read_bytes() if theirs.exists() else b""
    merged = union(mine, other)
    write_atomic(ours, merged)
    return len(_lines(merged)) - len(_lines(mine))

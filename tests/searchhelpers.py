"""Helpers for the search, stale-check and organize tests (a plain module, imported by name).

Messages are written straight into the recipient's ledger (``build_message`` +
``canonical_line``) so a test controls ``ts`` and tics exactly; lifecycle
moves that need no special time go through the real guarded verbs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dovecote.handle.api import Dovecote
from dovecote.model.addresses import entity
from dovecote.model.envelope import build_message
from dovecote.model.letters import canonical_line
from dovecote.verbs import EntityAdd, Move
from helpers import new_home


def T(day: int = 5, hour: int = 10, minute: int = 0) -> str:
    """An ISO-8601 UTC stamp in July 2026."""
    return f"2026-07-{day:02d}T{hour:02d}:{minute:02d}:00Z"


def mail_home(tmp: Path, *entities: str) -> Dovecote:
    """A fresh home with these entities registered (default: ent_a, ent_b)."""
    dc = new_home(tmp)
    for e in entities or ("ent_a", "ent_b"):
        dc.add_entity(EntityAdd(entity_id=e))
    return dc


def put_message(
    dc: Dovecote, to: str, subject: str, *, body: str = "", ts: str | None = None, sender: str = "ent_x", **fields: Any
) -> str:
    """Append one message letter to ``to``'s box; return its id."""
    msg = build_message(ts=ts or T(), sender=sender, recipient=to, subject=subject, body=body, **fields)
    ((mid, _),) = dc.store.append(entity(to), [canonical_line(msg)])
    return mid


def put_link(dc: Dovecote, to: str, item: str, kind: str, *, ts: str, prev: str | None = None, **extra: Any) -> str:
    """Append one lifecycle link written at ``ts`` (for hours-mode tests); return its id."""
    link = {"ts": ts, "agent": to, "kind": kind, "ref": item, "prev": prev or item, **extra}
    ((lid, _),) = dc.store.append(entity(to), [canonical_line(link)])
    return lid


def finish(dc: Dovecote, ent: str, item: str, *, current: int | None = None) -> None:
    """WAIT -> ACTIVE -> DONE through the real guarded verbs."""
    dc.move(Move(kind="seen", entity_id=ent, ref=item, current_tic=current))
    dc.move(Move(kind="claim", entity_id=ent, ref=item, current_tic=current))
    dc.move(Move(kind="complete", entity_id=ent, ref=item, current_tic=current))


def decline(dc: Dovecote, ent: str, item: str, *, current: int | None = None) -> None:
    """WAIT -> NACK through the real guarded verbs."""
    dc.move(Move(kind="seen", entity_id=ent, ref=item, current_tic=current))
    dc.move(Move(kind="nack", entity_id=ent, ref=item, current_tic=current, reason="not ours"))


def ids(result: dict[str, Any]) -> list[str]:
    """The ids of a search answer's matches, in order."""
    return [m["id"] for m in result["matches"]]


def tree(root: Path) -> dict[str, bytes]:
    """Every file and symlink under ``root`` (relative path -> bytes, or the link target)."""
    out: dict[str, bytes] = {}
    if not root.exists():
        return out
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = b"->" + str(p.readlink()).encode()
        elif p.is_file():
            out[rel] = p.read_bytes()
    return out

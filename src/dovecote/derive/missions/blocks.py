"""The block registry: a project's work units, derived from its block letters.

Pure (DESIGN 4): fed letters, never a file. A block is added by a ``kind:
block`` letter with ``op: add``; ``op: bump`` moves its boundary
(``boundary_version``); a ``kind: receipt_import`` letter (the human gesture
that takes a mission's receipt candidate into the block) moves its store
version. Each version is the highest one a letter names, so two ledgers
union-merged by git give the same registry whatever the order.

Each project also has one skeleton id, ``skeleton:<project>``: a valid block
anchor for a skeleton-scoped mission. A block id is a name (no ``:``), so it can
never be mistaken for a skeleton.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dovecote.model.letters import Letter

BLOCK_KIND = "block"
IMPORT_KIND = "receipt_import"


def skeleton_id(project: str) -> str:
    """The one skeleton id of ``project``."""
    return f"skeleton:{project}"


@dataclass(slots=True)
class Block:
    """One block as its letters make it."""

    block_id: str
    project: str
    added: str  # the id of the letter that added it
    added_at: str | None
    boundary_version: int = 1
    store_version: int = 0
    imports: list[dict[str, Any]] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        return {"block_id": self.block_id, "project": self.project, "boundary_version": self.boundary_version,
                "store_version": self.store_version, "added_at": self.added_at, "imports": len(self.imports)}


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def fold(letters: Iterable[Letter]) -> dict[str, Block]:
    """Every block among ``letters`` (one project's box), by id.

    A bump or import seen before its add (ledgers merged in another order) is
    applied once the add is read: letters are collected, then applied.
    """
    adds: dict[str, Block] = {}
    later: list[tuple[str, dict[str, Any]]] = []
    for lt in letters:
        if lt.kind not in (BLOCK_KIND, IMPORT_KIND):
            continue
        d = lt.data()
        bid = d.get("block_id")
        if not isinstance(bid, str):
            continue
        if lt.kind == BLOCK_KIND and d.get("op") == "add":
            if bid not in adds and isinstance(d.get("project"), str):
                adds[bid] = Block(bid, d["project"], lt.id, lt.ts)
        else:
            later.append((lt.id, d))
    for lid, d in later:
        b = adds.get(d["block_id"])
        if b is None:
            continue
        if d.get("kind") == BLOCK_KIND and d.get("op") == "bump":
            b.boundary_version = max(b.boundary_version, _int(d.get("boundary_version"), 0))
        elif d.get("kind") == IMPORT_KIND:
            b.store_version = max(b.store_version, _int(d.get("store_version"), 0))
            b.imports.append({**d, "letter_id": lid})
    return adds


def imported(block: Block, mission_letter: str) -> dict[str, Any] | None:
    """The import of the candidate in mission letter ``mission_letter``, if it was imported."""
    return next((i for i in block.imports if i.get("candidate_letter_id") == mission_letter), None)


def landing_import(blocks: Iterable[Block], mission_id: str, candidate: str | None, store_version: int
                   ) -> dict[str, Any] | None:
    """The import a ``landed`` letter stands on, if the registry records it: of ``mission_id``'s candidate in
    mission letter ``candidate`` (the merge_wait head it follows), at ``store_version``.

    The landed law (``ops.missions.post.post``): a letter's own ``receipt {imported: true, store_version}`` is
    only its claim; the person's import is what the block registry records.
    """
    return next((i for b in blocks for i in b.imports
                 if i.get("mission_id") == mission_id and i.get("candidate_letter_id") == candidate
                 and _int(i.get("store_version"), 0) == store_version), None)


def block_letter(project: str, block_id: str, op: str, boundary_version: int, ts: str) -> dict[str, Any]:
    """The letter that adds (``op: add``, version 1) or bumps a block."""
    return {"kind": BLOCK_KIND, "ts": ts, "op": op, "project": project, "block_id": block_id,
            "boundary_version": boundary_version, "what": f"block {op}: {block_id} at boundary {boundary_version}"}

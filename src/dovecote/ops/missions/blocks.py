"""Blocks and receipt import: the writes and reads of a project's block registry.

A block's letters live in its project's box; the registry is derived from them
(``derive.missions.blocks``). Every write here is a compare-and-swap under that box's
guard: the registry is folded from what the guard read, the rule checked, then
the letter appended (or nothing, with the refusal's keyword).

``import_receipt`` is a human gesture (DESIGN 9): its caller
(``ops.missions.post.import_receipt``) has checked the person's gesture passphrase
(``ops.missions.gestures.check``) and passes the origin it vouched for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dovecote.derive.missions import blocks as blocks_fold
from dovecote.derive.missions.blocks import IMPORT_KIND, Block, skeleton_id
from dovecote.derive.missions.letter import IMPORT_FROM
from dovecote.errors import Refusal
from dovecote.model.addresses import project as project_box
from dovecote.model.letters import canonical_line, format_ts
from dovecote.model.results import Result

if TYPE_CHECKING:
    from dovecote.derive.missions.chain import Entry
    from dovecote.ops.context import Context

class BlockRow(Result, frozen=True):
    """One block as the registry has it (``derive.missions.blocks.Block.row``)."""

    block_id: str
    project: str
    boundary_version: int
    store_version: int
    added_at: str | None
    imports: int

    @classmethod
    def of(cls, b: Block) -> BlockRow:
        return cls(b.block_id, b.project, b.boundary_version, b.store_version, b.added_at, len(b.imports))


class BlockChange(BlockRow, frozen=True):
    """A block added or bumped: the block after it, and the letter that did it (``appended``: false when
    adding it again changed nothing)."""

    letter_id: str
    appended: bool

    @classmethod
    def after(cls, b: Block, letter_id: str, appended: bool) -> BlockChange:
        row = BlockRow.of(b)
        return cls(row.block_id, row.project, row.boundary_version, row.store_version, row.added_at, row.imports,
                   letter_id, appended)


class ReceiptImported(Result, frozen=True):
    """A mission's receipt candidate imported into its block (``deduped``: it was imported already)."""

    letter_id: str | None
    mission_id: str | None
    candidate_letter_id: str | None
    project: str | None
    block_id: str | None
    boundary_version: int | None
    store_version: int | None
    deduped: bool


class BlockListing(Result, frozen=True):
    """Every block (of one project, or of all), each project's skeleton id, and the boxes out of reach."""

    blocks: list[BlockRow]
    count: int
    skeletons: dict[str, str]
    unreachable: list[str]


def known_project(ctx: Context, name: str) -> str:
    p = ctx.roster.project(name)
    if p is None:
        raise Refusal("unknown_project", f"no project {name!r} in the roster")
    return p.name


def registry(ctx: Context, project: str) -> dict[str, Block]:
    """``project``'s blocks as its box holds them now (empty when the box is out of reach here)."""
    where = project_box(project)
    if not ctx.store.reachable(where):
        return {}
    return blocks_fold.fold(ctx.store.read(where).letters)


def add(ctx: Context, project: str, block_id: str) -> BlockChange:
    """Add ``block_id`` to ``project`` (boundary 1, store 0); adding it again changes nothing."""
    project = known_project(ctx, project)
    where = project_box(project)
    with ctx.store.guarded(where) as g:
        found = blocks_fold.fold(g.letters).get(block_id)
        if found is not None:
            return BlockChange.after(found, found.added, False)
        ts = format_ts(ctx.now())
        lid, appended = g.append([canonical_line(blocks_fold.block_letter(project, block_id, "add", 1, ts))])[0]
    return BlockChange.after(Block(block_id, project, lid, ts), lid, appended)


def bump(ctx: Context, block_id: str, project: str | None) -> BlockChange:
    """Move ``block_id``'s boundary one version on (the project holding it, or the one named)."""
    if project is None:
        holders = [p.name for p in ctx.roster.projects if block_id in registry(ctx, p.name)]
        if not holders:
            raise Refusal("unknown_block", f"no project has a block {block_id!r}")
        if len(holders) > 1:
            raise Refusal("ambiguous_name", f"block {block_id!r} is in {', '.join(holders)}: name --project")
        project = holders[0]
    project = known_project(ctx, project)
    with ctx.store.guarded(project_box(project)) as g:
        b = blocks_fold.fold(g.letters).get(block_id)
        if b is None:
            raise Refusal("unknown_block", f"project {project} has no block {block_id!r}")
        b.boundary_version += 1
        line = canonical_line(blocks_fold.block_letter(project, block_id, "bump", b.boundary_version,
                                                       format_ts(ctx.now())))
        lid, _ = g.append([line])[0]
    return BlockChange.after(b, lid, True)


def listing(ctx: Context, project: str | None) -> BlockListing:
    """Every block (of one project, or of all), with each project's skeleton id; unreachable boxes named."""
    names = [known_project(ctx, project)] if project is not None else [p.name for p in ctx.roster.projects]
    rows: list[BlockRow] = []
    unreachable = []
    for name in names:
        if not ctx.store.reachable(project_box(name)):
            unreachable.append(str(project_box(name)))
            continue
        rows.extend(BlockRow.of(b) for b in registry(ctx, name).values())
    return BlockListing(rows, len(rows), {n: skeleton_id(n) for n in names}, unreachable)


def anchor_known(blocks: dict[str, Block], project: str, block_id: str) -> bool:
    """Whether ``block_id`` is a block of ``project`` or its skeleton."""
    return block_id in blocks or block_id == skeleton_id(project)


def import_receipt(ctx: Context, head: Entry, project: str, via: str) -> ReceiptImported:
    """Take the merge_wait head's receipt candidate into its block: the block's store version moves on.

    ``via`` is the checked gesture's origin (the caller checked the passphrase).
    Refused ``invalid_phase`` (the head is not merge_wait), ``incomplete_evidence``
    (no candidate), ``unknown_block`` and ``stale_scope`` (the boundary moved
    since the candidate was earned). Importing the same candidate again changes
    nothing (``deduped``).
    """
    if head.phase != IMPORT_FROM:
        raise Refusal("invalid_phase", f"mission {head.mission_id} is at {head.phase}: only a merge_wait head's "
                                       "receipt candidate is imported")
    cand = head.mission.get("receipt_candidate")
    if not isinstance(cand, dict):
        raise Refusal("incomplete_evidence", f"the merge_wait head {head.id} carries no receipt_candidate")
    bid, scope = str(cand.get("block_id")), cand.get("scope") or {}
    with ctx.store.guarded(project_box(project)) as g:
        b = blocks_fold.fold(g.letters).get(bid)
        if b is None:
            raise Refusal("unknown_block", f"project {project} has no block {bid!r} (the candidate's block)")
        earlier = blocks_fold.imported(b, head.id)
        if earlier is not None:
            return _import_row(earlier, deduped=True)
        given = scope.get("boundary_version")
        if given != b.boundary_version:
            raise Refusal("stale_scope", f"the candidate for block {bid} proves boundary_version {given} but the "
                                         f"live block is at boundary_version {b.boundary_version}",
                          expected=b.boundary_version, given=given)
        obj = {
            "kind": IMPORT_KIND, "ts": format_ts(ctx.now()), "agent": ctx.actor.author(), "project": project,
            "block_id": bid, "mission_id": head.mission_id, "candidate_letter_id": head.id,
            "boundary_version": b.boundary_version, "store_version": b.store_version + 1, "via": via,
            "what": f"receipt import: {head.mission_id} into {bid} at store version {b.store_version + 1}",
        }
        lid, _ = g.append([canonical_line(obj)])[0]
    return _import_row({**obj, "letter_id": lid}, deduped=False)


def _import_row(d: dict[str, Any], *, deduped: bool) -> ReceiptImported:
    keys = ("letter_id", "mission_id", "candidate_letter_id", "project", "block_id", "boundary_version",
            "store_version")
    return ReceiptImported(**{k: d.get(k) for k in keys}, deduped=deduped)

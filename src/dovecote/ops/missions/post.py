"""Missions: post a letter on a chain (compare-and-swap), read heads and chains, archive (a human gesture).

Law (DESIGN 6): posting validates the letter (``derive.missions.letter``), runs
the guards, then under the box's guard derives the head from what the guard
read and appends only if the letter names it (``stale_head`` otherwise, naming
the expected and given ids) and the phase graph lets its phase follow the
head's (``invalid_transition``). m1nd posted without a lock, so two concurrent
posts could fork a chain; here the second one reads the first one's letter
under the lock and is refused.

The landed law has two halves. The letter's own (``derive.missions.letter``):
landed carries ``receipt {imported: true, store_version >= 1}``. And the
registry's, here: that claim holds only if the project's block registry records
the person's import of this mission's candidate (the merge_wait head the letter
follows) at that store version; otherwise ``landed_law``, nothing appended, on
every face, since every face posts through ``post``.

The two human gestures (``archive``, ``import_receipt``) are checked by
``ops.missions.gestures.check`` (the person's gesture passphrase) before anything is read.

Where a mission lives: the box of the project the caller is bound to
(``as_project``), else home. A reader looks for it in home and every project box.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dovecote.derive.missions import chain as chains
from dovecote.derive.missions import letter as ml
from dovecote.derive.missions.blocks import landing_import, skeleton_id
from dovecote.derive.missions.letter import MissionLetter, Phase
from dovecote.errors import Refusal
from dovecote.model.addresses import HOME, Address
from dovecote.model.addresses import project as project_box
from dovecote.model.letters import letter_id
from dovecote.model.results import Result
from dovecote.model.vocab import ENGINE_AGENT, looks_like_engine
from dovecote.ops.missions import blocks, gestures

if TYPE_CHECKING:
    from dovecote.derive.missions.chain import Entry
    from dovecote.ops.context import Context


class MissionPosted(Result, frozen=True):
    """A mission letter posted (``deduped``: the very letter was there already, nothing appended)."""

    letter_id: str
    mission_id: str
    mission_seq: int
    phase: str
    box: str
    deduped: bool


class MissionArchived(Result, frozen=True):
    """A mission set aside: the archived letter appended to its chain (a human gesture)."""

    letter_id: str
    mission_id: str
    mission_seq: int
    deduped: bool
    phase: str
    box: str


class MissionHead(Result, frozen=True):
    """One mission as its head letter has it (``derive.missions.chain.Mission.head_row``), and the box it is in.

    ``block_id``, ``brain_ref`` and ``updated_at`` are the head's mission object's, as written (null if absent).
    """

    mission_id: str
    head_letter_id: str
    phase: str
    mission_seq: int
    superseded_count: int
    block_id: Any
    brain_ref: Any
    updated_at: Any
    box: str


class MissionListing(Result, frozen=True):
    """One head per mission, the counts by phase, how many wait to land, and the boxes out of reach."""

    missions: list[MissionHead]
    count: int
    landing: int
    by_phase: dict[str, int]
    unreachable: list[str]


class ChainLetter(Result, frozen=True):
    """One letter of a mission's chain as a face shows it (``derive.missions.chain.Entry.row``)."""

    letter_id: str
    mission_seq: int
    phase: str
    prev_letter_id: str | None
    agent: str | None
    ts: str | None
    mission: dict[str, Any]


class MissionChain(MissionHead, frozen=True):
    """One mission whole: its head, its chain root to head, and the letters off it (``forks``)."""

    chain: list[ChainLetter]
    forks: list[str]


def post(ctx: Context, data: Mapping[str, Any], as_project: str | None) -> MissionPosted:
    """Post one mission letter; ``{letter_id, mission_id, mission_seq, deduped, phase, box}``."""
    m = ml.validate(data)
    if m.phase == Phase.archived:
        raise Refusal("human_gesture_required", "archiving a mission is a human gesture (dovecote mission archive "
                                                "at a terminal, or the Human View); no post may archive")
    agent = ctx.actor.author()
    if looks_like_engine(agent):
        raise Refusal("reserved_agent", f"{ENGINE_AGENT} is reserved for letters dovecote mints")
    bound = blocks.known_project(ctx, as_project) if as_project is not None else None
    _guards(ctx, m, bound)
    if m.phase == Phase.landed:
        _landed_on_an_import(ctx, m, bound)
    return _append(ctx, project_box(bound) if bound else HOME, m, agent)


def _guards(ctx: Context, m: MissionLetter, bound: str | None) -> None:
    """brain_mismatch, unknown_block, stale_scope: each refuses before anything is read under a lock."""
    if bound is not None:
        p = ctx.roster.project(bound)
        names = {bound.lower(), *(a.lower() for a in (p.aliases if p else ()))}
        if m.brain_ref.lower() not in names:
            raise Refusal("brain_mismatch", f"the letter names brain_ref {m.brain_ref!r} but the caller is bound to "
                                            f"{bound!r}: fix the letter or post as that project")
    if m.synthetic:
        return
    p = ctx.roster.project(bound or m.brain_ref)
    if p is None:
        raise Refusal("unknown_block", f"brain_ref {m.brain_ref!r} is no project in the roster, so no block is "
                                       "known: name a project, or set synthetic: true for a probe")
    reg = blocks.registry(ctx, p.name)
    if not blocks.anchor_known(reg, p.name, m.block_id):
        raise Refusal("unknown_block", f"project {p.name} has no block {m.block_id!r} (and it is not its skeleton "
                                       f"{skeleton_id(p.name)}): add it with dovecote block add, or set "
                                       "synthetic: true for a probe")
    c = m.receipt_candidate
    if c is not None:
        live = reg.get(c.block_id)
        if live is None:
            raise Refusal("unknown_block", f"the receipt candidate names block {c.block_id!r}, which project "
                                           f"{p.name} does not have")
        if c.scope.boundary_version != live.boundary_version:
            raise Refusal("stale_scope", f"the receipt candidate for block {c.block_id} proves boundary_version "
                                         f"{c.scope.boundary_version} but the live block is at boundary_version "
                                         f"{live.boundary_version}: re-earn it against the live boundary",
                          expected=live.boundary_version, given=c.scope.boundary_version)


def _landed_on_an_import(ctx: Context, m: MissionLetter, bound: str | None) -> None:
    """``landed_law`` unless the block registry records the import this landed letter claims.

    Read before the box's lock: imports only ever grow, so one found here is
    there under the lock too, and the compare-and-swap then proves the letter
    follows the very head whose candidate was imported.
    """
    claimed = m.receipt.store_version if m.receipt is not None else 0
    p = ctx.roster.project(bound or m.brain_ref)
    reg = blocks.registry(ctx, p.name) if p is not None else {}
    if landing_import(reg.values(), m.mission_id, m.prev_letter_id, claimed) is None:
        where = (f"project {p.name}'s block registry" if p is not None and ctx.store.reachable(project_box(p.name))
                 else f"no reachable block registry (brain_ref {m.brain_ref!r})")
        raise Refusal("landed_law", f"landed_law: {where} records no receipt import of mission {m.mission_id}'s "
                                    f"candidate in {m.prev_letter_id} at store_version {claimed}: a person imports "
                                    "it first (dovecote receipt import, or the Human View)")


def _append(ctx: Context, where: Address, m: MissionLetter, agent: str) -> MissionPosted:
    """The compare-and-swap: under the box's guard, the head from what it read, then append or refuse."""
    line = ml.line_of(m, agent)
    lid = letter_id(line)
    with ctx.store.guarded(where) as g:
        if lid in g.index:
            return MissionPosted(lid, m.mission_id, m.mission_seq, m.phase, str(where), deduped=True)
        head = chains.one(g.letters, m.mission_id).head
        expected = (1, None) if head is None else (head.seq + 1, head.id)
        if (m.mission_seq, m.prev_letter_id) != expected:
            seq, prev = expected
            raise Refusal("stale_head", f"stale_head: mission {m.mission_id} expects mission_seq {seq} after "
                                        f"{prev or 'no head'} (expected_head={prev}, got prev_letter_id="
                                        f"{m.prev_letter_id}, mission_seq {m.mission_seq})",
                          expected_head=prev, given=m.prev_letter_id)
        ml.check_transition(chains.head_phase(head), Phase(m.phase))
        g.append([line])
    return MissionPosted(lid, m.mission_id, m.mission_seq, m.phase, str(where), deduped=False)


def _boxes(ctx: Context) -> tuple[list[Address], list[str]]:
    """The boxes a mission may live in that this machine reaches, and those it does not (named)."""
    reach: list[Address] = []
    unreachable: list[Address] = []
    for a in [HOME, *(project_box(p.name) for p in ctx.roster.projects)]:
        (reach if ctx.store.reachable(a) else unreachable).append(a)
    return reach, [str(a) for a in unreachable]


def listing(ctx: Context, project: str | None) -> MissionListing:
    """One head per mission (of one project's box, or of every box), the counts by phase and the landing count."""
    if project is not None:
        where = project_box(blocks.known_project(ctx, project))
        reach, unreachable = ([where], []) if ctx.store.reachable(where) else ([], [str(where)])
    else:
        reach, unreachable = _boxes(ctx)
    rows = []
    for where in reach:
        for mission in chains.fold(ctx.store.read(where).letters).values():
            rows.append({**mission.head_row(), "box": str(where)})
    s = chains.summary(rows)
    heads = [MissionHead(**row) for row in rows]
    return MissionListing(heads, s["count"], s["landing"], s["by_phase"], unreachable)


def find(ctx: Context, mission_id: str) -> tuple[Address, chains.Mission]:
    """The box holding ``mission_id`` and its letters there; ``unknown_mission`` when no reachable box has it."""
    reach, unreachable = _boxes(ctx)
    for where in reach:
        mission = chains.one(ctx.store.read(where).letters, mission_id)
        if mission.entries:
            return where, mission
    beyond = f" (unreachable here: {', '.join(unreachable)})" if unreachable else ""
    raise Refusal("unknown_mission", f"no reachable box has a letter of mission {mission_id!r}{beyond}")


def show(ctx: Context, mission_id: str) -> MissionChain:
    """The whole chain of one mission, root to head, and any letter off it (a fork m1nd could make)."""
    where, mission = find(ctx, mission_id)
    chain = mission.chain()
    return MissionChain(**mission.head_row(), box=str(where), chain=[ChainLetter(**e.row()) for e in chain],
                        forks=mission.forks())


def archive(ctx: Context, mission_id: str, gesture: str | None, passphrase: str | None) -> MissionArchived:
    """Set a landed or failed mission aside: the next letter of its chain, phase archived (a human gesture)."""
    gestures.check(ctx, gesture, passphrase, "mission archive")
    where, _ = find(ctx, mission_id)
    with ctx.store.guarded(where) as g:
        head = chains.one(g.letters, mission_id).head
        assert head is not None  # find saw a letter, and ledgers only grow
        ml.check_transition(chains.head_phase(head), Phase.archived)
        m = ml.validate({**head.mission, "mission_seq": head.seq + 1, "prev_letter_id": head.id,
                         "phase": Phase.archived.value, "updated_at": _now(ctx)})
        line = ml.line_of(m, ctx.actor.author())
        lid, _ = g.append([line])[0]
    return MissionArchived(lid, mission_id, m.mission_seq, False, m.phase, str(where))


def import_receipt(ctx: Context, mission_id: str, gesture: str | None, passphrase: str | None
                   ) -> blocks.ReceiptImported:
    """``receipt import``: the mission's merge_wait candidate into its block (``blocks.import_receipt``)."""
    via = gestures.check(ctx, gesture, passphrase, "receipt import")
    where, mission = find(ctx, mission_id)
    head: Entry | None = mission.head
    assert head is not None
    project = where.name if where.kind == "project" else None
    p = ctx.roster.project(project or str(head.mission.get("brain_ref")))
    if p is None:
        raise Refusal("unknown_block", f"mission {mission_id}'s brain_ref names no project, so it has no block")
    return blocks.import_receipt(ctx, head, p.name, via)


def _now(ctx: Context) -> str:
    from dovecote.model.letters import format_ts

    return format_ts(ctx.now())

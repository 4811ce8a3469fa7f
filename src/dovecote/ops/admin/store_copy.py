"""Moving ledgers between stores: ``dovecote db migrate`` and ``dovecote copy``.

Law: a copy appends each letter's exact line bytes (``Letter.raw``), so every
id is the same on both sides, and only through the target's own ``append``
(deduplicated by id), so a copy run twice, or resumed after it was killed,
appends only what is missing. It writes in chunks (one transaction, one fsync
each), so an interrupted copy keeps what it had written. Nothing is ever
removed from either side; the comparison after it (``compare``) names every box
whose letters differ, so a copy is proven, not assumed. A line that is no
letter (malformed) is not copied, and is counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, cast

from dovecote.errors import Refusal
from dovecote.model.addresses import Address, parse_address
from dovecote.model.results import Result
from dovecote.ops.context import Context
from dovecote.store.capability import Capability, can
from dovecote.store.core import Store, Where

if TYPE_CHECKING:
    from dovecote.store.postgres.store import PostgresStore

#: Lines per append: one transaction (or fsync) each, so a killed copy keeps all but the last chunk.
CHUNK = 5000


class BoxCompared(Result, frozen=True):
    """One box on both sides: letters in each, how many this run copied, and what differs."""

    box: str
    source: int
    target: int
    copied: int
    missing: int  # in the source, not in the target
    extra: int  # in the target, not in the source
    same_order: bool
    malformed: int = 0  # lines of the source that are no letter (not copied)


class Copied(Result, frozen=True):
    """What ``copy`` did and found: ``identical`` when every box holds the same letters in the same order;
    ``copied`` and ``letters`` are the boxes' sums (appended by this run, in the source)."""

    source: str
    target: str
    identical: bool
    copied: int
    letters: int
    boxes: list[BoxCompared]
    unreachable: list[str]

    @classmethod
    def of(cls, source: str, target: str, boxes: list[BoxCompared], unreachable: list[str]) -> Copied:
        same = all(not b.missing and not b.extra and b.same_order for b in boxes)
        return cls(source, target, same, sum(b.copied for b in boxes), sum(b.source for b in boxes), boxes,
                   unreachable)


def ledgers(ctx: Context, stores: Iterable[Store]) -> list[Where]:
    """Every ledger to copy: the spool, home, each project and entity of the roster, and every
    entity box either store holds beyond the roster (a removed entity's letters still move)."""
    out: list[Where] = ["spool", *ctx.roster.report_boxes(), *(Address("entity", e.id) for e in ctx.roster.entities)]
    for st in stores:
        for where in held(ctx, st):
            if where not in out:
                out.append(where)
    return out


def held(ctx: Context, store: Store) -> list[Where]:
    """The entity boxes a store holds, by name (a project's box needs the roster to be found)."""
    if can(store, Capability.box_folders):
        base = ctx.layout.boxes / "entity"
        names = sorted(p.parent.name for p in base.glob("*/letters.jsonl")) if base.is_dir() else []
    else:
        names = cast("PostgresStore", store).entity_names() if can(store, Capability.database_rows) else []
    out: list[Where] = []
    for name in names:
        try:
            out.append(parse_address(f"entity:{name}"))
        except Refusal:  # a name no address can spell is not a box dovecote wrote
            continue
    return out


def copy(ctx: Context, source: Store, target: Store, names: tuple[str, str], *, write: bool) -> Copied:
    """Copy every ledger from ``source`` to ``target`` (unless not ``write``), then compare them."""
    boxes: list[BoxCompared] = []
    unreachable: list[str] = []
    for where in ledgers(ctx, (source, target)):
        if not source.reachable(where):
            unreachable.append(str(where))
            continue
        src = source.read(where)
        copied = 0
        if write and src.letters:
            lines = [x.raw for x in src.letters]
            for i in range(0, len(lines), CHUNK):
                copied += sum(new for _, new in target.append(where, lines[i : i + CHUNK]))
        dst = target.read(where)
        if src.exists or dst.exists:
            boxes.append(compared(str(where), [x.id for x in src.letters], [x.id for x in dst.letters], copied,
                                  len(src.defects)))
    return Copied.of(names[0], names[1], boxes, unreachable)


def compared(box: str, src: Sequence[str], dst: Sequence[str], copied: int, malformed: int) -> BoxCompared:
    a, b = set(src), set(dst)
    return BoxCompared(box, len(src), len(dst), copied, len(a - b), len(b - a), list(src) == list(dst), malformed)

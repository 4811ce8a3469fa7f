"""``import vnext``: read a vNext mailbox directory and (with ``write``) import it as letters.

The directory is read once (``vnext_read.read_tree``: values, never a write),
then everything is a function of those values: the tracker counts are the
vNext status view's (``derive.delivery.vnext_trackers``; drift measured before
normalization), and the letters are the envelopes, acks and tracker history
(``derive.delivery.vnext_letters``, in the delivery model). A dry run (the default)
reports what an import would append; ``write`` appends it.

No half import: every file is read and every letter built before the first
append, and a tree with a malformed file is refused as a whole with
``vnext_malformed`` (naming each file and its keyword), so nothing is written
from a tree the importer cannot read completely. Recipients and senders that
are not registered entities are refused the same way (``unknown_recipient``),
before anything is written. A re-import appends nothing: every letter is built
from the files' content only (no clock), so its content id is the same; and a
delivery a box already holds (by envelope and recipient) is never delivered
again, whatever vNext rewrote in its tracker since: the plan is made again
under the boxes' locks against what they hold then (a compare-and-swap), and
its history and ack name the letter that is there.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote.derive.delivery import vnext_letters
from dovecote.derive.delivery import vnext_trackers as vt
from dovecote.errors import Refusal
from dovecote.model.addresses import Address, entity
from dovecote.model.results import Result
from dovecote.model.vnext_tree import VnextTree
from dovecote.ops.delivery.vnext_read import INTAKE_FOLDERS, read_tree
from dovecote.ops.warm.registry import guarded_many
from dovecote.ops.warm.trackers import book

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Guard


class VnextImported(Result, frozen=True):
    """What importing a vNext directory found, and (with ``write``) appended: the tracker counts are the vNext
    status view's (``tracker_summary``), the letters what the plan built and the boxes took."""

    path: str
    write: bool
    intake: dict[str, int]
    tracker_counts: dict[str, int]
    delivery_state_counts: dict[str, int]
    ack_state_counts: dict[str, int]
    live_notify_state_counts: dict[str, int]
    schema_drift_counts: dict[str, int]
    needs_migration: int
    envelopes: dict[str, int]
    acks: dict[str, int]
    ledger_rows: dict[str, int]
    malformed_count: int
    malformed: list[dict[str, Any]]
    letters: dict[str, int]
    letters_by_kind: dict[str, int]
    letters_by_box: dict[str, int]
    entities_missing: list[str]
    migrated_trackers: list[dict[str, Any]]
    notes: list[dict[str, Any]]


def tracker_summary(tree: VnextTree) -> vt.TrackerSummary:
    """The vNext status view's tracker sections for ``tree`` (B11, drift as written)."""
    return vt.summarize(vt.view(r.obj) for r in tree.trackers)


def migrated_trackers(tree: VnextTree) -> list[dict[str, Any]]:
    """Each tracker the v3 normalization changes, as vNext's ``migrate_trackers.py --json`` lists it
    (``changed_trackers``), plus its drift as written and the legacy fields it preserves."""
    out = []
    for rec in tree.trackers:
        v = vt.view(rec.obj)
        if v.changed:
            m = v.migrated
            out.append({"path": rec.path, "delivery_id": m.get("delivery_id"), "envelope_id": m.get("envelope_id"),
                        "recipient": m.get("recipient"), "schema_drift": list(v.drift),
                        "migration_inference": m["migration_inference"],
                        "legacy_fields_preserved": m["legacy_fields_preserved"]})
    return out


def _rows(tree: VnextTree) -> dict[str, int]:
    kinds = Counter(str(r.obj.get("event_type", "unknown")) for r in tree.rows)
    return dict(sorted(kinds.items()))


def import_vnext(ctx: Context, path: Path, *, write: bool = False) -> VnextImported:
    """Read the vNext directory at ``path``; with ``write``, append its letters (see the module doc).

    Raises ``Refusal``: ``invalid_field`` (no directory there), ``vnext_malformed``
    and ``unknown_recipient`` (only with ``write``; the dry run reports them).
    """
    root = path.expanduser()
    if not root.is_dir():
        raise Refusal("invalid_field", f"{str(path)!r} is not a directory (a vNext root holds intake/, agents/...)")
    root = root.resolve()
    tree = read_tree(root)
    plan = vnext_letters.plan(tree, _known(ctx, vnext_letters.plan(tree).entities))
    missing = sorted(n for n in plan.entities if ctx.roster.entity(n) is None)
    if write and tree.malformed:
        listed = ", ".join(f"{m.path} ({m.reason})" for m in tree.malformed[:10])
        raise Refusal("vnext_malformed", f"{len(tree.malformed)} file(s) cannot be read: {listed}; "
                      "nothing was imported (move them aside or fix them, then import again)")
    if write and missing:
        raise Refusal("unknown_recipient", f"not registered entities: {', '.join(missing)} "
                      "(dovecote entity add each one, then import again)")
    appended = present = 0
    if write and plan.letters:
        boxes = sorted({entity(n) for n in plan.entities}, key=str)
        with guarded_many(ctx.store, boxes) as held:
            # again under the locks: the deliveries the boxes hold now (a compare-and-swap)
            plan = vnext_letters.plan(tree, _known(ctx, plan.entities, held))
            for addr in sorted({a for a, _ in plan.letters}, key=str):
                lines = [line for a, line in plan.letters if a == addr]
                for _, new in held[addr].append(lines):
                    appended += new
                    present += not new
    letters = {"planned": len(plan.letters), "appended": appended, "already_present": present}
    return VnextImported(
        path=str(root), write=write, intake={name: len(tree.intake[name]) for name in INTAKE_FOLDERS},
        **tracker_summary(tree).to_dict(), envelopes=plan.envelope_counts, acks=plan.ack_counts,
        ledger_rows=_rows(tree), malformed_count=len(tree.malformed), malformed=[m.to_dict() for m in tree.malformed],
        letters=letters, letters_by_kind=dict(sorted(plan.kinds.items())), letters_by_box=_box_counts(plan.letters),
        entities_missing=missing, migrated_trackers=migrated_trackers(tree), notes=plan.notes,
    )


def _known(ctx: Context, names: set[str], held: dict[Address, Guard] | None = None) -> vnext_letters.Known:
    """The deliveries (by envelope and recipient) the registered boxes among ``names`` already hold."""
    out: vnext_letters.Known = {}
    for name in sorted(names):
        addr = entity(name)
        if ctx.roster.entity(name) is None or (held is None and not ctx.store.reachable(addr)):
            continue
        with book(ctx, name, held.get(addr) if held is not None else None) as b:
            out.update(((env, name), lid) for env, lid in b.by_envelope.items())
    return out


def _box_counts(letters: list[tuple[Address, bytes]]) -> dict[str, int]:
    return dict(sorted(Counter(str(a) for a, _ in letters).items()))


__all__ = ["VnextImported", "import_vnext", "tracker_summary"]

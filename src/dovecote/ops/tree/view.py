"""``view``: the /inbox skill's folder layout, kept in step with an entity's ledger.

The layout is a cache (DESIGN 1.1): ``viewplan`` computes every owned byte from
the ledger at the current tic and time; this module makes the disk match it,
one entry at a time, with the primitives of ``viewfs`` (whole or absent, never
through a link). What the view owns, and nothing else:

* ``envelope.json`` and ``README.md`` inside ``<STATE>_<12 hex>`` entries of
  ``inbound/``, ``processing/``, ``deferred/``, ``archive/`` and ``EMIT_<12 hex>``
  entries of ``outbound/``; any other file in such an entry is a person's and is
  kept (it moves along when the entry moves);
* the three files of ``indexes/`` it writes, and ``INBOX.md``.

The folder is the state (``viewtree``). Each entry's ``envelope.json`` carries a
stamp (the state the view wrote it in). An entry whose folder differs from both
its stamp and the ledger was moved by a person: the move is adopted as its one
verb through ``moves.adopt_move`` (the verbs' guarded path, rails on), or, when
the rules refuse it, reported with the verb's keyword and the entry is put back
where the ledger says (with everything a person put inside it), so the folders
never show a state the ledger does not hold. An entry that cannot be moved or
removed without losing a person's file is left where it is and reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote.derive.inbox.book import Clock
from dovecote.derive.inbox.state import BUCKETS
from dovecote.derive.lifecycle import State
from dovecote.errors import Refusal
from dovecote.ledger.jsonl import write_atomic
from dovecote.ops.reports.tics import current_tic
from dovecote.ops.tree.moves import adopt_move
from dovecote.ops.tree.viewfs import (
    check_paths,
    clean_temps,
    entry_blocked,
    move_entry,
    new_entry,
    remove_entry,
    update_entry,
    view_lock,
)
from dovecote.ops.tree.viewplan import Plan, plan
from dovecote.ops.tree.viewtree import (
    ENTRY_FILES,
    INBOX_MD,
    INDEX_FILES,
    INDEXES,
    OUTBOUND,
    disagreement,
    foreign_names,
    owned_entries,
    read_envelope,
    stamp_of,
    tree_state,
    view_dir,
)
from dovecote.ops.warm import inbox as foldcache
from dovecote.util.digests import sha256

if TYPE_CHECKING:
    from dovecote.ops.context import Context

__all__ = ["EntityFolder", "FolderSync", "Plan", "owned_digest", "plan", "view"]


@dataclass
class EntityFolder:
    entity: str
    path: str
    counts: dict[str, int]
    written: int = 0
    removed: int = 0
    unchanged: int = 0
    moved: int = 0
    cleaned: int = 0
    adopted: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    kept: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    unknown: list[dict[str, Any]] = field(default_factory=list)

    def keep(self, rel: str, iid: str, reason: str, detail: str) -> None:
        self.kept.append({"path": rel, "id": iid, "reason": reason, "detail": detail})

    def to_dict(self) -> dict[str, Any]:
        return {
            "entity": self.entity, "path": self.path, "counts": self.counts, "written": self.written,
            "removed": self.removed, "unchanged": self.unchanged, "moved": self.moved, "cleaned": self.cleaned,
            "adopted": self.adopted, "refused": self.refused, "kept": self.kept, "notes": self.notes,
            "unknown": self.unknown,
        }


@dataclass
class FolderSync:
    tic: int | None
    tic_source: str
    entities: list[EntityFolder]

    def to_dict(self) -> dict[str, Any]:
        return {
            "clock": {"tic": self.tic, "source": self.tic_source},
            "entities": [e.to_dict() for e in self.entities],
        }


def _adopt_moves(ctx: Context, entity_id: str, vdir: Path, p: Plan, clock: Clock, out: EntityFolder) -> bool:
    """Adopt every move a person made (one verb each, rails on); True if the ledger changed."""
    changed = False
    looked: list[tuple[str, str, str, State, State | None, dict[str, Any] | None]] = []
    in_place: set[str] = set()  # items with an entry where the ledger says: another entry is a copy, not a move
    for folder, name, path, iid in owned_entries(vdir):
        ledger = p.states.get(iid)
        if folder == OUTBOUND or ledger is None or entry_blocked(path):
            continue
        env = read_envelope(path)
        where = tree_state(folder, name, env)
        why = disagreement(folder, name, env)
        if why is not None:
            out.notes.append({"path": f"{folder}/{name}", "id": iid, "reason": "state_disagrees", "detail": why})
        if where is ledger:
            in_place.add(iid)
        looked.append((folder, name, iid, where, stamp_of(env)[1], env))
    tried: set[str] = set()
    for folder, name, iid, where, stamp, env in looked:
        ledger = p.states[iid]
        if where is ledger or where is stamp or iid in in_place or iid in tried:
            continue  # in place; the view's own output the ledger has since moved past; a copy; done
        tried.add(iid)
        rel = f"{folder}/{name}"
        lc = env.get("lifecycle") if env else None
        try:
            t = adopt_move(ctx, entity_id, iid, ledger, where, lc if isinstance(lc, dict) else {}, clock.tic)
        except Refusal as e:
            back = f"{BUCKETS[ledger]}/{ledger}_{iid}"
            out.refused.append({
                "path": rel, "id": iid, "tree_state": str(where), "ledger_state": str(ledger),
                "reason": e.reason, "detail": e.detail, "put_back": back,
            })
            continue
        out.adopted.append({"path": rel, "id": iid, "from": t.from_state, "to": t.to_state, "verb": t.kind,
                            "link": t.id})
        changed = True
    return changed


def _place_item(vdir: Path, iid: str, target: tuple[str, str], found: list[tuple[str, Path]],
                files: dict[str, bytes], rebuild: bool, out: EntityFolder) -> None:
    """Make ``target`` hold the item: keep or move one of its entries there, drop needless copies."""
    folder, name = target
    dest = vdir / folder / name
    usable = []
    for rel, q in found:
        why = entry_blocked(q)
        if why is None:
            usable.append((rel, q))
        else:
            out.keep(rel, iid, "unsafe_entry", f"left as it is: {why}")
    at_dest = [(rel, q) for rel, q in usable if q == dest]
    if at_dest or (dest.exists() or dest.is_symlink()):
        primary = at_dest[0] if at_dest else None
    else:  # carry the copy that holds a person's files, else the first
        primary = next(((r, q) for r, q in usable if foreign_names(q)), usable[0] if usable else None)
        if primary is not None:
            if move_entry(primary[1], dest):
                out.moved += 1
            else:
                out.keep(primary[0], iid, "name_taken", f"{folder}/{name} appeared meanwhile; left in place")
                primary = None
    for rel, q in usable:
        if primary is not None and q == primary[1]:
            continue
        extra = foreign_names(q)
        if extra:
            out.keep(rel, iid, "foreign_files", f"a second copy of the item holding files the view does not own "
                     f"({', '.join(extra)}): left in place")
        else:
            remove_entry(q)
            out.removed += 1
    if primary is not None:
        if update_entry(dest, files, force=rebuild):
            out.written += 1
        else:
            out.unchanged += 1
    elif not (dest.exists() or dest.is_symlink()):
        if new_entry(vdir / folder, name, files):
            out.written += 1
        else:
            out.keep(f"{folder}/{name}", iid, "name_taken", "something appeared at that name meanwhile; left as it is")


def _sync_entity(ctx: Context, entity_id: str, clock: Clock, rebuild: bool) -> EntityFolder:
    vdir = view_dir(ctx, entity_id)
    check_paths(ctx, vdir)
    limits = ctx.roster.limits
    p = plan(foldcache.book_for(ctx, entity_id), clock, limits)
    out = EntityFolder(entity_id, str(vdir), p.counts)
    out.cleaned, held = clean_temps(vdir)
    for rel in held:
        out.keep(rel, "", "foreign_files", "a temp folder of a killed run holding files the view does not own")
    if _adopt_moves(ctx, entity_id, vdir, p, clock, out):
        p = plan(foldcache.book_for(ctx, entity_id), clock, limits)
        out.counts = p.counts
    found: dict[str, list[tuple[str, Path]]] = {}
    for folder, name, path, iid in owned_entries(vdir):
        rel = f"{folder}/{name}"
        if folder == OUTBOUND:
            if name in p.drafts:
                found.setdefault(name, []).append((rel, path))
            elif iid in p.delivered and stamp_of(read_envelope(path))[0] == iid:
                if foreign_names(path):  # the view's copy of a draft since sent, with a person's files in it
                    out.keep(rel, iid, "foreign_files", "a sent draft holding files the view does not own")
                else:
                    remove_entry(path)
                    out.removed += 1
            else:
                out.unknown.append({"path": rel, "id": iid})
        elif iid in p.states:
            found.setdefault(iid, []).append((rel, path))
        else:
            out.unknown.append({"path": rel, "id": iid})
    for (folder, name), files in sorted(p.items.items()):
        iid = name.partition("_")[2]
        _place_item(vdir, iid, (folder, name), found.get(iid, []), files, rebuild, out)
    for name, files in sorted(p.drafts.items()):
        _place_item(vdir, name, (OUTBOUND, name), found.get(name, []), files, rebuild, out)
    for rel, data in sorted(p.top.items()):
        target = vdir / rel
        try:
            same = not rebuild and not target.is_symlink() and target.read_bytes() == data
        except OSError:
            same = False
        if same:
            out.unchanged += 1
        else:
            write_atomic(target, data)
            out.written += 1
    return out


def view(
    ctx: Context,
    entity_id: str | None = None,
    *,
    current: int | None = None,
    now: datetime | None = None,
    rebuild: bool = False,
) -> FolderSync:
    """Write the folder view of one entity (or of every entity) from its ledger.

    ``rebuild`` rewrites every owned file even when it is already right
    (``verify`` uses it to prove the view comes from the ledger alone). Raises
    ``Refusal`` (``unknown_entity``, ``unsafe_path``) before writing anything.
    """
    who = [entity_id] if entity_id is not None else [e.id for e in ctx.roster.entities]
    for e in who:
        foldcache.entity_address(ctx, e)
        check_paths(ctx, view_dir(ctx, e))
    tic, source = current_tic(ctx, current)
    clock = Clock(tic, now or ctx.now())
    done = []
    for e in who:
        with view_lock(ctx, e):
            done.append(_sync_entity(ctx, e, clock, rebuild))
    return FolderSync(tic, source, done)


def owned_digest(ctx: Context, entity_id: str) -> str:
    """SHA-256 over every owned file of the entity's view (path and bytes), for ``verify``."""
    vdir = view_dir(ctx, entity_id)
    h = sha256()
    paths = [vdir / INBOX_MD, *(vdir / INDEXES / f for f in INDEX_FILES)]
    for _, _, path, _ in owned_entries(vdir):
        if path.is_dir() and not path.is_symlink():  # owned files only: a person's files are not the cache
            paths.extend(path / f for f in sorted(ENTRY_FILES))
    for q in paths:
        try:
            data = q.read_bytes()
        except OSError:
            continue
        rel = q.relative_to(vdir).as_posix()
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + sha256(data).digest())
    return h.hexdigest()

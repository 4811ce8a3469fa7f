"""``import inbox-tree``: adopt an existing /inbox folder tree into the ledgers.

A tree says two things about each entry (``adoptread`` reads them): what the
message is, and where it is (its folder: its state). The first becomes a
``message`` letter (once: its id is its content). The second depends on whether
dovecote knew the item before this import:

* **new** (this import appended its letter): the tree's state is adopted as the
  tree's own tool's truth, along the table's legal moves (``moves.route``) from
  WAIT, without the rails (a foreign DONE item was completed over there; its
  ``seen`` is written first).
* **known** (an entry of dovecote's own view, a ``message_id`` the box knows, or
  an item imported before): a state other than the ledger's is a *move*, adopted
  exactly as its verb (``moves.adopt_move``: one verb, rails on, the verbs'
  CAS). A move the rules forbid (``illegal_transition``, ``not_seen``,
  ``response_required``, ``no_due``) is reported, never forced.

So importing the same tree twice appends nothing, and a tree that contradicts
the ledger is reported (notes A3: files that *agree* on an unreachable state are
how tic 312 went wrong). An import holds the entity's tree lock (the one
``view`` holds) from reading the ledger to its last link, so concurrent imports
of one tree run one after the other: the later ones find every item known and
in place, and append nothing (no refusal, no second ``seen``).

A DEFER needs a due (``reminder_tic`` or ``defer_until_tic``); one without is
adopted as WAIT and reported (no dead ends), and one whose due has passed
already reads as WAIT, as the view shows it. A state folder that is itself an
entry (``mv inbound/WAIT_x archive`` when ``archive/`` did not exist) is read as
that one entry, never as a folder of loose drops.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote.derive.lifecycle import ARCHIVING, PROGRESS, State, effective, steps_between
from dovecote.errors import Refusal
from dovecote.model.addresses import check_name
from dovecote.model.vocab import LetterKind
from dovecote.ops.mail import send as mail
from dovecote.ops.reports.tics import current_tic
from dovecote.ops.tree.moves import ADOPTED, adopt_move, due_of, reason_for
from dovecote.ops.tree.tree_read import Finding, FolderClaim, read_claim, show
from dovecote.ops.tree.viewfs import view_lock
from dovecote.ops.tree.viewtree import OUTBOUND, STATE_FOLDERS, is_reference_folder, listing, read_envelope, stamp_of
from dovecote.ops.warm import inbox as foldcache

if TYPE_CHECKING:
    from dovecote.ops.context import Context



@dataclass
class Adoption:
    """What importing one entity's mailbox did."""

    entity: str
    path: str
    letters_added: int = 0
    links_added: int = 0
    already_present: int = 0
    adopted_as_wait: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)

    def refuse(self, path: str, reason: str, detail: str) -> None:
        self.refused.append({"path": path, "reason": reason, "detail": detail})

    def note(self, path: str, reason: str, detail: str) -> None:
        self.notes.append({"path": path, "reason": reason, "detail": detail})

    def record(self, found: Iterable[Finding]) -> None:
        """What reading an entry found (``tree_read.read_claim``), each refusal and note in its list."""
        for f in found:
            (self.refuse if f.refused else self.note)(f.path, f.reason, f.detail)

    def to_dict(self) -> dict[str, Any]:
        return {
            "entity": self.entity, "path": self.path, "letters_added": self.letters_added,
            "links_added": self.links_added, "already_present": self.already_present,
            "adopted_as_wait": self.adopted_as_wait, "refused": self.refused, "notes": self.notes,
            "skipped": self.skipped, "items": self.items,
        }


@dataclass
class ImportResult:
    path: str
    tic: int | None
    entities: list[Adoption]
    skipped_entities: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "clock": {"tic": self.tic},
            "entities": {a.entity: a.to_dict() for a in self.entities},
            "skipped_entities": self.skipped_entities,
        }


def _wanted(claim: FolderClaim, ledger: State, tic: int | None, res: Adoption) -> State:
    """The state the tree asks for, with the two DEFER readings (due passed: WAIT; no due: WAIT, reported)."""
    want = claim.state
    assert want is not None
    due = due_of(claim.lifecycle)
    if want is State.DEFER and due is not None and tic is not None and due <= tic:
        return State.WAIT  # its reminder has come: the view shows it as WAIT too
    if want is State.DEFER and due is None and ledger is not State.DEFER:
        res.adopted_as_wait.append({"path": claim.rel, "id": claim.item, "detail": "DEFER without a due tic"})
        return State.WAIT
    return want


def _adopt_item(ctx: Context, entity_id: str, claim: FolderClaim, tic: int | None, res: Adoption, new: bool) -> int:
    """Append the links that take the item from the ledger's state to the tree's; return how many."""
    book = foldcache.book_for(ctx, entity_id)
    r = book.replay_of(book.items[claim.item])
    ledger = effective(r, tic, ctx.now())
    want = _wanted(claim, ledger, tic, res)
    if want is ledger:
        return 0
    if not new:  # a move of an item dovecote knows: its one verb, under the verbs' rules
        try:
            adopt_move(ctx, entity_id, claim.item, ledger, want, claim.lifecycle, tic)
        except Refusal as e:
            res.refuse(claim.rel, e.reason, f"the tree says {want}, the ledger {ledger}: {e.detail}")
            return 0
        return 1
    steps = steps_between(ledger, want)
    if steps is None:
        res.refuse(claim.rel, "illegal_transition", f"the tree says {want}, the ledger {ledger} (item {claim.item})")
        return 0
    if not r.seen and ARCHIVING & set(steps):
        steps.insert(0, "seen")
    added = 0
    due = due_of(claim.lifecycle)
    for kind in steps:
        try:
            mail.transition(
                ctx, entity_id, claim.item, kind, rails=False, extra=dict(ADOPTED), current=tic, actor=entity_id,
                until_tic=due if kind == LetterKind.defer else None, reason=reason_for(kind, claim.lifecycle),
            )
        except Refusal as e:  # someone moved the item meanwhile: the CAS said no
            res.refuse(claim.rel, e.reason, e.detail)
            break
        added += 1
    return added


def _entries(mbox: Path, folder: str) -> list[Path]:
    """A state folder's entries; the folder itself when it is one entry (it holds envelope.json)."""
    d = mbox / folder
    if not d.is_symlink() and (d / "envelope.json").is_file():
        return [d]
    return listing(d)


def adopt_mailbox(ctx: Context, entity_id: str, mbox: Path, base: Path, tic: int | None) -> Adoption:
    """Import one entity's mailbox folder, holding the entity's tree lock throughout."""
    with view_lock(ctx, entity_id):
        return _adopt_mailbox(ctx, entity_id, mbox, base, tic)


def _adopt_mailbox(ctx: Context, entity_id: str, mbox: Path, base: Path, tic: int | None) -> Adoption:
    res = Adoption(entity_id, show(mbox, base) or ".")
    claims: list[FolderClaim] = []
    batch: dict[str, str] = {}
    for folder in STATE_FOLDERS:
        for p in _entries(mbox, folder):
            if p.name == folder:
                res.note(show(p, base), "folder_is_entry",
                         f"{folder}/ holds envelope.json: read as one entry in {folder}/, not as a folder of drops")
            if is_reference_folder(p):
                # organize --apply grouped loose reference files here: material, not an item
                res.skipped.append({
                    "path": show(p, base), "reason": "reference",
                    "detail": "REF_ folders hold grouped reference files; they are not inbox items",
                })
                continue
            c, found = read_claim(ctx, entity_id, folder, p, base, batch)
            res.record(found)
            if c is not None:
                claims.append(c)
    for p in listing(mbox / OUTBOUND):
        marked, _ = stamp_of(read_envelope(p))
        if marked is None or marked not in foldcache.book_for(ctx, entity_id).drafts:
            res.skipped.append({
                "path": show(p, base), "reason": "outbound",
                "detail": "drafts are not imported; write them with `dovecote draft`",
            })
    lines = [c.line for c in claims if c.line is not None]
    appended = ctx.store.append(foldcache.entity_address(ctx, entity_id), lines) if lines else []
    new_items = {lid for lid, new in appended if new}
    res.letters_added = len(new_items)
    # one item, several entries (a copy, a crashed move): the furthest state speaks for it
    best: dict[str, FolderClaim] = {}
    order: list[str] = []
    for c in claims:
        res.items.append({"path": c.rel, "id": c.item, "form": c.form, "state": str(c.state) if c.state else None})
        if c.item not in best:
            order.append(c.item)
            best[c.item] = c
            continue
        kept = best[c.item]
        if c.state is not None and (kept.state is None or PROGRESS[c.state] > PROGRESS[kept.state]):
            best[c.item], c = c, kept
        if c.state is not None and c.state is not best[c.item].state:
            kept = best[c.item]
            res.note(c.rel, "duplicate_entry", f"same item {c.item} as {kept.rel}; its state {kept.state} was kept")
    for iid in order:
        c = best[iid]
        links = _adopt_item(ctx, entity_id, c, tic, res, iid in new_items) if c.state is not None else 0
        res.links_added += links
        if not links and iid not in new_items:
            res.already_present += 1
    return res


def _is_mailbox(path: Path) -> bool:
    return any((path / f).is_dir() for f in (*STATE_FOLDERS, OUTBOUND))


def import_inbox_tree(
    ctx: Context, path: str | Path, entity_id: str | None = None, *, current: int | None = None
) -> ImportResult:
    """Adopt a mailbox (with ``entity_id``) or an ``agent-mailboxes`` root of ``ent_*`` folders.

    Raises ``Refusal`` (``invalid_field``, ``missing_field``, ``invalid_name``,
    ``unknown_entity``) before anything is written when the request itself is wrong.
    """
    root = Path(path).expanduser().absolute()
    if root.is_symlink() or not root.is_dir():
        raise Refusal("invalid_field", f"{str(path)!r} is not a directory")
    tic, _ = current_tic(ctx, current)
    if entity_id is not None:
        foldcache.entity_address(ctx, check_name(entity_id, "entity id"))
        mbox = root if _is_mailbox(root) else root / entity_id
        if not _is_mailbox(mbox) or mbox.is_symlink():
            raise Refusal("invalid_field", f"{str(path)!r} holds no mailbox folders ({', '.join(STATE_FOLDERS)})")
        return ImportResult(str(root), tic, [adopt_mailbox(ctx, entity_id, mbox, root, tic)], [])
    if _is_mailbox(root):
        raise Refusal("missing_field", f"{str(path)!r} is one mailbox: name its entity with --entity")
    boxes = [p for p in listing(root) if p.name.startswith("ent_") and p.is_dir()]
    if not boxes:
        raise Refusal("invalid_field", f"{str(path)!r} is neither a mailbox nor a folder of ent_* mailboxes")
    done: list[Adoption] = []
    skipped: list[dict[str, Any]] = []
    for p in boxes:
        name = show(p, root)
        try:
            check_name(p.name, "entity id")
        except Refusal as e:
            skipped.append({"name": name, "reason": e.reason, "detail": e.detail})
            continue
        if p.is_symlink():
            skipped.append({"name": name, "reason": "invalid_field", "detail": "a symbolic link is never followed"})
        elif ctx.roster.entity(p.name) is None:
            skipped.append({"name": name, "reason": "unknown_entity", "detail": "not in the roster; not created"})
        else:
            done.append(adopt_mailbox(ctx, p.name, p, root, tic))
    return ImportResult(str(root), tic, done, skipped)

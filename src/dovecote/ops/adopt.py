"""``import inbox-tree``: adopt an existing /inbox folder tree into the ledgers.

A tree says two things about each entry: what the message is, and where it is
(its state). The first becomes a ``message`` letter (once: its id is its
content), the second becomes lifecycle links, appended only along legal moves
of ``derive.lifecycle.TRANSITIONS`` from the state the ledger already has. So
importing the same tree twice appends nothing, and a tree that contradicts the
ledger (a hand move backwards) is reported, never forced (notes A3: files that
*agree* on an unreachable state are how tic 312 went wrong).

The three envelope forms (notes A2, A5), in each of inbound/, processing/,
deferred/ and archive/ (sorted, dot-files skipped):

* **flat** ``*.json`` holding an object, and **directory** ``<any>/envelope.json``
  (its other files are stored as artifacts and listed in ``tree_files``):
  a foreign envelope becomes a letter that keeps every key, minus the volatile
  lifecycle keys (``state``, ``state_entered_at_tic`` and the reason fields,
  which become the links and their reasons), plus ``kind``, ``agent`` (the
  sender) and ``ts`` (its ``created_at``, normalized, if it has one). One whose
  ``message_id`` the box already knows maps to that item. An envelope written by
  ``dovecote view`` (it carries the ``dovecote.letter_id`` marker) always maps
  to its letter; only a move away from the stamp it was written with is news.
* **bare drop** (any other file or folder, or a ``*.json`` that does not parse):
  unlike the skill (A6: id from the absolute path, ``created_at`` from mtime),
  the synthesized letter is built from content only: the bytes go to the
  artifact store (a folder: one artifact per file, named by its relative path,
  dot-files skipped), the subject comes from the name without its state prefix,
  and there is no time field. Moving or copying the drop yields the same id.

The state of an entry: ``lifecycle.state`` if valid, else the name prefix, else
the folder default. A DEFER needs a due (``reminder_tic`` or
``defer_until_tic``); one without is adopted as WAIT and reported (no dead
ends), and one whose due has passed already reads as WAIT, as the view shows it.
Symbolic links are never followed.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote.derive.lifecycle import ARCHIVING, TRANSITIONS, State, effective, parse_time
from dovecote.envelope import DROP_SENDER, ENVELOPE_VERSION, Envelope
from dovecote.errors import Refusal
from dovecote.letters import canonical_line, format_ts, letter_id
from dovecote.names import check_name
from dovecote.ops import artifacts, mail
from dovecote.ops.books import book_for, entity_address
from dovecote.ops.tics import current_tic
from dovecote.ops.view import (
    OUTBOUND,
    STATE_FOLDERS,
    listing,
    read_envelope,
    stamp_of,
    tree_state,
)
from dovecote.ops.viewnames import is_reference_folder
from dovecote.textsafe import one_line

if TYPE_CHECKING:
    from dovecote.api import Dovecote

#: Lifecycle keys a tree rewrites on every move: they become links, never letter bytes.
VOLATILE = ("state", "state_entered_at_tic", "nack_reason", "defer_reason", "completion_note")
#: The lifecycle field that carries the reason of each adopted verb.
REASON_KEY = {"nack": "nack_reason", "defer": "defer_reason", "complete": "completion_note"}
#: How far along the lifecycle a state is; duplicates of one item keep the furthest.
RANK = {State.WAIT: 0, State.DEFER: 1, State.ACTIVE: 2, State.DONE: 3, State.NACK: 3}
ADOPTED = {"adopted": "inbox-tree"}
_TIC = re.compile(r"tic[ _-]?(\d+)", re.IGNORECASE)
_STATE_PREFIX = re.compile(r"(?:WAIT|ACTIVE|DEFER|DONE|NACK)_")


def _show(path: Path, base: Path) -> str:
    """A path for the report, relative to the import root, safe to print as JSON."""
    rel = path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def route(src: State, dst: State) -> list[str] | None:
    """The shortest chain of verbs from ``src`` to ``dst`` in the table, or None.

    A DEFER is never passed through on the way (it needs a due the tree did not
    give), so ACTIVE -> WAIT has no route: a hand move backwards is illegal.
    """
    if src is dst:
        return []
    seen = {src}
    todo: deque[tuple[State, list[str]]] = deque([(src, [])])
    while todo:
        state, path = todo.popleft()
        for kind, new in TRANSITIONS[state].items():
            if kind in ("seen", "resurface") or new in seen:
                continue
            if new is dst:
                return [*path, kind]
            if new is not State.DEFER:
                seen.add(new)
                todo.append((new, [*path, kind]))
    return None


def norm_ts(value: object) -> str | None:
    """``YYYY-MM-DDTHH:MM:SSZ`` in UTC (a zone-less time is taken as UTC); None if unreadable."""
    t = parse_time(value)
    return None if t is None else format_ts(t)


def foreign_letter(env: dict[str, Any]) -> dict[str, Any]:
    """A foreign envelope as a message letter: every key kept, volatile lifecycle keys dropped."""
    obj = dict(env)
    lc = obj.get("lifecycle")
    if isinstance(lc, dict):
        obj["lifecycle"] = {k: v for k, v in lc.items() if k not in VOLATILE}
    obj["kind"] = "message"
    sender = Envelope(env).sender
    if sender:
        obj["agent"] = sender
    prov = env.get("provenance")
    created = (prov.get("created_at") if isinstance(prov, dict) else None) or (
        lc.get("created_at") if isinstance(lc, dict) else None
    )
    ts = norm_ts(created)
    if ts:
        obj["ts"] = ts
    return obj


def drop_letter(entity_id: str, name: str, is_dir: bool, files: list[dict[str, Any]]) -> dict[str, Any]:
    """The synthesized envelope of a bare drop (notes A6), from content-derived fields only."""
    base = _STATE_PREFIX.sub("", name, count=1) or name
    stem = base if is_dir else (Path(base).stem or base)
    subject = re.sub(r"[-_]", " ", stem).strip() or base
    m = _TIC.search(base)
    return {
        "agent": DROP_SENDER,
        "kind": "message",
        "envelope_version": ENVELOPE_VERSION,
        "sender": {"entity_id": DROP_SENDER, "actor_mode": "manual", "role_at_send_time": None},
        "recipient": {"entity_id": entity_id, "inbox_path": f"agent-mailboxes/{entity_id}/"},
        "routing": {
            "priority": "normal", "category": "directive", "trust_level": "operator", "reply_to": None,
            "thread_id": None, "forward_chain": [], "response_expected": False,
        },
        "content": {
            "subject": subject, "body": "", "artifact_refs": [f["ref"] for f in files], "envelope_type": None,
            "artifacts": files,
        },
        "lifecycle": {"expires_at_tic": None, "defer_until_tic": None, "reminder_tic": None},
        "provenance": {
            "source_tic": int(m.group(1)) if m else None, "source_event": "manual_drop", "producer": "architect",
            "manual_drop": True, "trace_id": None, "session_id": None,
        },
    }


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


@dataclass
class Claim:
    """One tree entry resolved: the item it is, and what the tree says about it."""

    rel: str
    form: str
    item: str
    line: bytes | None  # a letter to append, when the item is new
    state: State | None  # None: the entry says nothing new (a view envelope at its stamp)
    lifecycle: dict[str, Any]


def _no_links(path: Path) -> bool:
    return not any(q.is_symlink() for q in path.rglob("*"))


def _folder_files(dc: Dovecote, folder: Path, skip: str | None = None) -> list[dict[str, Any]]:
    """One artifact per regular file under ``folder`` (dot-files skipped), by relative path."""
    out = []
    for q in sorted(folder.rglob("*")):
        rel = q.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not q.is_file() or rel.as_posix() == skip:
            continue
        data = q.read_bytes()
        out.append({"ref": artifacts.put_bytes(dc, data), "name": rel.as_posix(), "size": len(data)})
    return out


def _claim(
    dc: Dovecote, entity_id: str, folder: str, p: Path, base: Path, res: Adoption, batch: dict[str, str]
) -> Claim | None:
    """Read one entry: a claim on an item, or None (refused, reported in ``res``).

    ``batch`` maps the foreign ``message_id`` of letters this import is about
    to append to their ids, so two entries of one message make one letter.
    """
    rel = _show(p, base)
    if p.is_symlink():
        res.refuse(rel, "invalid_field", "a symbolic link is never followed")
        return None
    if not (p.is_file() or p.is_dir()):
        res.refuse(rel, "invalid_field", "not a regular file or folder")
        return None
    if p.is_dir() and not _no_links(p):
        res.refuse(rel, "invalid_field", "the folder holds a symbolic link, which is never followed")
        return None
    env: dict[str, Any] | None = None
    form = "bare"
    if p.is_dir() and (p / "envelope.json").is_file():
        env = read_envelope(p)
        form = "dir" if env is not None else "bare"
        if env is None:
            res.note(rel, "unreadable_json", "envelope.json is not a JSON object; adopted as a bare drop")
    elif p.is_file() and p.suffix == ".json":
        env = read_envelope(p)
        form = "flat" if env is not None else "bare"
        if env is None:
            res.note(rel, "unreadable_json", "not a JSON object; adopted as a bare drop")
    state = tree_state(folder, p.name, env)
    lifecycle = env.get("lifecycle") if env else None
    lc = lifecycle if isinstance(lifecycle, dict) else {}
    if env is not None:
        marked, stamp = stamp_of(env)
        if marked is not None:
            book = book_for(dc, entity_id)
            if marked not in book.items:
                res.refuse(rel, "unknown_letter", f"a dovecote view envelope of {marked}, no item of {entity_id}")
                return None
            return Claim(rel, "view", marked, None, None if state is stamp else state, lc)
        mid = Envelope(env).message_id
        known = (book_for(dc, entity_id).alias.get(mid) or batch.get(mid)) if mid else None
        if known is not None:
            return Claim(rel, form, known, None, state, lc)
        obj = foreign_letter(env)
        if form == "dir":
            files = _folder_files(dc, p, skip="envelope.json")
            if files:
                obj["tree_files"] = files
        line = canonical_line(obj)
        if mid:
            batch[mid] = letter_id(line)
        return Claim(rel, form, letter_id(line), line, state, lc)
    else:
        data = p.read_bytes() if p.is_file() else None
        base_name = _STATE_PREFIX.sub("", p.name, count=1) or p.name
        files = (
            [{"ref": artifacts.put_bytes(dc, data), "name": base_name, "size": len(data)}]
            if data is not None else _folder_files(dc, p)
        )
        obj = drop_letter(entity_id, p.name, data is None, files)
    line = canonical_line(obj)
    return Claim(rel, form, letter_id(line), line, state, lc)


def _due(lc: dict[str, Any]) -> int | None:
    for key in ("reminder_tic", "defer_until_tic"):
        v = lc.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return v
    return None


def _adopt_item(dc: Dovecote, entity_id: str, claim: Claim, tic: int | None, res: Adoption) -> int:
    """Append the links that take the item from the ledger's state to the tree's; return how many."""
    book = book_for(dc, entity_id)
    item = book.items[claim.item]
    r = book.replay_of(item)
    now = datetime.now(UTC)
    ledger = effective(r, tic, now)
    want = claim.state
    assert want is not None
    due = _due(claim.lifecycle)
    if want is State.DEFER and due is not None and tic is not None and due <= tic:
        want = State.WAIT  # its reminder has come: the view shows it as WAIT too
    if want is State.DEFER and due is None and ledger is not State.DEFER:
        res.adopted_as_wait.append({"path": claim.rel, "id": claim.item, "detail": "DEFER without a due tic"})
        want = State.WAIT
    steps = route(ledger, want)
    if steps is None:
        res.refuse(claim.rel, "illegal_transition", f"the tree says {want}, the ledger {ledger} (item {claim.item})")
        return 0
    if not r.seen and ARCHIVING & set(steps):
        steps.insert(0, "seen")
    added = 0
    for kind in steps:
        reason = claim.lifecycle.get(REASON_KEY.get(kind, ""))
        try:
            mail.transition(
                dc, entity_id, claim.item, kind, rails=False, extra=dict(ADOPTED), current=tic, actor=entity_id,
                until_tic=due if kind == "defer" else None, reason=reason if isinstance(reason, str) else None,
            )
        except Refusal as e:  # someone moved the item meanwhile: the CAS said no
            res.refuse(claim.rel, e.reason, e.detail)
            break
        added += 1
    return added


def adopt_mailbox(dc: Dovecote, entity_id: str, mbox: Path, base: Path, tic: int | None) -> Adoption:
    """Import one entity's mailbox folder."""
    res = Adoption(entity_id, _show(mbox, base) or ".")
    claims: list[Claim] = []
    batch: dict[str, str] = {}
    for folder in STATE_FOLDERS:
        for p in listing(mbox / folder):
            if is_reference_folder(p):
                # organize --apply grouped loose reference files here: material, not an item
                res.skipped.append({
                    "path": _show(p, base), "reason": "reference",
                    "detail": "REF_ folders hold grouped reference files; they are not inbox items",
                })
                continue
            try:
                c = _claim(dc, entity_id, folder, p, base, res, batch)
            except Refusal as e:  # e.g. too_large: this entry only
                res.refuse(_show(p, base), e.reason, e.detail)
                continue
            except OSError as e:
                res.refuse(_show(p, base), "invalid_field", f"cannot read it: {e.strerror or e}")
                continue
            if c is not None:
                claims.append(c)
    for p in listing(mbox / OUTBOUND):
        marked, _ = stamp_of(read_envelope(p))
        if marked is None or marked not in book_for(dc, entity_id).drafts:
            res.skipped.append({
                "path": _show(p, base), "reason": "outbound",
                "detail": "drafts are not imported; write them with `dovecote draft`",
            })
    lines = [c.line for c in claims if c.line is not None]
    appended = dc.store.append(entity_address(dc, entity_id), lines) if lines else []
    new_items = {lid for lid, new in appended if new}
    res.letters_added = len(new_items)
    # one item, several entries (a copy, a crashed move): the furthest state speaks for it
    best: dict[str, Claim] = {}
    order: list[str] = []
    for c in claims:
        res.items.append({"path": c.rel, "id": c.item, "form": c.form, "state": str(c.state) if c.state else None})
        if c.item not in best:
            order.append(c.item)
            best[c.item] = c
            continue
        kept = best[c.item]
        if c.state is not None and (kept.state is None or RANK[c.state] > RANK[kept.state]):
            best[c.item], c = c, kept
        if c.state is not None and c.state is not best[c.item].state:
            kept = best[c.item]
            res.note(c.rel, "duplicate_entry", f"same item {c.item} as {kept.rel}; its state {kept.state} was kept")
    for iid in order:
        c = best[iid]
        links = _adopt_item(dc, entity_id, c, tic, res) if c.state is not None else 0
        res.links_added += links
        if not links and iid not in new_items:
            res.already_present += 1
    return res


def _is_mailbox(path: Path) -> bool:
    return any((path / f).is_dir() for f in (*STATE_FOLDERS, OUTBOUND))


def import_inbox_tree(
    dc: Dovecote, path: str | Path, entity_id: str | None = None, *, current: int | None = None
) -> ImportResult:
    """Adopt a mailbox (with ``entity_id``) or an ``agent-mailboxes`` root of ``ent_*`` folders.

    Raises ``Refusal`` (``invalid_field``, ``missing_field``, ``invalid_name``,
    ``unknown_entity``) before anything is written when the request itself is wrong.
    """
    root = Path(path).expanduser().absolute()
    if root.is_symlink() or not root.is_dir():
        raise Refusal("invalid_field", f"{str(path)!r} is not a directory")
    tic, _ = current_tic(dc, current)
    if entity_id is not None:
        entity_address(dc, check_name(entity_id, "entity id"))
        mbox = root if _is_mailbox(root) else root / entity_id
        if not _is_mailbox(mbox) or mbox.is_symlink():
            raise Refusal("invalid_field", f"{str(path)!r} holds no mailbox folders ({', '.join(STATE_FOLDERS)})")
        return ImportResult(str(root), tic, [adopt_mailbox(dc, entity_id, mbox, root, tic)], [])
    if _is_mailbox(root):
        raise Refusal("missing_field", f"{str(path)!r} is one mailbox: name its entity with --entity")
    boxes = [p for p in listing(root) if p.name.startswith("ent_") and p.is_dir()]
    if not boxes:
        raise Refusal("invalid_field", f"{str(path)!r} is neither a mailbox nor a folder of ent_* mailboxes")
    done: list[Adoption] = []
    skipped: list[dict[str, Any]] = []
    for p in boxes:
        name = _show(p, root)
        try:
            check_name(p.name, "entity id")
        except Refusal as e:
            skipped.append({"name": name, "reason": e.reason, "detail": e.detail})
            continue
        if p.is_symlink():
            skipped.append({"name": name, "reason": "invalid_field", "detail": "a symbolic link is never followed"})
        elif dc.roster.entity(p.name) is None:
            skipped.append({"name": name, "reason": "unknown_entity", "detail": "not in the roster; not created"})
        else:
            done.append(adopt_mailbox(dc, p.name, p, root, tic))
    return ImportResult(str(root), tic, done, skipped)


def render_text(result: ImportResult) -> str:
    """The summary every face prints."""
    lines = []
    for a in result.entities:
        lines.append(
            f"{a.entity}: {a.letters_added} letters added, {a.links_added} links added, "
            f"{a.already_present} already present, {len(a.adopted_as_wait)} adopted as WAIT, "
            f"{len(a.refused)} refused"
        )
        lines += [f"  refused {one_line(r['path'])}: {r['reason']}: {one_line(r['detail'])}" for r in a.refused]
        lines += [f"  as WAIT {one_line(w['path'])}: {one_line(w['detail'])}" for w in a.adopted_as_wait]
        lines += [f"  note {one_line(n['path'])}: {n['reason']}: {one_line(n['detail'])}" for n in a.notes]
        lines += [f"  skipped {one_line(s['path'])}: {one_line(s['detail'])}" for s in a.skipped]
    lines += [
        f"skipped {one_line(s['name'])}: {s['reason']}: {one_line(s['detail'])}" for s in result.skipped_entities
    ]
    return "\n".join(lines) + "\n"

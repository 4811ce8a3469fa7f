"""Reading the entries of an /inbox tree for ``import inbox-tree``: what each one is.

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

Symbolic links are never followed. Nothing here writes a letter: it reads the
tree (and stores artifact blobs, which are content-addressed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote import folds
from dovecote.derive.lifecycle import State
from dovecote.envelope import DROP_SENDER, ENVELOPE_VERSION, Envelope
from dovecote.letters import canonical_line, format_ts, letter_id
from dovecote.ops import artifacts
from dovecote.ops.viewnames import STATE_PREFIX
from dovecote.ops.viewtree import disagreement, read_envelope, stamp_of, tree_state
from dovecote.timeutil import parse_time

if TYPE_CHECKING:
    from dovecote.context import Context
    from dovecote.ops.adopt import Adoption

#: Lifecycle keys a tree rewrites on every move: they become links, never letter bytes.
VOLATILE = ("state", "state_entered_at_tic", "nack_reason", "defer_reason", "completion_note")
_TIC = re.compile(r"tic[ _-]?(\d+)", re.IGNORECASE)


def show(path: Path, base: Path) -> str:
    """A path for the report, relative to the import root, safe to print as JSON."""
    rel = path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


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
    base = STATE_PREFIX.sub("", name, count=1) or name
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


def _folder_files(dc: Context, folder: Path, skip: str | None = None) -> list[dict[str, Any]]:
    """One artifact per regular file under ``folder`` (dot-files skipped), by relative path."""
    out = []
    for q in sorted(folder.rglob("*")):
        rel = q.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not q.is_file() or rel.as_posix() == skip:
            continue
        data = q.read_bytes()
        out.append({"ref": artifacts.put_bytes(dc, data), "name": rel.as_posix(), "size": len(data)})
    return out


def read_claim(
    dc: Context, entity_id: str, folder: str, p: Path, base: Path, res: Adoption, batch: dict[str, str]
) -> Claim | None:
    """Read one entry: a claim on an item, or None (refused, reported in ``res``).

    ``batch`` maps the foreign ``message_id`` of letters this import is about
    to append to their ids, so two entries of one message make one letter.
    """
    rel = show(p, base)
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
    why = disagreement(folder, p.name, env)
    if why is not None:
        res.note(rel, "state_disagrees", why)
    lifecycle = env.get("lifecycle") if env else None
    lc = lifecycle if isinstance(lifecycle, dict) else {}
    if env is not None:
        marked, stamp = stamp_of(env)
        if marked is not None:
            book = folds.book_for(dc, entity_id)
            if marked not in book.items:
                res.refuse(rel, "unknown_letter", f"a dovecote view envelope of {marked}, no item of {entity_id}")
                return None
            return Claim(rel, "view", marked, None, None if state is stamp else state, lc)
        mid = Envelope(env).message_id
        known = (folds.book_for(dc, entity_id).alias.get(mid) or batch.get(mid)) if mid else None
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
        base_name = STATE_PREFIX.sub("", p.name, count=1) or p.name
        files = (
            [{"ref": artifacts.put_bytes(dc, data), "name": base_name, "size": len(data)}]
            if data is not None else _folder_files(dc, p)
        )
        obj = drop_letter(entity_id, p.name, data is None, files)
    line = canonical_line(obj)
    return Claim(rel, form, letter_id(line), line, state, lc)



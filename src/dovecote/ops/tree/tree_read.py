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
tree (and stores artifact blobs, which are content-addressed), and returns what
it found to report (``Finding``) for the import to record in its own report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from dovecote.derive.lifecycle import State
from dovecote.errors import Refusal
from dovecote.model.envelope import Envelope
from dovecote.model.foreign import drop_letter, foreign_letter, forged_trust
from dovecote.model.letters import canonical_line, letter_id
from dovecote.ops.mail import artifacts
from dovecote.ops.tree.viewtree import STATE_PREFIX, disagreement, read_envelope, stamp_of, tree_state
from dovecote.ops.warm import inbox as foldcache

if TYPE_CHECKING:
    from dovecote.ops.context import Context


def show(path: Path, base: Path) -> str:
    """A path for the report, relative to the import root, safe to print as JSON."""
    rel = path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


class Finding(msgspec.Struct, frozen=True):
    """What reading one entry found to report: a refusal (the entry is not adopted) or a note."""

    refused: bool
    path: str
    reason: str
    detail: str


@dataclass
class FolderClaim:
    """One tree entry resolved: the item it is, and what the tree says about it."""

    rel: str
    form: str
    item: str
    line: bytes | None  # a letter to append, when the item is new
    state: State | None  # None: the entry says nothing new (a view envelope at its stamp)
    lifecycle: dict[str, Any]


def _no_links(path: Path) -> bool:
    return not any(q.is_symlink() for q in path.rglob("*"))


def _folder_files(ctx: Context, folder: Path, skip: str | None = None) -> list[dict[str, Any]]:
    """One artifact per regular file under ``folder`` (dot-files skipped), by relative path."""
    out = []
    for q in sorted(folder.rglob("*")):
        rel = q.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not q.is_file() or rel.as_posix() == skip:
            continue
        data = q.read_bytes()
        out.append({"ref": artifacts.put_bytes(ctx, data), "name": rel.as_posix(), "size": len(data)})
    return out


def read_claim(
    ctx: Context, entity_id: str, folder: str, p: Path, base: Path, batch: dict[str, str]
) -> tuple[FolderClaim | None, list[Finding]]:
    """Read one entry: a claim on an item, or None (refused), and what reading it found to report,
    in the order found (the caller records them: reading touches no report of its own).

    ``batch`` maps the foreign ``message_id`` of letters this import is about
    to append to their ids, so two entries of one message make one letter. An
    entry that cannot be read (too large, an I/O error) is refused, this entry only.
    """
    rel = show(p, base)
    found: list[Finding] = []
    try:
        claim = _claim(ctx, entity_id, folder, p, rel, batch, found)
    except Refusal as e:  # e.g. too_large: this entry only
        return None, [*found, Finding(True, rel, e.reason, e.detail)]
    except OSError as e:
        return None, [*found, Finding(True, rel, "invalid_field", f"cannot read it: {e.strerror or e}")]
    return claim, found


def _claim(
    ctx: Context, entity_id: str, folder: str, p: Path, rel: str, batch: dict[str, str], found: list[Finding]
) -> FolderClaim | None:
    """``read_claim``'s reading, its findings added to ``found``."""

    def refuse(reason: str, detail: str) -> None:
        found.append(Finding(True, rel, reason, detail))

    def note(reason: str, detail: str) -> None:
        found.append(Finding(False, rel, reason, detail))

    if p.is_symlink():
        refuse("invalid_field", "a symbolic link is never followed")
        return None
    if not (p.is_file() or p.is_dir()):
        refuse("invalid_field", "not a regular file or folder")
        return None
    if p.is_dir() and not _no_links(p):
        refuse("invalid_field", "the folder holds a symbolic link, which is never followed")
        return None
    env: dict[str, Any] | None = None
    form = "bare"
    if p.is_dir() and (p / "envelope.json").is_file():
        env = read_envelope(p)
        form = "dir" if env is not None else "bare"
        if env is None:
            note("unreadable_json", "envelope.json is not a JSON object; adopted as a bare drop")
    elif p.is_file() and p.suffix == ".json":
        env = read_envelope(p)
        form = "flat" if env is not None else "bare"
        if env is None:
            note("unreadable_json", "not a JSON object; adopted as a bare drop")
    state = tree_state(folder, p.name, env)
    why = disagreement(folder, p.name, env)
    if why is not None:
        note("state_disagrees", why)
    lifecycle = env.get("lifecycle") if env else None
    lc = lifecycle if isinstance(lifecycle, dict) else {}
    if env is not None:
        marked, stamp = stamp_of(env)
        if marked is not None:
            book = foldcache.book_for(ctx, entity_id)
            if marked not in book.items:
                refuse("unknown_letter", f"a dovecote view envelope of {marked}, no item of {entity_id}")
                return None
            return FolderClaim(rel, "view", marked, None, None if state is stamp else state, lc)
        mid = Envelope(env).message_id
        known = (foldcache.book_for(ctx, entity_id).alias.get(mid) or batch.get(mid)) if mid else None
        if known is not None:
            return FolderClaim(rel, form, known, None, state, lc)
        if (forged := forged_trust(env)) is not None:
            refuse("forbidden", forged)
            return None
        obj = foreign_letter(env)
        if form == "dir":
            files = _folder_files(ctx, p, skip="envelope.json")
            if files:
                obj["tree_files"] = files
        line = canonical_line(obj)
        if mid:
            batch[mid] = letter_id(line)
        return FolderClaim(rel, form, letter_id(line), line, state, lc)
    else:
        data = p.read_bytes() if p.is_file() else None
        base_name = STATE_PREFIX.sub("", p.name, count=1) or p.name
        files = (
            [{"ref": artifacts.put_bytes(ctx, data), "name": base_name, "size": len(data)}]
            if data is not None else _folder_files(ctx, p)
        )
        obj = drop_letter(entity_id, STATE_PREFIX.sub("", p.name, count=1) or p.name, data is None, files)
    line = canonical_line(obj)
    return FolderClaim(rel, form, letter_id(line), line, state, lc)



"""``organize``: the /inbox skill's hygiene pass over one entity's mailbox.

It reports four kinds of clutter, each with a proposed action in words:

* **loose files**: entries a person dropped into the folder view's
  ``inbound/`` (``inbox.loose_files``), with the ``REF_<category>/`` folder
  they would be grouped into;
* **expired items**: open items flagged EXPIRED at the current tic (expiry is
  informational, never enforced: the proposal is to answer or archive);
* **duplicate threads**: several open items sharing a ``thread_id``;
* **large files**: over ``LARGE_BYTES`` (10 MiB), among the loose files and the
  stored artifacts (and stored bodies) of open items.

``--apply`` only groups. It moves loose entries of ``inbound/`` into
``inbound/REF_<category>/`` and does nothing else: it never deletes, never
overwrites (a name already taken gets ``-2``, ``-3``, ... before its suffix),
and never touches a ledger. Each move first reserves its target name with an
exclusive create (``O_EXCL`` file or ``mkdir``), then renames the entry onto
that reservation, so a file that appears under the same name meanwhile is
never replaced; the bytes and inode move unchanged. A relative symbolic link
stays where it is (moved one folder down it would point somewhere else).

Categories (by file name extension; folders and anything else are ``other``):
``docs``, ``images``, ``data``, ``other`` (see ``CATEGORY_EXTENSIONS``).
"""

from __future__ import annotations

import contextlib
import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote.derive.inbox.book import Clock, Item, item_row
from dovecote.derive.inbox.state import FLAG_EXPIRED
from dovecote.derive.lifecycle import TERMINAL, effective
from dovecote.errors import Refusal
from dovecote.ledger.jsonl import ensure_dir, fsync_dir
from dovecote.model.results import Result
from dovecote.ops.mail import artifacts
from dovecote.ops.reports.tics import current_tic
from dovecote.ops.tree.viewtree import REF_PREFIX, is_reference_folder, loose_files, view_dir
from dovecote.ops.warm import inbox as foldcache
from dovecote.util import fileops
from dovecote.util.timeutil import order_key

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: "Files over 10MB" (the skill), read as 10 MiB.
LARGE_BYTES = 10 * 1024 * 1024
CATEGORY_EXTENSIONS: dict[str, frozenset[str]] = {
    "docs": frozenset({
        ".md", ".markdown", ".txt", ".rst", ".org", ".adoc", ".pdf", ".doc", ".docx", ".odt", ".rtf",
        ".html", ".htm", ".tex", ".epub", ".ppt", ".pptx", ".odp",
    }),
    "images": frozenset({
        ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp", ".tif", ".tiff", ".heic", ".ico", ".avif",
    }),
    "data": frozenset({
        ".json", ".jsonl", ".ndjson", ".csv", ".tsv", ".yaml", ".yml", ".toml", ".xml", ".parquet",
        ".sqlite", ".db", ".xls", ".xlsx", ".ods", ".arrow", ".feather", ".avro",
    }),
}
OTHER = "other"


def category_of(path: Path) -> str:
    """The REF_ category of a loose entry: by extension for a file; folders are ``other``."""
    if path.is_dir() and not path.is_symlink():
        return OTHER
    ext = path.suffix.lower()
    for name, exts in CATEGORY_EXTENSIONS.items():
        if ext in exts:
            return name
    return OTHER


def _size(path: Path) -> int:
    """Bytes of a file (a symlink counts as itself), or of every file under a folder."""
    try:
        if path.is_symlink() or not path.is_dir():
            return path.lstat().st_size
        total = 0
        for root, _dirs, files in os.walk(path):
            for f in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(root, f)).st_size
        return total
    except OSError:
        return 0


def _large_under(path: Path) -> list[tuple[Path, int]]:
    """Files over ``LARGE_BYTES`` at or under ``path`` (symlinks are not followed)."""
    out: list[tuple[Path, int]] = []
    if path.is_symlink() or not path.is_dir():
        size = _size(path)
        return [(path, size)] if size > LARGE_BYTES else []
    for root, _dirs, files in os.walk(path):
        for f in sorted(files):
            p = Path(root) / f
            size = _size(p)
            if size > LARGE_BYTES:
                out.append((p, size))
    return sorted(out)


def _stored(ctx: Context, item: Item) -> list[tuple[str, str, int]]:
    """(ref, name, size) of an item's stored blobs: its artifacts and a stored body."""
    content = item.env.data.get("content")
    entries = content.get("artifacts") if isinstance(content, dict) else None
    found: list[tuple[str, str, int | None]] = []
    for a in entries if isinstance(entries, list) else ():
        if isinstance(a, dict) and isinstance(a.get("ref"), str):
            size = a.get("size")
            found.append((a["ref"], str(a.get("name") or a["ref"]), size if isinstance(size, int) else None))
    if item.env.body_ref:
        found.append((item.env.body_ref, "(body)", None))
    out = []
    for ref, name, recorded in found:
        try:
            size = artifacts.blob_path(ctx, ref).stat().st_size
        except (OSError, Refusal):  # not stored here, or not a blob reference at all
            size = recorded or 0
        out.append((ref, name, size))
    return out


def _reserve(folder: Path, name: str, is_dir: bool) -> Path:
    """Take a free name in ``folder`` exclusively: ``name``, else ``stem-2.ext``, ``stem-3.ext``..."""
    stem, suffix = Path(name).stem, Path(name).suffix
    if not stem:  # ".profile"-like names keep their whole name as the stem
        stem, suffix = name, ""
    n = 1
    while True:
        target = folder / (name if n == 1 else f"{stem}-{n}{suffix}")
        try:
            if is_dir:
                fileops.mkdir(target)
            else:
                fileops.write_new(target, b"", 0o600, sync=False)
            return target
        except FileExistsError:
            n += 1


def _group(view: Path, loose: list[Path]) -> list[dict[str, str]]:
    """Move each loose entry into inbound/REF_<category>/ without deleting or overwriting."""
    applied: list[dict[str, str]] = []
    touched: set[Path] = set()
    for src in loose:
        folder = src.parent / f"{REF_PREFIX}{category_of(src)}"
        ensure_dir(folder)
        is_dir = src.is_dir() and not src.is_symlink()
        target = _reserve(folder, src.name, is_dir)
        try:
            fileops.replace(src, target)  # onto our own empty reservation: atomic, and nothing else is replaced
        except FileNotFoundError:  # someone took it away meanwhile: there is nothing to group
            (fileops.rmdir if is_dir else fileops.unlink)(target)
            continue
        touched.update((folder, src.parent))
        applied.append({"from": str(src.relative_to(view)), "to": str(target.relative_to(view))})
    for d in sorted(touched):
        fsync_dir(d)
    return applied


class Organized(Result, frozen=True):
    """One inbox's hygiene report: its folder view, the tic, each finding as a row, and what ``apply`` did."""

    entity: str
    view: str
    tic: int | None
    loose: list[dict[str, Any]]
    expired: list[dict[str, Any]]
    duplicate_threads: list[dict[str, Any]]
    large_files: list[dict[str, Any]]
    applied: list[dict[str, Any]]


def organize(
    ctx: Context,
    entity_id: str,
    *,
    apply: bool = False,
    current: int | None = None,
    now: datetime | None = None,
) -> Organized:
    """Report loose files, expired items, duplicate threads and large files; ``apply`` groups loose files.

    Returns ``{entity, view, tic, loose, expired, duplicate_threads,
    large_files, applied}``; paths are relative to the entity's folder view.
    Raises ``Refusal`` ``unknown_entity``.
    """
    foldcache.entity_address(ctx, entity_id)
    book = foldcache.book_for(ctx, entity_id)
    tic, _ = current_tic(ctx, current)
    clock = Clock(tic, now or ctx.now())
    limits = ctx.roster.limits
    view = view_dir(ctx, entity_id)
    # REF_ folders are earlier groupings (loose_files leaves them out too): never regroup them
    entries = [p for p in loose_files(ctx, entity_id) if not is_reference_folder(p)]

    loose: list[dict[str, Any]] = []
    large: list[dict[str, Any]] = []
    movable: list[Path] = []
    for p in entries:
        cat = category_of(p)
        kind = "symlink" if p.is_symlink() else "dir" if p.is_dir() else "file"
        if kind == "symlink" and not os.readlink(p).startswith("/"):
            proposed = "left in place: a relative link moved into a folder would point somewhere else"
        else:
            proposed = f"group into inbound/{REF_PREFIX}{cat}/ (organize --apply)"
            movable.append(p)
        loose.append({
            "path": str(p.relative_to(view)),
            "kind": kind,
            "size": _size(p),
            "category": cat,
            "proposed": proposed,
        })
        for f, size in _large_under(p):
            large.append({
                "where": "loose",
                "path": str(f.relative_to(view)),
                "size": size,
                "proposed": "move it out of the inbox to long-term storage; keep a reference here",
            })

    open_items: list[tuple[Item, dict[str, Any]]] = []
    for item in book.items.values():
        if effective(book.replay_of(item), clock.tic, clock.now) in TERMINAL:
            continue
        open_items.append((item, item_row(book, item, clock, limits)))
    open_items.sort(key=lambda pair: order_key(pair[0].env.created_at))  # stable: same instant keeps ledger order

    expired = [
        {
            "id": row["id"],
            "subject": row["subject"],
            "sender": row["sender"],
            "state": row["state"],
            "expires_at_tic": row["expires_at_tic"],
            "proposed": "respond if it still matters, else archive it (seen, then complete or nack); "
            "expiry is only a flag, nothing is moved",
        }
        for _, row in open_items
        if FLAG_EXPIRED in row["flags"]
    ]

    threads: dict[str, list[dict[str, Any]]] = {}
    for _, row in open_items:
        if row["thread_id"]:
            threads.setdefault(row["thread_id"], []).append(row)
    duplicates = [
        {
            "thread_id": tid,
            "count": len(rows),
            "ids": [r["id"] for r in rows],
            "subjects": [r["subject"] for r in rows],
            "proposed": f"consolidate: answer on the thread from the newest ({rows[-1]['id']}), "
            f"then complete or nack the other {len(rows) - 1}",
        }
        for tid, rows in sorted(threads.items())
        if len(rows) > 1
    ]

    for item, _ in open_items:
        for ref, name, size in _stored(ctx, item):
            if size > LARGE_BYTES:
                large.append({
                    "where": "artifact",
                    "item": item.id,
                    "name": name,
                    "ref": ref,
                    "size": size,
                    "proposed": "archive the item once handled; the blob stays in the store (never deleted)",
                })

    applied = _group(view, movable) if apply and movable else []
    return Organized(entity_id, str(view), tic, loose, expired, duplicates, large, applied)

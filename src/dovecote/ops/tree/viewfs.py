"""The durable file primitives of the folder view, and the rule for odd paths.

Every write here is whole or absent: a new entry is built in a hidden temp
folder, fsynced and renamed into place; an owned file inside an existing entry
is replaced by ``ledger.write_atomic`` (temp, fsync, rename), so files a person
put beside it are never rewritten; an entry that changes state is *renamed*
into its new folder, so everything inside it moves along. A run killed midway
leaves at most hidden temp names (``viewtree.TEMP_NAME``); the next run, under
the same per-entity lock, removes them before it writes.

Nothing here follows a symbolic link when writing: a view folder that is a link
or a file is refused (``unsafe_path``) rather than written through or deleted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from dovecote.errors import Refusal
from dovecote.ledger.jsonl import ensure_dir, fsync_dir, write_atomic
from dovecote.ops.tree.viewtree import ENTRY_FILES, INDEXES, OUTBOUND, STATE_FOLDERS, is_temp_name, owned_entries
from dovecote.util import fileops
from dovecote.util.osutil import lock_at, temp_name

if TYPE_CHECKING:
    from dovecote.ops.context import Context

def discard(p: Path) -> None:
    if p.exists() or p.is_symlink():
        fileops.remove_tree(p)


def new_entry(parent: Path, name: str, files: dict[str, bytes]) -> bool:
    """Build an entry in a hidden temp folder, fsync it, rename it in; False if the name got taken."""
    ensure_dir(parent)
    tmp = parent / temp_name(name)
    discard(tmp)
    fileops.mkdir(tmp)
    for fname in sorted(files):
        fileops.write_new(tmp / fname, files[fname])
    fsync_dir(tmp)
    placed = fileops.rename_new(tmp, parent / name)
    fsync_dir(parent)
    if not placed:
        discard(tmp)
    return placed


def entry_blocked(path: Path) -> str | None:
    """Why the view cannot write into an entry (None if it can): it must be a plain folder
    whose owned names are plain files or absent."""
    if path.is_symlink():
        return "it is a symbolic link, which is never written through"
    if not path.is_dir():
        return "it is a file, not an entry folder"
    for fname in ENTRY_FILES:
        q = path / fname
        if q.is_symlink() or (q.exists() and not q.is_file()):
            return f"its {fname} is not a plain file"
    return None


def update_entry(path: Path, files: dict[str, bytes], force: bool = False) -> bool:
    """Replace the owned files of an entry that differ (all with ``force``); True if any was written."""
    wrote = False
    for fname in sorted(files):
        q = path / fname
        try:
            same = not force and q.read_bytes() == files[fname]
        except OSError:
            same = False
        if not same:
            write_atomic(q, files[fname])
            wrote = True
    return wrote


def move_entry(src: Path, dst: Path) -> bool:
    """Rename an entry, with all it holds, to ``dst``; False (nothing moved) if ``dst`` is taken."""
    ensure_dir(dst.parent)
    if not fileops.rename_new(src, dst):
        return False
    fsync_dir(dst.parent)
    if src.parent != dst.parent:
        fsync_dir(src.parent)
    return True


def remove_entry(path: Path) -> None:
    """Take an entry out of sight in one rename, then delete it (only ever one holding owned files alone)."""
    gone = path.with_name(temp_name(path.name, "old"))
    fileops.replace(path, gone)
    fsync_dir(path.parent)
    discard(gone)


def clean_temps(vdir: Path) -> tuple[int, list[str]]:
    """Remove what a killed run left: hidden temp names in the view's folders and in its entries.

    Returns (how many were removed, the temp folders kept because they hold a
    person's files: those are reported, never deleted).
    """
    removed, kept = 0, []
    places = [vdir, vdir / INDEXES, *(vdir / f for f in (*STATE_FOLDERS, OUTBOUND))]
    places += [p for _, _, p, _ in owned_entries(vdir) if p.is_dir() and not p.is_symlink()]
    for place in places:
        try:
            names = [q for q in place.iterdir() if is_temp_name(q.name)]
        except OSError:
            continue
        for q in names:
            if q.is_dir() and not q.is_symlink() and any(c.name not in ENTRY_FILES for c in q.iterdir()):
                kept.append(q.relative_to(vdir).as_posix())
                continue
            discard(q)
            removed += 1
    return removed, kept


def check_paths(ctx: Context, vdir: Path) -> None:
    """Refuse (``unsafe_path``) a view whose folders are links or files, before anything is written.

    A link could send every write out of the home; a file where a folder belongs
    is a person's, and deleting it to make room is not the view's call.
    """
    views = ctx.layout.views
    chain = [views, vdir.parent, vdir, *(vdir / f for f in (*STATE_FOLDERS, OUTBOUND, INDEXES))]
    for p in chain:
        if p.is_symlink():
            raise Refusal("unsafe_path", f"{p} is a symbolic link; the view never writes through one (remove it)")
        if p.exists() and not p.is_dir():
            raise Refusal("unsafe_path", f"{p} is a file where the view needs a folder (move it away)")
    for f in STATE_FOLDERS:
        if (vdir / f / "envelope.json").exists():
            raise Refusal(
                "unsafe_path",
                f"{vdir / f} is itself an item folder (it holds envelope.json), not the {f}/ folder: an `mv` into"
                f" a folder that did not exist? Move it to {f}/<its name> and run `dovecote view` again",
            )


@contextmanager
def view_lock(ctx: Context, entity_id: str) -> Iterator[None]:
    """One writer per entity tree at a time: two `view` runs (or a view and an import) never interleave
    (the lock is on the file at the lock's name, ``lock_at``: one removed meanwhile keeps no one out)."""
    path = ctx.layout.views / ".locks" / f"{entity_id}.lock"
    for d in (path.parent.parent, path.parent):
        if d.is_symlink() or (d.exists() and not d.is_dir()):
            raise Refusal("unsafe_path", f"{d} is a symbolic link or a file; the view never writes through one")
    ensure_dir(path.parent)
    try:
        fd = lock_at(path, lambda: fileops.open_lock(path, follow=False), fileops.close)
    except OSError as e:  # a link (or a folder) where the lock file belongs
        raise Refusal("unsafe_path", f"cannot open the view lock {path}: {e.strerror or e}") from e
    try:
        yield
    finally:
        fileops.close(fd)

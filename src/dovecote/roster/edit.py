"""Editing ``config.toml`` in place: one writer at a time, the person's layout kept.

Two rules meet here. A roster edit is a read-modify-write of one file, so two
``entity add`` run at once would each rewrite the file from what they read and
the later rename would silently drop the other's entry. Every edit therefore
holds an exclusive ``flock`` on ``config.toml.lock`` (a file beside the roster,
never the roster itself, which is replaced by rename) across the whole read,
change and write, and reads the file only once it holds the lock.

And the roster is a file people edit by hand: an edit adds or removes one
``[[projects]]`` or ``[[entities]]`` table through tomlkit and leaves every
other byte (comments, order, spacing) as it was. Removing a table takes out its
header and its keys; a comment line after its keys stays, for it usually
introduces what follows.

Nothing is written unless the edit is sound: the rules (``roster.with_*``)
decide the new roster, the edited text must parse (``roster.parse``) to exactly
that roster, and only then is it written (``ledger.write_atomic``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from dovecote.errors import Refusal, StoreError
from dovecote.ledger.jsonl import ensure_dir, fsync_dir, write_atomic
from dovecote.roster import config as roster_mod
from dovecote.roster.config import Entity, Project, Roster
from dovecote.util import fileops
from dovecote.util.osutil import lock_at, temp_name

#: A change decides the new roster from the one read under the lock and edits the document to match.
Change = Callable[[Roster, Any], Roster]


def lock_path(config: Path) -> Path:
    return config.with_name(config.name + ".lock")


@contextmanager
def held(config: Path) -> Iterator[None]:
    """Hold the roster's edit lock (released when the descriptor closes, also on a crash).

    The lock is on the file at the lock's name (``lock_at``): one removed or replaced
    while an editor waited would let two editors in at once, and the later roster
    written would drop the earlier's acknowledged change."""
    path = lock_path(config)
    try:
        ensure_dir(config.parent)
        # follow=False: a link there would create its target
        fd = lock_at(path, lambda: fileops.open_lock(path, follow=False), fileops.close)
    except OSError as e:
        raise StoreError(f"cannot open {path}: {e.strerror or e}") from e
    try:
        yield
    finally:
        fileops.close(fd)


def create(config: Path, data: bytes) -> bool:
    """Write a first roster unless one exists; False if one does.

    A hard link of a complete, fsynced file is an atomic create-if-absent: two
    ``init`` at once cannot both win, and no reader ever sees a half-written
    roster (an empty one would read as a default roster). No lock file needed.
    """
    ensure_dir(config.parent)
    tmp = config.with_name(temp_name(config.name))
    try:
        _drop(tmp)  # a killed init's leftover (its pid came round again)
        fileops.write_new(tmp, data)
        fileops.link(tmp, config)
    except FileExistsError:
        return False
    except OSError as e:
        raise StoreError(f"cannot write {config}: {e.strerror or e}") from e
    finally:
        _drop(tmp)
    fsync_dir(config.parent)
    return True


def _drop(path: Path) -> None:
    """Remove ``path`` (a file or a link) if it is there."""
    with suppress(FileNotFoundError):
        fileops.unlink(path)


def edit(config: Path, change: Change) -> Roster:
    """Read, change and rewrite the roster under its lock; return the roster now on disk."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    with held(config):
        if config.is_symlink():  # the rename would replace the link with a copy, cutting it off from its target
            raise Refusal("unsafe_path", f"{config} is a symbolic link; a roster edit never writes through one"
                          " (edit its target by hand, or put a copy in its place)")
        try:
            text = config.read_bytes()
        except FileNotFoundError:
            raise Refusal("no_home", f"no roster at {config}; run `dovecote init`") from None
        current = roster_mod.parse(text)  # a roster that does not load is not edited
        try:
            doc = tomlkit.parse(text.decode("utf-8"))
            wanted = change(current, doc)  # a rule's refusal passes through: nothing written
            out = tomlkit.dumps(doc).encode("utf-8")
        except (TOMLKitError, LookupError, TypeError, AttributeError):  # a layout tomlkit cannot edit
            raise _cannot(config) from None
        try:
            written = roster_mod.parse(out)
        except Refusal:
            raise _cannot(config) from None
        if replace(written, signature="") != replace(wanted, signature=""):
            raise _cannot(config)
        write_atomic(config, out)
        return written


def _cannot(config: Path) -> Refusal:
    return Refusal("invalid_config", f"the layout of {config} defeats an in-place edit; make this change by hand")


# -- the tables ------------------------------------------------------------------


def project_fields(p: Project) -> dict[str, Any]:
    return {"name": p.name, "root": p.root, "aliases": list(p.aliases), "box_in_repo": p.box_in_repo}


def entity_fields(e: Entity) -> dict[str, Any]:
    return {"id": e.id, **({"role": e.role} if e.role is not None else {})}


def add_intake_dir(doc: Any, folder: str) -> None:
    """List ``folder`` in ``[intake] dirs`` (the table, or the key, made when missing)."""
    import tomlkit

    table = doc.get("intake")
    if table is None:
        table = tomlkit.table()
        doc.add("intake", table)
    dirs = table.get("dirs")
    if dirs is None:
        table["dirs"] = [folder]
    else:
        dirs.append(folder)


def _ends_with_newline(item: Any) -> bool:
    return bool(item.as_string().endswith("\n"))


def append_table(doc: Any, key: str, fields: dict[str, Any]) -> None:
    """Add one table to the array ``key`` (an ``[[key]]`` list, or an inline ``key = [...]``)."""
    import tomlkit
    from tomlkit.items import AoT

    current = doc.get(key)
    if current is not None and not isinstance(current, AoT):
        current.append(tomlkit.inline_table())  # an inline array stays inline
        current[-1].update(fields)
        return
    table = tomlkit.table()
    table.update(fields)
    if current is None:
        if doc.body and not _ends_with_newline(doc.body[-1][1]):
            doc.add(tomlkit.nl())
        aot = tomlkit.aot()
        aot.append(table)
        doc[key] = aot
        return
    if current.body:
        last = current.body[-1]
        if not _ends_with_newline(last):
            last.add(tomlkit.nl())  # a file without a final newline
        if not last.as_string().endswith("\n\n"):
            table.trivia.indent = "\n"  # a blank line before the new header
    if doc.body[-1][1] is not current:
        table.add(tomlkit.nl())  # and one before the section that follows
    current.append(table)


def remove_table(doc: Any, key: str, index: int) -> None:
    """Remove table ``index`` of the array ``key``: its header and keys.

    The text around them (blank lines and comments above the header or after
    the last key) stays where it was.
    """
    import tomlkit
    from tomlkit.items import AoT, Comment, Table, Whitespace

    current = doc[key]
    if not isinstance(current, AoT):
        del current[index]
        return
    gone = current.body[index]
    body = gone.value.body
    tail: list[Any] = []
    while body and body[-1][0] is None and isinstance(body[-1][1], Comment | Whitespace):
        tail.insert(0, body.pop()[1])
    text = gone.trivia.indent + "".join(item.as_string() for item in tail)
    del current[index]

    def keep_after(container: Any) -> None:
        for _, item in tomlkit.parse(text).body:
            container.append(None, item)

    if index < len(current.body):  # before the next table's header
        following = current.body[index]
        following.trivia.indent = text + following.trivia.indent
    elif index > 0:  # after the keys of the table before it
        keep_after(current.body[index - 1].value)
    else:  # the array is empty now: the text goes where the array was
        pos = next(i for i, (_, v) in enumerate(doc.body) if v is current)
        del doc[key]
        before = doc.body[pos - 1][1] if pos else None
        if isinstance(before, Table):
            keep_after(before.value)
        elif before is not None:
            before.trivia.trail += text
        else:
            keep_after(doc)

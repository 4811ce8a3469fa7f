"""Finding the dovecote home and naming the files in it.

The home is found the way git finds a repository: ``--home``, else
``$DOVECOTE_HOME``, else the nearest ``.dovecote/config.toml`` upward from the
working directory, else ``~/.dovecote``. A ``.dovecote/`` folder without a
``config.toml`` is a project's in-repo box, not a home, and is passed over.

This module imports nothing heavy: the CLI's fast paths use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from dovecote.errors import Refusal, StoreError
from dovecote.util import fileops

CONFIG = "config.toml"
SPOOL_FILE = "spool.jsonl"
LEDGER = "letters.jsonl"
IN_REPO_DIR = ".dovecote"


def find_home(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """Where the home is (it may not exist yet; if it exists it is a directory)."""
    if explicit:
        return _usable(Path(explicit).expanduser().absolute())
    env = os.environ.get("DOVECOTE_HOME")
    if env:
        return _usable(Path(env).expanduser().absolute())
    here = (cwd or Path.cwd()).absolute()
    for d in (here, *here.parents):
        if (d / IN_REPO_DIR / CONFIG).is_file():
            return d / IN_REPO_DIR
    return _usable(Path("~/.dovecote").expanduser())


def _usable(home: Path) -> Path:
    """Refuse a home that is a file, or a path no directory can be made at.

    A missing home is fine (``init`` creates it; every read says ``no_home``).
    """
    try:
        st = os.stat(home)
    except FileNotFoundError:
        return home
    except (OSError, ValueError) as e:
        raise Refusal("no_home", f"{home} cannot be a dovecote home: {getattr(e, 'strerror', None) or e}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise Refusal("no_home", f"{home} is a file, not a dovecote home (a directory)")
    return home


class Layout:
    """The paths inside one home (DESIGN 2)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / CONFIG
        self.spool = root / SPOOL_FILE
        self.boxes = root / "boxes"
        self.views = root / "views"
        self.cache = root / "cache"
        self.field_labels = root / "field-labels.jsonl"
        self.artifacts = root / "artifacts"
        #: entity id -> its ledger's path: a server asks for the same few on every request
        self._entity_boxes: dict[str, Path] = {}

    def cache_dir(self, *parts: str, create: bool = True) -> Path:
        """``cache/<parts...>`` as a real directory inside the home, for writing a cache.

        Every cache writer goes through here, so none can be led out of the
        home: each level under the home must be a directory, not a symlink
        (which a write would follow into its target) and not a file. A missing
        level is created (``create``) or reported as ``FileNotFoundError``;
        anything else in the way is a ``StoreError`` naming it, and is left
        untouched (it may be a user's file, and a cache is never worth a
        deletion). Reading a cache entry with ``O_NOFOLLOW`` then keeps the
        last component inside too.
        """
        d = self.cache
        for level in (d, *(d.joinpath(*parts[: i + 1]) for i in range(len(parts)))):
            try:
                st = os.lstat(level)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # a concurrent writer made it: check it
                    fileops.mkdir(level)
                st = os.lstat(level)
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
                kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a directory"
                raise StoreError(f"{level} is {kind}; dovecote writes caches only inside the home (remove it)")
        return d.joinpath(*parts)

    def home_box(self) -> Path:
        return self.boxes / "home" / LEDGER

    def project_box(self, name: str) -> Path:
        return self.boxes / "project" / name / LEDGER

    def entity_box(self, entity_id: str) -> Path:
        path = self._entity_boxes.get(entity_id)
        if path is None:
            if len(self._entity_boxes) >= 4096:  # bounded: a caller may ask for names no roster holds
                self._entity_boxes.clear()
            path = self._entity_boxes[entity_id] = self.boxes.joinpath("entity", entity_id, LEDGER)
        return path

    @staticmethod
    def in_repo_box(root: str) -> Path:
        return Path(root) / IN_REPO_DIR / LEDGER

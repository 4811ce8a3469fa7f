"""Finding the dovecote home and naming the files in it.

The home is found the way git finds a repository: ``--home``, else
``$DOVECOTE_HOME``, else the nearest ``.dovecote/config.toml`` upward from the
working directory, else ``~/.dovecote``. A ``.dovecote/`` folder without a
``config.toml`` is a project's in-repo box, not a home, and is passed over.

This module imports nothing heavy: the CLI's fast paths use it.
"""

from __future__ import annotations

import os
from pathlib import Path

CONFIG = "config.toml"
SPOOL = "spool.jsonl"
LEDGER = "letters.jsonl"
IN_REPO_DIR = ".dovecote"


def find_home(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """Where the home is (it may not exist yet)."""
    if explicit:
        return Path(explicit).expanduser().absolute()
    env = os.environ.get("DOVECOTE_HOME")
    if env:
        return Path(env).expanduser().absolute()
    here = (cwd or Path.cwd()).absolute()
    for d in (here, *here.parents):
        if (d / IN_REPO_DIR / CONFIG).is_file():
            return d / IN_REPO_DIR
    return Path("~/.dovecote").expanduser()


class Layout:
    """The paths inside one home (DESIGN 2)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / CONFIG
        self.spool = root / SPOOL
        self.boxes = root / "boxes"
        self.views = root / "views"
        self.cache = root / "cache"
        self.field_labels = root / "field-labels.jsonl"
        self.artifacts = root / "artifacts"

    def home_box(self) -> Path:
        return self.boxes / "home" / LEDGER

    def project_box(self, name: str) -> Path:
        return self.boxes / "project" / name / LEDGER

    def entity_box(self, entity_id: str) -> Path:
        return self.boxes / "entity" / entity_id / LEDGER

    @staticmethod
    def in_repo_box(root: str) -> Path:
        return Path(root) / IN_REPO_DIR / LEDGER

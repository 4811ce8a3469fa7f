"""Names in the /inbox folder view that every use case must agree on.

The view writes entries with these names, ``inbox`` counts what is not one of
them as loose, ``organize`` groups loose files into ``REF_`` folders, and
``import inbox-tree`` knows a ``REF_`` folder is reference material, not an
item. One definition, here, so the four can never disagree.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from dovecote.derive.lifecycle import State
from dovecote.letters import LETTER_ID_PATTERN

if TYPE_CHECKING:
    from dovecote.context import Context

_STATES = "|".join(s.value for s in State)
#: The ``<STATE>_`` a name starts with when it carries its lifecycle state (the view's and the skill's).
STATE_PREFIX = re.compile(rf"(?:{_STATES})_")
#: An item entry the view owns: ``<STATE>_<letter id>``.
OWNED_ITEM = re.compile(rf"({_STATES})_({LETTER_ID_PATTERN})")
#: A draft entry the view owns in ``outbound/``.
OWNED_DRAFT = re.compile(rf"EMIT_({LETTER_ID_PATTERN})")
#: The prefix of a folder ``organize --apply`` groups loose files into.
REF_PREFIX = "REF_"


def view_dir(dc: Context, entity_id: str) -> Path:
    return dc.layout.views / "agent-mailboxes" / entity_id


def is_reference_folder(p: Path) -> bool:
    """A ``REF_`` folder (a real one, not a link): grouped reference files."""
    return p.name.startswith(REF_PREFIX) and p.is_dir() and not p.is_symlink()


def loose_files(dc: Context, entity_id: str) -> list[Path]:
    """Entries in the view's inbound/ that the view did not write (hand drops).

    ``REF_*`` folders hold drops ``organize --apply`` already grouped: organized, so not loose.
    """
    inbound = view_dir(dc, entity_id) / "inbound"
    try:
        entries = sorted(inbound.iterdir())
    except OSError:
        return []
    return [
        p for p in entries
        if not p.name.startswith(".") and not OWNED_ITEM.fullmatch(p.name) and not is_reference_folder(p)
    ]

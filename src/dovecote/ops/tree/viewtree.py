"""The /inbox tree format: its names, which folder means which state, and what an entry says.

Every use case agrees on the names here: the view writes entries with them,
``inbox`` counts what is not one of them as loose, ``organize`` groups loose
files into ``REF_`` folders, and ``import inbox-tree`` knows a ``REF_`` folder
is reference material, not an item. Reading is shared by ``view`` (its own
output, and what a person did to it) and ``import inbox-tree`` (any tree), so
the two can never read one entry two ways.

The folder is the state (notes A1; the skill moves an item by moving its
folder): ``inbound/`` WAIT, ``processing/`` ACTIVE, ``deferred/`` DEFER,
``archive/`` DONE or NACK. A name prefix only tells DONE from NACK inside
``archive/``; a prefix that names another folder's state is a name a person did
not bother to change when moving the entry (``mv inbound/WAIT_x archive/``), so
the folder wins. The one thing above the folder is an envelope's
``lifecycle.state`` edited on purpose (notes A5: the skill's own writers set it
on every move).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from dovecote.derive.inbox.state import BUCKETS
from dovecote.derive.inbox.state import OUTBOUND as OUTBOUND  # the drafts folder, part of the tree format
from dovecote.derive.lifecycle import State
from dovecote.model.ids import LETTER_ID_PATTERN
from dovecote.model.letters import is_letter_id

if TYPE_CHECKING:
    from dovecote.ops.context import Context

_STATES = "|".join(s.value for s in State)
#: The ``<STATE>_`` a name starts with when it carries its lifecycle state (the view's and the skill's).
STATE_PREFIX = re.compile(rf"(?:{_STATES})_")
#: An item entry the view owns: ``<STATE>_<letter id>``.
OWNED_ITEM = re.compile(rf"({_STATES})_({LETTER_ID_PATTERN})")
#: A draft entry the view owns in ``outbound/``.
OWNED_DRAFT = re.compile(rf"EMIT_({LETTER_ID_PATTERN})")
#: The prefix of a folder ``organize --apply`` groups loose files into.
REF_PREFIX = "REF_"


def view_dir(ctx: Context, entity_id: str) -> Path:
    return ctx.layout.views / "agent-mailboxes" / entity_id


def is_reference_folder(p: Path) -> bool:
    """A ``REF_`` folder (a real one, not a link): grouped reference files."""
    return p.name.startswith(REF_PREFIX) and p.is_dir() and not p.is_symlink()


def loose_files(ctx: Context, entity_id: str) -> list[Path]:
    """Entries in the view's inbound/ that the view did not write (hand drops).

    ``REF_*`` folders hold drops ``organize --apply`` already grouped: organized, so not loose.
    """
    inbound = view_dir(ctx, entity_id) / "inbound"
    try:
        entries = sorted(inbound.iterdir())
    except OSError:
        return []
    return [
        p for p in entries
        if not p.name.startswith(".") and not OWNED_ITEM.fullmatch(p.name) and not is_reference_folder(p)
    ]

#: Folder -> the state an entry there has when nothing else says (notes A5): the first
#: state ``BUCKETS`` puts there (archive/ holds DONE and NACK; an entry with no word is DONE).
FOLDER_DEFAULT: dict[str, State] = {
    f: next(s for s in State if BUCKETS[s] == f) for f in dict.fromkeys(BUCKETS.values())
}
STATE_FOLDERS = tuple(FOLDER_DEFAULT)
#: The states an entry of each folder may hold (archive/ holds both terminal states).
FOLDER_STATES: dict[str, frozenset[State]] = {
    f: frozenset(s for s, b in BUCKETS.items() if b == f) for f in STATE_FOLDERS
}
INDEXES = "indexes"
INBOX_MD = "INBOX.md"
INDEX_FILES = ("inbox-registry.json", "events.jsonl", "receipts.jsonl")
#: The files the view writes inside an item or draft entry; anything else in an entry is a person's.
ENTRY_FILES = frozenset({"envelope.json", "README.md"})
MARKER = "dovecote"
#: The hidden names view writes use while building (``ledger.write_atomic``'s too): a killed run leaves them.
TEMP_NAME = re.compile(r"\.(.+)\.[0-9]+\.[0-9]+\.(?:tmp|old)")
_JSON_OPTS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


def dump_json(value: Any) -> bytes:
    """The one deterministic JSON form every view file uses."""
    return orjson.dumps(value, option=_JSON_OPTS) + b"\n"


def valid_state(value: object) -> State | None:
    if isinstance(value, str) and value.upper() in State.__members__:
        return State(value.upper())
    return None


def prefix_state(name: str) -> State | None:
    head, sep, _ = name.partition("_")
    return valid_state(head) if sep and head.isupper() else None


def stamp_of(env: dict[str, Any] | None) -> tuple[str | None, State | None]:
    """(letter id, state) of a view envelope's marker; (None, None) for any other envelope."""
    mark = env.get(MARKER) if env else None
    if not isinstance(mark, dict) or not is_letter_id(mark.get("letter_id")):
        return None, None
    return mark["letter_id"], valid_state(mark.get("state"))


def declared_state(env: dict[str, Any] | None) -> State | None:
    """An envelope's ``lifecycle.state`` when set on purpose.

    A view envelope's ``lifecycle.state`` is the view's own stamp, which a person
    moving the folder does not edit, so it counts only when it differs from the
    stamp (someone edited it).
    """
    lc = env.get("lifecycle") if env else None
    declared = valid_state(lc.get("state")) if isinstance(lc, dict) else None
    _, stamp = stamp_of(env)
    return declared if declared is not stamp else None


def tree_state(folder: str, name: str, env: dict[str, Any] | None) -> State:
    """The state a tree gives an entry: its folder's, refined within archive/ by the envelope, then the prefix."""
    allowed = FOLDER_STATES.get(folder, frozenset({State.WAIT}))
    for said in (declared_state(env), prefix_state(name)):
        if said in allowed:
            return said
    return FOLDER_DEFAULT.get(folder, State.WAIT)


def disagreement(folder: str, name: str, env: dict[str, Any] | None) -> str | None:
    """Why an entry's envelope contradicts its folder (the folder won), for the report; None if it does not."""
    said = declared_state(env)
    if said is None or said is tree_state(folder, name, env):
        return None
    return (f"its envelope says {said} but it sits in {folder}/: the folder is the state;"
            f" move the entry to {BUCKETS[said]}/ to make that move")


def read_envelope(path: Path) -> dict[str, Any] | None:
    """The JSON object of an envelope file (or a folder's envelope.json); None if there is none.

    A symbolic link is never read through: it may point anywhere.
    """
    target = path / "envelope.json" if path.is_dir() and not path.is_symlink() else path
    if target.is_symlink():
        return None
    try:
        value = orjson.loads(target.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def listing(folder: Path) -> list[Path]:
    """A folder's entries in sorted order, dot-files skipped (notes A5); nothing if it is absent."""
    try:
        return sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    except OSError:
        return []


def owned_entries(vdir: Path) -> Iterator[tuple[str, str, Path, str]]:
    """(folder, name, path, id) of every entry in the view's owned name space."""
    for folder in (*STATE_FOLDERS, OUTBOUND):
        pattern = OWNED_DRAFT if folder == OUTBOUND else OWNED_ITEM
        for p in listing(vdir / folder):
            m = pattern.fullmatch(p.name)
            if m:
                yield folder, p.name, p, m.group(m.lastindex or 0)


def foreign_names(entry: Path) -> list[str]:
    """What a person put inside an entry folder: every name the view does not write there."""
    try:
        return sorted(p.name for p in entry.iterdir() if p.name not in ENTRY_FILES and not is_temp_name(p.name))
    except OSError:
        return []


def is_temp_name(name: str) -> bool:
    """A hidden temp name a view write uses (``.<name>.<pid>.<thread>.tmp|old``): ours to clean up."""
    return TEMP_NAME.fullmatch(name) is not None

"""``view``: the /inbox skill's folder layout, written from an entity's ledger.

The layout is a cache (DESIGN 1.1): it is computed from the ledger at the
current tic and time, and the same ledger always gives byte-identical files
(sorted-key JSON, no "now" anywhere). It is written entry by entry: an item
folder is built in a hidden temp folder next to its place, fsynced, and renamed
into place (swapped atomically where the kernel offers ``RENAME_EXCHANGE``), so
a reader sees the old entry or the new one, never half of one. Whole files go
through ``ledger.write_atomic``.

What the view owns, and nothing else (a person may keep anything beside it):

* ``<STATE>_<12 hex>`` entries in ``inbound/``, ``processing/``, ``deferred/``
  and ``archive/``; ``EMIT_<12 hex>`` entries in ``outbound/``, everything
  inside such an entry included;
* the three files of ``indexes/`` it writes, and ``INBOX.md``.

Each item entry's ``envelope.json`` carries a marker ``{"dovecote":
{"letter_id", "state"}}``: the state the view wrote it in (its *stamp*). An
owned entry whose place (``lifecycle.state`` if edited, else its prefix, else
its folder: ``tree_state``) still equals its stamp is the view's own output; if
the ledger moved on, it is replaced. An entry whose place differs from both its
stamp and the ledger was moved by hand: it is left exactly where it is and
reported (``hand_moved``) so ``import inbox-tree`` can adopt the move, and the
view does not write a second copy of that item. Owned-pattern entries whose id
is not an item of this box are reported as ``unknown`` and left alone.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from dovecote.derive.inbox import BUCKETS, Clock, InboxBook, Item, item_row
from dovecote.derive.lifecycle import TERMINAL, Replay, State, apply_link, effective, parse_time
from dovecote.envelope import Envelope
from dovecote.ledger import ensure_dir, fsync_dir, write_atomic
from dovecote.letters import is_letter_id
from dovecote.ops.books import book_for, entity_address
from dovecote.ops.tics import current_tic
from dovecote.ops.viewnames import OWNED_DRAFT, OWNED_ITEM, view_dir
from dovecote.roster import Limits
from dovecote.textsafe import one_line

if TYPE_CHECKING:
    from dovecote.api import Dovecote

#: Folder -> the state an entry there has when nothing else says (notes A5).
FOLDER_DEFAULT: dict[str, State] = {
    "inbound": State.WAIT,
    "processing": State.ACTIVE,
    "deferred": State.DEFER,
    "archive": State.DONE,
}
STATE_FOLDERS = tuple(FOLDER_DEFAULT)
OUTBOUND = "outbound"
INDEXES = "indexes"
INBOX_MD = "INBOX.md"
INDEX_FILES = ("inbox-registry.json", "events.jsonl", "receipts.jsonl")
MARKER = "dovecote"
_JSON_OPTS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


def dump_json(value: Any) -> bytes:
    """The one deterministic JSON form every view file uses."""
    return orjson.dumps(value, option=_JSON_OPTS) + b"\n"


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) + b"\n" for r in rows)


# -- reading a tree entry's state (shared with ``adopt``) -----------------------------


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


def tree_state(folder: str, name: str, env: dict[str, Any] | None) -> State:
    """Where a tree puts an entry: ``lifecycle.state`` if valid, else the name prefix, else the folder.

    One refinement for view envelopes: their ``lifecycle.state`` is the view's
    own stamp, which a person moving the folder does not edit, so it counts only
    when it differs from the stamp (someone edited it on purpose).
    """
    lc = env.get("lifecycle") if env else None
    declared = valid_state(lc.get("state")) if isinstance(lc, dict) else None
    _, stamp = stamp_of(env)
    if declared is not None and declared is not stamp:
        return declared
    return prefix_state(name) or FOLDER_DEFAULT.get(folder, State.WAIT)


def read_envelope(path: Path) -> dict[str, Any] | None:
    """The JSON object of an envelope file (or a directory's envelope.json); None if there is none."""
    target = path / "envelope.json" if path.is_dir() and not path.is_symlink() else path
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


# -- building the files -------------------------------------------------------------


def _item_envelope(item: Item, state: State) -> dict[str, Any]:
    env = item.letter.data()
    if not isinstance(env.get("message_id"), str):
        env["message_id"] = item.id
    lc = env.get("lifecycle")
    env["lifecycle"] = {**(lc if isinstance(lc, dict) else {}), "state": str(state)}
    env[MARKER] = {"letter_id": item.id, "state": str(state)}
    return env


def _readme(data: dict[str, Any], letter_id: str, subject: str, body: str, body_ref: str | None) -> bytes:
    lines = [f"# {one_line(subject) or '(no subject)'}", "", f"dovecote letter {letter_id}", ""]  # a title is one line
    if body_ref:
        lines.append(f"The body is stored as artifact {body_ref} in the dovecote home's artifacts/.")
    else:
        lines.append(body or "(no body)")
    files = []
    for key_path in (("content", "artifacts"), ("tree_files",)):
        block: Any = data
        for k in key_path:
            block = block.get(k) if isinstance(block, dict) else None
        if isinstance(block, list):
            files.extend(a for a in block if isinstance(a, dict) and isinstance(a.get("ref"), str))
    if files:
        lines += ["", "## Artifacts", ""]
        lines += [f"- {a.get('name') or '?'} ({a['ref']})" for a in files]
    return ("\n".join(lines).rstrip("\n") + "\n").encode("utf-8")


def _item_files(item: Item, state: State) -> dict[str, bytes]:
    env = _item_envelope(item, state)
    e = item.env
    return {"envelope.json": dump_json(env), "README.md": _readme(env, item.id, e.subject, e.body, e.body_ref)}


def _draft_files(did: str, data: dict[str, Any]) -> dict[str, bytes]:
    env = dict(data)
    if not isinstance(env.get("message_id"), str):
        env["message_id"] = did
    env[MARKER] = {"letter_id": did, "state": "EMIT"}
    e = Envelope(data)
    return {"envelope.json": dump_json(env), "README.md": _readme(env, did, e.subject, e.body, e.body_ref)}


def _events(item: Item, r_final: Replay, clock: Clock) -> list[dict[str, Any]]:
    """The delivery row, then one row per applied link (and per resurfacing by time)."""
    state, due = item.initial()
    env = item.env
    rows: list[dict[str, Any]] = [{
        "message_id": item.id, "from_state": None, "to_state": str(state), "actor": env.sender,
        "tic": env.source_tic, "reason": "delivered", "timestamp": env.created_at or item.letter.ts,
    }]
    r = Replay(state, item.id, entered_ts=env.created_at, entered_tic=env.source_tic, due_tic=due)

    def resurfaced() -> dict[str, Any]:
        return {
            "message_id": item.id, "from_state": "DEFER", "to_state": "WAIT", "actor": "system:tic",
            "tic": r.due_tic, "reason": "due", "timestamp": r.due_time,
        }

    for link in r_final.applied:
        was = effective(r, link.tic, parse_time(link.ts))
        if was is not r.state:
            rows.append(resurfaced())
        apply_link(r, link)
        row = {
            "message_id": item.id, "from_state": str(was), "to_state": str(r.state), "actor": link.agent,
            "tic": link.tic, "reason": link.reason, "timestamp": link.ts,
        }
        if link.result_ref is not None:
            row["result_ref"] = link.result_ref
        rows.append(row)
    if effective(r, clock.tic, clock.now) is not r.state:
        rows.append(resurfaced())
    return rows


def _receipt(item: Item, r: Replay, state: State) -> dict[str, Any] | None:
    if state not in TERMINAL or not r.applied:
        return None
    link = r.applied[-1]
    return {
        "receipt_id": link.id, "message_id": item.id, "receipt_type": "ACK" if state is State.DONE else "NACK",
        "result_ref": link.result_ref, "completed_at_tic": link.tic, "created_at": link.ts, "notes": link.reason,
    }


@dataclass
class Plan:
    """Everything the view of one entity should hold, computed from the ledger alone."""

    items: dict[tuple[str, str], dict[str, bytes]]  # (folder, name) -> files
    states: dict[str, State]  # item id -> state at the clock
    drafts: dict[str, dict[str, bytes]]  # EMIT_<id> -> files (pending drafts)
    delivered: set[str]  # draft ids already sent: an EMIT entry of one is stale
    top: dict[str, bytes]  # INBOX.md and indexes/<file> -> bytes
    counts: dict[str, int]


def plan(book: InboxBook, clock: Clock, limits: Limits) -> Plan:
    items: dict[tuple[str, str], dict[str, bytes]] = {}
    states: dict[str, State] = {}
    registry: dict[str, Any] = {}
    events: list[dict[str, Any]] = []
    receipts: list[dict[str, Any]] = []
    counts = dict.fromkeys((*STATE_FOLDERS, OUTBOUND), 0)
    for iid in sorted(book.items):
        item = book.items[iid]
        r = book.replay_of(item)
        state = effective(r, clock.tic, clock.now)
        states[iid] = state
        folder, name = BUCKETS[state], f"{state}_{iid}"
        counts[folder] += 1
        items[(folder, name)] = _item_files(item, state)
        row = item_row(book, item, clock, limits)
        entry: dict[str, Any] = {
            "state": str(state), "filename": name, "subject": row["subject"], "sender": row["sender"],
            "priority": row["priority"], "envelope_type": item.env.envelope_type, "source_tic": row["source_tic"],
            "state_entered_at_tic": row["entered_tic"],
        }
        reminder = row["due_tic"] if row["due_tic"] is not None else item.env.reminder_tic
        if reminder is not None:
            entry["reminder_tic"] = reminder
        if item.env.defer_until_tic is not None:
            entry["defer_until_tic"] = item.env.defer_until_tic
        registry[iid] = entry
        events.extend(_events(item, r, clock))
        rec = _receipt(item, r, state)
        if rec is not None:
            receipts.append(rec)
    drafts = {f"EMIT_{d.id}": _draft_files(d.id, d.letter.data()) for d in book.pending_drafts()}
    counts[OUTBOUND] = len(drafts)
    inbox_md = (
        f"# INBOX: {book.entity}\n\n"
        "This folder is a dovecote view: a cache written from the entity's ledger by\n"
        "`dovecote view`. The ledger is the only authority; this folder can be deleted\n"
        "and rebuilt at any time. Files you drop here are never touched; items you move\n"
        "between folders are adopted by `dovecote import inbox-tree` when the lifecycle\n"
        "allows the move.\n\n"
        + "".join(f"- {k}: {v}\n" for k, v in counts.items())
    ).encode("utf-8")
    top = {
        INBOX_MD: inbox_md,
        f"{INDEXES}/inbox-registry.json": dump_json({"messages": registry, "idempotency_index": {}}),
        f"{INDEXES}/events.jsonl": _jsonl(events),
        f"{INDEXES}/receipts.jsonl": _jsonl(receipts),
    }
    return Plan(items, states, drafts, set(book.delivered), top, counts)


# -- writing entries atomically -----------------------------------------------------

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
try:
    _renameat2: Any = ctypes.CDLL(None, use_errno=True).renameat2
except (AttributeError, OSError):  # pragma: no cover - old libc or another OS
    _renameat2 = None


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one atomic step (Linux); False where that is not available."""
    if _renameat2 is None:
        return False
    return int(_renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)) == 0


def _discard(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    elif p.exists() or p.is_symlink():
        p.unlink()


def _tag() -> str:
    return f"{os.getpid()}.{threading.get_ident()}"


def write_entry(parent: Path, name: str, files: dict[str, bytes]) -> None:
    """Build the entry in a temp folder beside it, fsync it, then rename it into place."""
    ensure_dir(parent)
    tmp = parent / f".{name}.{_tag()}.tmp"
    _discard(tmp)
    tmp.mkdir()
    for fname in sorted(files):
        with open(tmp / fname, "xb") as f:
            f.write(files[fname])
            f.flush()
            os.fsync(f.fileno())
    fsync_dir(tmp)
    target = parent / name
    if not (target.exists() or target.is_symlink()):
        os.rename(tmp, target)
    elif _exchange(tmp, target):  # tmp now holds the old entry
        pass
    else:  # no atomic swap here: the entry is briefly absent, never half-written
        old = parent / f".{name}.{_tag()}.old"
        os.rename(target, old)
        os.rename(tmp, target)
        tmp = old
    fsync_dir(parent)
    _discard(tmp)


def remove_entry(path: Path) -> None:
    """Take an entry out of sight in one rename, then delete it."""
    gone = path.with_name(f".{path.name}.{_tag()}.old")
    os.rename(path, gone)
    fsync_dir(path.parent)
    _discard(gone)


def _entry_files(path: Path) -> dict[str, bytes] | None:
    """The regular files directly inside an entry folder; None if it is not a plain folder."""
    if path.is_symlink() or not path.is_dir():
        return None
    out: dict[str, bytes] = {}
    for p in path.iterdir():
        if p.is_symlink() or not p.is_file():
            return None
        out[p.name] = p.read_bytes()
    return out


@contextmanager
def _view_lock(dc: Dovecote, entity_id: str) -> Iterator[None]:
    """One writer per entity view at a time (two `view` runs must not swap each other's entries)."""
    path = dc.layout.views / ".locks" / f"{entity_id}.lock"
    ensure_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# -- the use case -------------------------------------------------------------------


@dataclass
class EntityView:
    entity: str
    path: str
    counts: dict[str, int]
    written: int = 0
    removed: int = 0
    unchanged: int = 0
    hand_moved: list[dict[str, Any]] = field(default_factory=list)
    unknown: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "entity": self.entity, "path": self.path, "counts": self.counts, "written": self.written,
            "removed": self.removed, "unchanged": self.unchanged, "hand_moved": self.hand_moved,
            "unknown": self.unknown,
        }


@dataclass
class ViewResult:
    tic: int | None
    tic_source: str
    entities: list[EntityView]

    def to_dict(self) -> dict[str, Any]:
        return {
            "clock": {"tic": self.tic, "source": self.tic_source},
            "entities": [e.to_dict() for e in self.entities],
        }


def owned_entries(vdir: Path) -> Iterator[tuple[str, str, Path, str]]:
    """(folder, name, path, id) of every entry in the view's owned name space."""
    for folder in (*STATE_FOLDERS, OUTBOUND):
        pattern = OWNED_DRAFT if folder == OUTBOUND else OWNED_ITEM
        for p in listing(vdir / folder):
            m = pattern.fullmatch(p.name)
            if m:
                yield folder, p.name, p, m.group(m.lastindex or 0)


def _sync_entity(dc: Dovecote, entity_id: str, clock: Clock, rebuild: bool) -> EntityView:
    vdir = view_dir(dc, entity_id)
    limits = dc.roster.limits
    p = plan(book_for(dc, entity_id), clock, limits)
    out = EntityView(entity_id, str(vdir), p.counts)
    held: set[str] = set()  # items a person moved: the view writes no second copy of them
    present: set[tuple[str, str]] = set()
    for folder, name, path, iid in owned_entries(vdir):
        rel = f"{folder}/{name}"
        if folder == OUTBOUND:
            if name in p.drafts:
                present.add((folder, name))
            elif iid in p.delivered and stamp_of(read_envelope(path))[0] == iid:
                remove_entry(path)  # the view's own copy of a draft that has since been sent
                out.removed += 1
            else:
                out.unknown.append({"path": rel, "id": iid})
            continue
        ledger = p.states.get(iid)
        if ledger is None:
            out.unknown.append({"path": rel, "id": iid})
            continue
        env = read_envelope(path)
        where = tree_state(folder, name, env)
        marked, stamp = stamp_of(env)
        own_output = marked == iid and where is stamp
        if (folder, name) in p.items and where is ledger:
            present.add((folder, name))
        elif where is ledger or own_output:
            remove_entry(path)  # a stale or misplaced copy of what the ledger says
            out.removed += 1
        else:
            out.hand_moved.append({"path": rel, "id": iid, "tree_state": str(where), "ledger_state": str(ledger)})
            held.add(iid)
    wanted = {**p.items, **{(OUTBOUND, n): files for n, files in p.drafts.items()}}
    for (folder, name), files in sorted(wanted.items()):
        iid = name.partition("_")[2]
        if (folder, name) not in present and iid in held:
            continue
        parent = vdir / folder
        if (folder, name) in present and not rebuild and _entry_files(parent / name) == files:
            out.unchanged += 1
            continue
        write_entry(parent, name, files)
        out.written += 1
    for rel, data in sorted(p.top.items()):
        target = vdir / rel
        try:
            same = not rebuild and target.read_bytes() == data
        except OSError:
            same = False
        if same:
            out.unchanged += 1
        else:
            write_atomic(target, data)
            out.written += 1
    return out


def view(
    dc: Dovecote,
    entity_id: str | None = None,
    *,
    current: int | None = None,
    now: datetime | None = None,
    rebuild: bool = False,
) -> ViewResult:
    """Write the folder view of one entity (or of every entity) from its ledger.

    ``rebuild`` removes and rewrites every owned entry even when it is already
    right (``verify`` uses it to prove the view comes from the ledger alone).
    Raises ``Refusal(unknown_entity)`` before writing anything.
    """
    who = [entity_id] if entity_id is not None else [e.id for e in dc.roster.entities]
    for e in who:
        entity_address(dc, e)
    tic, source = current_tic(dc, current)
    clock = Clock(tic, now or datetime.now(UTC))
    done = []
    for e in who:
        with _view_lock(dc, e):
            done.append(_sync_entity(dc, e, clock, rebuild))
    return ViewResult(tic, source, done)


def owned_digest(dc: Dovecote, entity_id: str) -> str:
    """SHA-256 over every owned file of the entity's view (path and bytes), for ``verify``."""
    vdir = view_dir(dc, entity_id)
    h = hashlib.sha256()
    paths = [vdir / INBOX_MD, *(vdir / INDEXES / f for f in INDEX_FILES)]
    for _, _, path, _ in owned_entries(vdir):
        paths.extend(sorted(q for q in path.rglob("*") if q.is_file()) if path.is_dir() else [path])
    for q in paths:
        try:
            data = q.read_bytes()
        except OSError:
            continue
        rel = q.relative_to(vdir).as_posix()
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


def render_text(result: ViewResult) -> str:
    """The summary every face prints."""
    lines = []
    for e in result.entities:
        where, who = one_line(e.path), one_line(e.entity)
        lines.append(f"{who}: {e.written} written, {e.removed} removed, {e.unchanged} unchanged -> {where}")
        for h in e.hand_moved:
            lines.append(f"  hand-moved {one_line(h['path'])} (tree {h['tree_state']}, ledger {h['ledger_state']})")
        for u in e.unknown:
            lines.append(f"  unknown {one_line(u['path'])} (no such item in this box)")
        if e.hand_moved:
            lines.append(f"  adopt the moves: dovecote import inbox-tree {where} --entity {who}")
    if not result.entities:
        lines.append("no entities in the roster")
    return "\n".join(lines) + "\n"

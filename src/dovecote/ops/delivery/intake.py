"""``intake``: envelope files dropped into ``<intake>/pending/`` delivered exactly once per recipient.

Law: every envelope that entered intake is, at every moment, in exactly one
folder: ``pending/`` (not yet settled), ``processed/`` (each of its letters is
durably in its recipient's box) or ``quarantine/`` (it can never be delivered;
its reason beside it and a ``violation`` letter in its sender's box). A
``rename`` moves it, so it is never in two and never in none. The ledger is
delivery truth: a file's letters are appended (fsynced) *before* the file
moves, and a letter is a function of the file alone, so a crash between the
two is healed by the next run, whose append is a no-op by content id.

One consumer per folder (notes B13.5: two vNext mailmen read one pending folder
with no claim step and delivered twice): a run holds ``<intake>/.lock`` (an
exclusive ``flock``) while it works, so a second mailman waits, then finds
nothing left (and would deliver nothing twice even without the lock).

Batches: the letters of a chunk of files are grouped by recipient and appended
with one fsync per box; the moves are then fsynced once per folder. A box that
cannot be written leaves its files in pending (an I/O error is transient and
retried, and the retry can only dedup); a file that can never be delivered
(invalid JSON, missing or bad fields, an unknown recipient or sender, a trust
violation) is quarantined once, never retried (notes B13.6).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from dovecote.errors import StoreError
from dovecote.ledger.jsonl import ensure_dir, fsync_dir, write_atomic
from dovecote.model.addresses import HOME, Address, entity
from dovecote.model.letters import canonical_line, format_ts, letter_id, sorted_deep
from dovecote.model.vnext_envelope import Rejected, from_envelope
from dovecote.model.vocab import ENGINE_AGENT
from dovecote.model.vocab_delivery import VIOLATION
from dovecote.ops.delivery.notify import passive_line
from dovecote.util import fileops
from dovecote.util.digests import sha256
from dovecote.util.osutil import lock_at

if TYPE_CHECKING:
    from dovecote.ops.context import Context

PENDING, PROCESSED, QUARANTINE = "pending", "processed", "quarantine"
FOLDERS = (PENDING, PROCESSED, QUARANTINE)
#: How many files one batch appends together (one fsync per recipient box per batch).
CHUNK = 10_000
REASON_SUFFIX = ".reason.json"


@dataclass
class IntakeRun:
    """What one run did: files seen, delivered (moved to processed/), quarantined, left pending."""

    dir: str
    seen: int = 0
    processed: int = 0
    letters_appended: int = 0
    letters_present: int = 0
    quarantined: list[dict[str, str]] = field(default_factory=list)
    left_pending: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dir": self.dir, "seen": self.seen, "processed": self.processed,
            "quarantined": len(self.quarantined), "left_pending": len(self.left_pending),
            "letters_appended": self.letters_appended, "letters_present": self.letters_present,
            "quarantine": self.quarantined, "pending": self.left_pending,
        }


def folder_of(ctx: Context, given: str | None) -> Path:
    """The intake folder: ``given`` (absolute, ``..`` taken out), else ``<home>/intake``."""
    return Path(os.path.normpath(Path(given).expanduser().absolute())) if given else ctx.layout.root / "intake"


def folders(ctx: Context) -> list[Path]:
    """Every intake folder of the home: its own, then each the roster lists (``intake --dir`` and the
    mailman's ``--dir`` list the folders they are given, so ``status`` counts them after a restart).
    A folder reached by two spellings (a link) is one folder: its envelopes are counted once."""
    seen: dict[str, Path] = {}
    for folder in (folder_of(ctx, None), *map(Path, ctx.roster.intake_dirs)):
        seen.setdefault(os.path.realpath(folder), folder)
    return list(seen.values())


def listed(ctx: Context, folder: Path) -> bool:
    """Whether ``folder`` is one of ``folders(ctx)`` (by where it really is)."""
    return os.path.realpath(folder) in {os.path.realpath(f) for f in folders(ctx)}


def envelope_files(folder: Path, which: str) -> list[str]:
    """The envelope files of one folder, by name (reason files and dot-files are not envelopes)."""
    try:
        names = os.listdir(folder / which)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if n.endswith(".json") and not n.endswith(REASON_SUFFIX)
                  and not n.startswith("."))


@contextmanager
def _consumer(folder: Path) -> Iterator[None]:
    """The one consumer of ``folder``: an exclusive flock on ``<folder>/.lock`` for the run
    (on the file at that name: ``lock_at``; a lock on one removed meanwhile keeps no one out)."""
    for name in FOLDERS:
        ensure_dir(folder / name)
    path = folder / ".lock"
    try:
        fd = lock_at(path, lambda: fileops.open_lock(path), fileops.close)
    except OSError as e:
        raise StoreError(f"cannot lock {path}: {e.strerror or e}") from e
    try:
        yield
    finally:
        fileops.close(fd)


def intake(ctx: Context, folder: Path, mode: str) -> IntakeRun:
    """Deliver every envelope in ``folder/pending`` (see the module docstring); ``mode`` is the notifier's."""
    run = IntakeRun(str(folder))
    with _consumer(folder):
        names = envelope_files(folder, PENDING)
        run.seen = len(names)
        for start in range(0, len(names), CHUNK):
            _batch(ctx, folder, names[start:start + CHUNK], mode, run)
    return run


def _known(ctx: Context) -> Any:
    ids = {e.id for e in ctx.roster.entities}
    return ids.__contains__


def _batch(ctx: Context, folder: Path, names: list[str], mode: str, run: IntakeRun) -> None:
    known = _known(ctx)
    by_box: dict[str, list[tuple[bytes, bool]]] = {}  # recipient -> (line, is a delivery)
    files_of_box: dict[str, set[str]] = {}
    bad: list[tuple[str, bytes, Rejected, dict[str, Any] | None]] = []
    pending = os.path.join(folder, PENDING)
    for name in names:
        try:
            raw = _read_file(os.path.join(pending, name))
        except FileNotFoundError:
            continue  # another tool took it away; nothing of it was delivered by us
        except OSError as e:
            if e.errno == errno.ELOOP:  # a link: its target (anywhere on the machine) is never read as an envelope
                bad.append((name, _link_text(os.path.join(pending, name)), Rejected(
                    "unsafe_path", "a symbolic link; intake never reads through one (its target was not opened)"),
                    None))
                continue
            run.left_pending.append({"file": name, "error": str(e.strerror or e)})
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            bad.append((name, raw, Rejected("invalid_json", f"not JSON: {e}"), None))
            continue
        got = from_envelope(obj, known)
        if isinstance(got, Rejected):
            bad.append((name, raw, got, obj if isinstance(obj, dict) else None))
            continue
        kept = presorted(got[0].get("envelope"))
        for letter in got:
            if kept is not None:
                letter["envelope"] = kept
            line = canonical_line(letter)
            r = str(letter.get("to") or _recipient(letter))
            lines = by_box.setdefault(r, [])
            lines.append((line, True))
            passive = passive_line(letter_id(line), str(letter["ts"]), mode)
            if passive is not None and letter.get("kind") != "message":
                lines.append((passive, False))
            files_of_box.setdefault(r, set()).add(name)
    failed: set[str] = set()
    for r, lines in by_box.items():
        try:
            with ctx.store.guarded(entity(r)) as held:
                done = held.append([line for line, _ in lines])
        except (StoreError, OSError) as e:
            failed |= files_of_box[r]
            for name in sorted(files_of_box[r]):
                run.left_pending.append({"file": name, "error": f"box {entity(r)}: {e}"})
            continue
        for (_, appended), (_, delivery) in zip(done, lines, strict=True):
            if not delivery:
                continue
            if appended:
                run.letters_appended += 1
            else:
                run.letters_present += 1
    moved = [n for names_ in files_of_box.values() for n in names_ if n not in failed]
    done_dir = os.path.join(folder, PROCESSED)
    for name in sorted(set(moved)):
        try:
            fileops.replace(os.path.join(pending, name), os.path.join(done_dir, name))
        except FileNotFoundError:
            continue  # another consumer settled it
        run.processed += 1
    for name, raw, why, obj in bad:
        if _quarantine(ctx, folder, name, raw, why, obj):
            run.quarantined.append({"file": name, "reason": why.reason, "detail": why.detail})
    if moved or bad:
        for which in FOLDERS:
            fsync_dir(folder / which)


def _read_file(path: str) -> bytes:
    """The bytes of a pending file, opened without following a symbolic link (``ELOOP`` if it is one)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _link_text(path: str) -> bytes:
    """What a link says (its own bytes, never its target's): what the quarantine hashes, so each link is told
    apart from the others."""
    try:
        return os.fsencode(os.readlink(path))
    except OSError:
        return b""


def presorted(value: object) -> orjson.Fragment | None:
    """The envelope a letter keeps, in its canonical form once (``canonical_line`` would sort it again, deeply,
    for each recipient: a third of intake's CPU); the bytes are the same, so are the letter ids."""
    return sorted_deep(value) if isinstance(value, dict) else None


def _recipient(letter: dict[str, Any]) -> str:
    rec = letter.get("recipient")
    return str(rec.get("entity_id")) if isinstance(rec, dict) else ""


def _move(folder: Path, name: str, to: str) -> bool:
    """Rename ``pending/name`` into ``to/``; False if it is gone (another consumer settled it)."""
    try:
        fileops.replace(folder / PENDING / name, folder / to / name)
    except FileNotFoundError:
        return False
    return True


def _quarantine(
    ctx: Context, folder: Path, name: str, raw: bytes, why: Rejected, obj: dict[str, Any] | None
) -> bool:
    """Quarantine one file once: the violation letter (deduplicated), the reason file, then the move."""
    digest = sha256(raw).hexdigest()
    sender = _sender(obj)
    box: Address = entity(sender) if sender is not None and ctx.roster.entity(sender) is not None else HOME
    envelope_id = obj.get("envelope_id") if obj is not None and isinstance(obj.get("envelope_id"), str) else None
    with ctx.store.guarded(box) as held:
        seen = any(
            letter.kind == VIOLATION and letter.data().get("sha256") == digest for letter in held.letters
        )
        if not seen:
            held.append([canonical_line({
                "ts": format_ts(ctx.now()), "agent": ENGINE_AGENT, "kind": VIOLATION, "to": sender,
                "file": name, "sha256": digest, "envelope_id": envelope_id, "reason": why.reason,
                "detail": why.detail,
                "text": f"dovecote quarantined envelope {name} ({why.reason}): {why.detail}. It will not be retried.",
            })])
    write_atomic(folder / QUARANTINE / (name + REASON_SUFFIX), orjson.dumps({
        "file": name, "reason": why.reason, "detail": why.detail, "sha256": digest, "violation_box": str(box),
        "quarantined_at": format_ts(ctx.now()),
    }, option=orjson.OPT_INDENT_2) + b"\n")
    return _move(folder, name, QUARANTINE)


def _sender(obj: dict[str, Any] | None) -> str | None:
    if obj is None:
        return None
    s = obj.get("from")
    if isinstance(s, str) and s:
        return s
    nested = obj.get("sender")
    if isinstance(nested, dict) and isinstance(nested.get("entity_id"), str):
        return str(nested["entity_id"])
    return None


def counts(folder: Path) -> dict[str, int]:
    """How many envelopes each intake folder holds now (a listing; never a write)."""
    return {which: len(envelope_files(folder, which)) for which in FOLDERS}

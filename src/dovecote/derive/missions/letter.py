"""The mission letter (m1nd mission_post, F2.5a): its schema, its validation, its phase graph and its line.

Pure: nothing here opens a file or reads a clock. Law (DESIGN 6):

* **Schema.** A letter is one ``MissionLetter``; unknown fields are refused
  (``unknown_field``). Two schema tags are accepted on input, dovecote's own
  ``dovecote-mission-v1`` and m1nd's ``m1nd-mission-letter-v0``.
* **Validation**, first failure wins, each with its keyword, in this order:
  schema_mismatch, (the schema's fields), invalid_mission_id, invalid_seq,
  absolute_path, invalid_phase, landed_law, incomplete_evidence.
* **The phase graph** is one table, ``TRANSITIONS``; a move missing from it is
  ``invalid_transition``. m1nd enforced none (any phase could follow any other).
* **The line.** A letter is written ``{kind, agent, ts, mission}`` with ``ts``
  its own ``updated_at``, so the same letter from the same agent is the same
  bytes (an identical replay dedups). An m1nd-schema letter keeps m1nd's layout
  exactly (its fields in m1nd's order, absent options omitted, ``synthetic``
  only when true), so its id is the id m1nd gives it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any

import msgspec
import orjson
from msgspec import Meta

from dovecote.errors import Refusal
from dovecote.model.ids import LETTER_ID_PATTERN, MISSION_ID_PATTERN
from dovecote.model.letters import canonical_line

SCHEMA_V1 = "dovecote-mission-v1"
SCHEMA_M1ND = "m1nd-mission-letter-v0"
SCHEMAS = (SCHEMA_V1, SCHEMA_M1ND)
MISSION_KIND = "mission"
MISSION_ID = re.compile(MISSION_ID_PATTERN)


class Phase(StrEnum):
    """Where a mission is. ``archived`` is terminal and only a human gesture posts it."""

    judging = "judging"
    executing = "executing"
    gate = "gate"
    review = "review"
    merge_wait = "merge_wait"
    landed = "landed"
    failed = "failed"
    archived = "archived"


P = Phase
#: The phase graph, the one table: phase -> the phases that may follow it. A chain starts at judging.
TRANSITIONS: dict[Phase | None, frozenset[Phase]] = {
    None: frozenset({P.judging}),
    P.judging: frozenset({P.executing, P.failed}),
    P.executing: frozenset({P.gate, P.failed}),
    P.gate: frozenset({P.review, P.merge_wait, P.executing, P.failed}),
    P.review: frozenset({P.executing, P.merge_wait, P.failed}),
    P.merge_wait: frozenset({P.landed, P.executing, P.failed}),
    P.landed: frozenset({P.archived}),
    P.failed: frozenset({P.executing, P.archived}),
    P.archived: frozenset(),
}


#: The phase whose head's receipt candidate a receipt import takes (``ops.missions.blocks.import_receipt``).
IMPORT_FROM = Phase.merge_wait


def gestures_by_phase() -> dict[str, str]:
    """Phase -> the human gesture a head there offers (``mission_archive`` or ``receipt_import``): archiving
    where the phase graph leads to archived, importing at ``IMPORT_FROM``. What the missions page offers."""
    offers = {p.value: "mission_archive" for p, nxt in TRANSITIONS.items() if p is not None and P.archived in nxt}
    return {**offers, IMPORT_FROM.value: "receipt_import"}


class Seat(StrEnum):
    oracle = "oracle"
    hand = "hand"


class Capability(StrEnum):
    build_runner = "build-runner"
    naming_runner = "naming-runner"
    loop_runner = "loop-runner"
    hand_runner = "hand-runner"
    review_runner = "review-runner"


class Decision(StrEnum):
    APPROVE = "APPROVE"
    CHANGE = "CHANGE"
    REJECT = "REJECT"


class ReceiptType(StrEnum):
    test = "test"
    structural = "structural"
    runtime = "runtime"
    review = "review"
    handoff = "handoff"
    spec = "spec"


class _Part(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A part of the letter: frozen, keyword-only, unknown fields refused (as m1nd's deny_unknown_fields)."""


Int32 = Annotated[int, Meta(ge=-(2**31), le=2**31 - 1)]
U64 = Annotated[int, Meta(ge=0, le=2**53 - 1)]


class Verdict(_Part, frozen=True, kw_only=True):
    decision: Decision
    gist: str


class Gate(_Part, frozen=True, kw_only=True):
    command: str
    exit_status: Int32
    artifact_hash: str


class Scope(_Part, frozen=True, kw_only=True):
    boundary_version: U64
    contract_version: U64


class Evidence(_Part, frozen=True, kw_only=True):
    command: str | None = None
    cwd: str | None = None
    exit_status: Int32 | None = None
    started_at: str | None = None
    ended_at: str | None = None
    artifact_hash: str
    stdout_excerpt: str | None = None
    evidence_refs: list[str]


class Candidate(_Part, frozen=True, kw_only=True):
    block_id: str
    type: ReceiptType
    scope: Scope
    evidence: Evidence


class MissionReceipt(_Part, frozen=True, kw_only=True):
    imported: bool
    store_version: U64


class MissionLetter(_Part, frozen=True, kw_only=True):
    """One mission letter; the fields in m1nd's order (the m1nd line is written in it)."""

    schema: str
    mission_id: str
    mission_seq: U64
    prev_letter_id: Annotated[str, Meta(pattern=f"^{LETTER_ID_PATTERN}$")] | None = None
    block_id: Annotated[str, Meta(min_length=1)]
    brain_ref: Annotated[str, Meta(min_length=1)]
    seat: Seat
    runner_id: str | None = None
    capability: Capability
    phase: str
    verdict: Verdict | None = None
    gate: Gate | None = None
    receipt_candidate: Candidate | None = None
    receipt: MissionReceipt | None = None
    packet_ref: str | None = None
    tokens_total: U64 = 0
    started_at: str
    updated_at: str
    synthetic: bool = False


def validate(data: object) -> MissionLetter:
    """``data`` (the letter as JSON gives it) as a valid ``MissionLetter``; else the first failure's Refusal."""
    if not isinstance(data, Mapping):
        raise Refusal("invalid_json", f"a mission letter is a JSON object, not {type(data).__name__}")
    tag = data.get("schema")
    if tag not in SCHEMAS:
        raise Refusal("schema_mismatch", f"schema mismatch: expected {' or '.join(SCHEMAS)}, found {tag!r}")
    try:
        m = msgspec.convert(data, MissionLetter, strict=True)
    except msgspec.ValidationError as e:
        raise _decode_refusal(str(e)) from None
    if not MISSION_ID.fullmatch(m.mission_id):
        raise Refusal("invalid_mission_id", f"invalid mission_id {m.mission_id!r}: expected msn_<12hex>")
    if m.mission_seq < 1:
        raise Refusal("invalid_seq", f"invalid mission_seq {m.mission_seq}: a chain starts at 1")
    if (m.mission_seq == 1) != (m.prev_letter_id is None):
        raise Refusal("invalid_seq", f"mission_seq {m.mission_seq}: seq 1 names no prev_letter_id, every later "
                                     "letter names the head it follows")
    where = f"brain_ref is {m.brain_ref!r}" if looks_absolute(m.brain_ref) else None
    where = where or absolute_at(msgspec.to_builtins(m), "")
    if where is not None:
        raise Refusal("absolute_path", f"the public contract carries no absolute paths: {where}")
    _phase_rules(m)
    return m


def _decode_refusal(text: str) -> Refusal:
    what, _, where = text.partition(" - at `$")
    field = where.rstrip("`").lstrip(".")
    if text.startswith("Object contains unknown field"):
        return Refusal("unknown_field", f"mission letter: {what.split('`')[1]} is not a field of the schema"
                       + (f" (at {field})" if field else ""))
    if text.startswith("Object missing required field"):
        return Refusal("missing_field", f"mission letter: {what.split('`')[1]} is required"
                       + (f" (at {field})" if field else ""))
    return Refusal("invalid_field", f"mission letter: {field}: {what}" if field else f"mission letter: {what}")


_SPLIT = re.compile(r"[\s=\"'(),;|&<>]+")
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
_HOME_DIR = re.compile(r"~([A-Za-z0-9._-]*/|$)")


def looks_absolute(text: str) -> bool:
    """m1nd's test for ``brain_ref``: a leading ``/``, ``~``, ``\\`` or a drive (``X:\\``, ``X:/``)."""
    return text.startswith(("/", "~", "\\")) or bool(_DRIVE.match(text))


def absolute_word(word: str) -> bool:
    """A word that is an absolute path: ``/x``, ``\\x``, ``~``, ``~/x``, ``~user/x``, ``X:\\x``, ``X:/x``.

    Narrower than ``looks_absolute`` (a gist may say "~5 tests"), and applied to
    every word of every text, so a command's ``cd /home/me`` is caught too.
    """
    return word.startswith(("/", "\\")) or bool(_DRIVE.match(word)) or bool(_HOME_DIR.match(word))


def absolute_at(value: object, path: str) -> str | None:
    """Where in ``value`` an absolute path is (a word of any text in it), if anywhere."""
    if isinstance(value, str):
        bad = next((w for w in _SPLIT.split(value) if w and absolute_word(w)), None)
        return None if bad is None else f"{path or 'letter'} has {bad!r}"
    if isinstance(value, dict):
        for k, v in value.items():
            found = absolute_at(v, f"{path}.{k}" if path else k)
            if found:
                return found
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = absolute_at(v, f"{path}[{i}]")
            if found:
                return found
    return None


def _phase_rules(m: MissionLetter) -> None:
    """Per-phase rules: invalid_phase, then landed_law, then incomplete_evidence."""
    if m.phase not in Phase.__members__:
        raise Refusal("invalid_phase", f"invalid_phase: {m.phase!r} is not a phase ({', '.join(Phase)})")
    if m.phase == P.executing and m.verdict is not None:
        raise Refusal("invalid_phase", "invalid_phase: an executing letter carries no verdict")
    if m.phase == P.landed:
        r = m.receipt
        why = ("no receipt anchor is present" if r is None else "receipt.imported is false" if not r.imported
               else "receipt.store_version is not a real (>=1) version" if r.store_version < 1 else None)
        if why:
            raise Refusal("landed_law", f"landed_law: a landed letter needs an imported receipt: {why}")
    if m.phase == P.merge_wait:
        g = m.gate
        missing = ("gate" if g is None else "gate.command" if not g.command.strip()
                   else "gate.artifact_hash" if not g.artifact_hash.strip()
                   else f"a zero gate.exit_status (it is {g.exit_status})" if g.exit_status != 0 else None)
        if missing:
            raise Refusal("incomplete_evidence", f"incomplete_evidence: merge_wait needs {missing}")
    if m.gate is not None and not m.gate.artifact_hash.strip():
        raise Refusal("incomplete_evidence", "incomplete_evidence: a gate needs artifact_hash")
    c = m.receipt_candidate
    if c is not None:
        if not c.evidence.artifact_hash.strip():
            raise Refusal("incomplete_evidence", "incomplete_evidence: a receipt candidate needs artifact_hash")
        if not c.evidence.evidence_refs:
            raise Refusal("incomplete_evidence", "incomplete_evidence: a receipt candidate needs evidence_refs")


def check_transition(head: Phase | None, phase: Phase) -> None:
    """Refuse ``invalid_transition`` unless the table lets ``phase`` follow ``head`` (None: no chain yet)."""
    allowed = TRANSITIONS[head]
    if phase not in allowed:
        after = f"after {head.value}" if head is not None else "as the first letter of a chain"
        may = ", ".join(sorted(allowed)) or "nothing (it is terminal)"
        raise Refusal("invalid_transition", f"{phase.value} cannot come {after}; it may be followed by: {may}")


def _fields_of(value: Any) -> dict[str, Any]:
    """A Struct as m1nd serializes it: its fields in order, absent options and ``synthetic: false`` left out."""
    out: dict[str, Any] = {}
    for f in msgspec.structs.fields(value):
        v = getattr(value, f.name)
        if v is None or (f.name == "synthetic" and v is False):
            continue
        out[f.name] = _fields_of(v) if isinstance(v, msgspec.Struct) else msgspec.to_builtins(v)
    return out


def mission_fields(m: MissionLetter) -> dict[str, Any]:
    """The letter's fields as written inside its line."""
    return _fields_of(m)


def line_of(m: MissionLetter, agent: str) -> bytes:
    """The ledger line of ``m`` posted by ``agent`` (m1nd's layout for an m1nd-schema letter)."""
    fields = _fields_of(m)
    if m.schema == SCHEMA_M1ND:
        return orjson.dumps({"kind": MISSION_KIND, "agent": agent, "ts": m.updated_at, "mission": fields})
    return canonical_line({"kind": MISSION_KIND, "agent": agent, "ts": m.updated_at, "mission": fields})

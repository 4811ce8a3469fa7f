"""Mission letters for the tests: the m1nd test vector, and the next letter of a chain."""

from __future__ import annotations

from typing import Any

import pytest

#: The m1nd seq-1 test vector (reference notes section 9): agent-a posting it gives fb0197c00008.
VECTOR: dict[str, Any] = {
    "schema": "m1nd-mission-letter-v0", "mission_id": "msn_0123456789ab", "mission_seq": 1, "block_id": "sb_alpha",
    "brain_ref": "repo-a", "seat": "hand", "capability": "build-runner", "phase": "judging", "tokens_total": 0,
    "started_at": "2026-07-09T00:00:00Z", "updated_at": "2026-07-09T00:00:00Z",
}
VECTOR_ID = "fb0197c00008"
VECTOR_AGENT = "agent-a"

#: The person's gesture passphrase in the tests (``keyed`` sets it); what they type at each human gesture.
PASSPHRASE = "kestrel over the weir at dusk"

GATE = {"command": "make test", "exit_status": 0, "artifact_hash": "sha256:ab12"}


def candidate(block: str = "sb_alpha", boundary: int = 1) -> dict[str, Any]:
    return {"block_id": block, "type": "test", "scope": {"boundary_version": boundary, "contract_version": 1},
            "evidence": {"command": "make test", "exit_status": 0, "artifact_hash": "sha256:ab12",
                         "evidence_refs": ["log:run-1"]}}


def letter(seq: int = 1, prev: str | None = None, phase: str = "judging", **more: Any) -> dict[str, Any]:
    """A letter of the vector's mission at ``seq`` (its time moves with the seq, so each is new bytes)."""
    d = {**VECTOR, "mission_seq": seq, "phase": phase, "updated_at": f"2026-07-09T00:{seq:02d}:00Z", **more}
    if prev is not None:
        d["prev_letter_id"] = prev
    return {k: v for k, v in d.items() if v is not None}


def for_phase(phase: str, seq: int, prev: str | None, **more: Any) -> dict[str, Any]:
    """A valid letter for ``phase``: merge_wait carries a zero gate and a candidate, landed a receipt."""
    extra: dict[str, Any] = {}
    if phase in ("gate", "merge_wait"):
        extra["gate"] = GATE
    if phase == "merge_wait":
        extra["receipt_candidate"] = candidate()
    if phase == "landed":
        extra["receipt"] = {"imported": True, "store_version": 1}
    return letter(seq, prev, phase, **{**extra, **more})


def keyed(dc: Any) -> Any:
    """``dc`` with the person's gesture passphrase set (``PASSPHRASE``), hashed at scrypt's least cost: the cost
    is stored beside the hash, so every check of it is cheap too (the default's slowness is test_gestures')."""
    from dovecote.ops.missions import gestures

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(gestures.COST, "n", 2**10)
        dc.gesture_key_set(PASSPHRASE)
    return dc

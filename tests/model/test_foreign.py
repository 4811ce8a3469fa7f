"""The intake normalizers (``dovecote.model.foreign``): what another tool wrote, as the letter dovecote files."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dovecote.model.foreign import VOLATILE, drop_letter, foreign_letter
from dovecote.model.letters import canonical_line, letter_id

KEYS = st.sampled_from(["state", "state_entered_at_tic", "nack_reason", "defer_reason", "completion_note",
                        "expires_at_tic", "created_at", "reminder_tic", "x-custom"])
SCALARS = st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=8))
ENVELOPES = st.fixed_dictionaries(
    {"lifecycle": st.dictionaries(KEYS, SCALARS, max_size=6)},
    optional={
        "sender": st.fixed_dictionaries({"entity_id": st.sampled_from(["ent_a", "ent_b"])}),
        "provenance": st.fixed_dictionaries({"created_at": st.sampled_from(["2026-07-05T10:00:00Z", "garbage", None])}),
        "content": st.fixed_dictionaries({"subject": st.text(max_size=10)}),
        "extra": SCALARS,
    },
)


@given(ENVELOPES)
def test_a_foreign_envelope_keeps_every_key_but_the_volatile_lifecycle_ones(env: dict[str, Any]) -> None:
    obj = foreign_letter(env)
    assert obj["kind"] == "message"
    assert set(obj["lifecycle"]) == set(env["lifecycle"]) - set(VOLATILE)
    assert all(obj[k] == v for k, v in env.items() if k != "lifecycle")
    assert foreign_letter(obj) == obj, "normalizing twice changes nothing (a re-import adds nothing)"


@given(ENVELOPES)
def test_a_foreign_envelope_moved_between_states_is_the_same_letter(env: dict[str, Any]) -> None:
    moved = {**env, "lifecycle": {**env["lifecycle"], "state": "DONE", "completion_note": "moved"}}
    assert letter_id(canonical_line(foreign_letter(moved))) == letter_id(canonical_line(foreign_letter(env)))


@given(st.text(min_size=1, max_size=20), st.booleans())
def test_a_bare_drop_is_built_from_its_name_and_files_only(base: str, is_dir: bool) -> None:
    files = [{"ref": "sha256:" + "0" * 64, "name": "a.txt"}]
    one = drop_letter("ent_a", base, is_dir, files)
    assert one == drop_letter("ent_a", base, is_dir, files), "no clock, no path: the same drop, the same letter"
    assert one["content"]["artifact_refs"] == ["sha256:" + "0" * 64]
    assert one["recipient"]["entity_id"] == "ent_a" and "ts" not in one


def test_a_drop_name_with_a_tic_records_it() -> None:
    assert drop_letter("ent_a", "report-tic-42.md", False, [])["provenance"]["source_tic"] == 42
    assert drop_letter("ent_a", "fix_the_build.md", False, [])["content"]["subject"] == "fix the build"

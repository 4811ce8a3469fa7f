"""Fuzz: what agents and people hand dovecote whole: mission letters, hook payloads, roster files.

- A mission letter (a valid one with fields dropped, retyped or added, or any JSON value) is validated into a
  letter or refused with a keyword; one that is posted reads back as the letter validation made of it, and a
  refused post writes nothing.
- A hook's stdin (any bytes, any JSON object) never raises out of the hook but a refusal or the payload's own
  "not a JSON object"; nothing stored is lost.
- A roster file (any TOML dovecote's keys could hold, or a valid file with bytes changed) parses or is refused
  with a keyword (``invalid_config``, ``invalid_name``, ...); a home with a roster that parses answers its reads.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from dovecote import verbs
from dovecote.cli import hookrun
from dovecote.derive.missions import letter as ml
from dovecote.errors import Refusal
from dovecote.model.results import builtins
from dovecote.roster import config as roster_mod
from fuzzhelpers import DEPTHS, ODD, TEXT, VALUE, assert_only_grew, dumps, fuzz, mutated, refused_or_done
from helpers import add_project, open_home, snapshot
from mailhelpers import ENTITY, SENDER, mail_home, send

LETTER: dict[str, Any] = {
    "schema": "dovecote-mission-v1", "mission_id": "msn_00000000000a", "mission_seq": 1, "block_id": "sb_alpha",
    "brain_ref": "atlas", "seat": "hand", "capability": "build-runner", "phase": "judging", "synthetic": True,
    "started_at": "2026-07-09T00:00:00Z", "updated_at": "2026-07-09T00:00:00Z",
    "gate": {"command": "make test", "exit_status": 0, "artifact_hash": "sha256:ab12"},
}
PHASES = st.sampled_from([p.value for p in ml.Phase])
LETTERS = st.one_of(
    mutated(LETTER),
    st.builds(lambda d, phase: {**d, "phase": phase}, mutated(LETTER), PHASES),
    VALUE,
)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with a project (atlas), its block, and mail (so hooks have an inbox to read)."""
    tmp = tmp_path_factory.mktemp("fuzzpayloads")
    dc = mail_home(tmp)
    add_project(dc, tmp, "atlas")
    dc.block_add(verbs.BlockAdd(block_id="sb_alpha", project="atlas"))
    send(dc, "read me", priority="urgent")
    return tmp


def _copy(base: Path, to: Path) -> Any:
    if to.exists():
        shutil.rmtree(to)
    shutil.copytree(base, to, symlinks=True)
    return open_home(to / "owner" / ".dovecote")


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_mission_letter_is_validated_or_refused_with_a_keyword(depth: str) -> None:
    def check(data: Any) -> None:
        got = refused_or_done(lambda: ml.validate(data))
        if not isinstance(got, Refusal):
            line = ml.line_of(got, "agent-a")
            assert ml.validate(json.loads(line)["mission"]) == got  # what is written validates back the same

    fuzz(depth, "mission letters", LETTERS, check)


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_posted_mission_letter_reads_back_and_a_refused_one_writes_nothing(base: Path, tmp_path: Path,
                                                                             depth: str) -> None:
    def check(data: Any) -> None:
        dc = _copy(base, tmp_path / "h")
        before = snapshot(dc.layout.root)
        posted = refused_or_done(lambda: builtins(dc.mission_post(verbs.decode(verbs.MissionPost, {"letter": data}),
                                                         actor=SENDER)))
        after = assert_only_grew(before, dc.layout.root)
        if isinstance(posted, Refusal):
            # no letter written (a guarded section may leave the empty ledger its lock opened)
            assert {k: v for k, v in after.items() if k.endswith(".jsonl") and v} == {
                k: v for k, v in before.items() if k.endswith(".jsonl") and v}
            return
        chain = builtins(dc.mission(verbs.Mission(mission_id=posted["mission_id"])))["chain"]
        assert chain[-1]["mission"] == ml.mission_fields(ml.validate(data))

    fuzz(depth, "mission posts", LETTERS, check)


# -- hook payloads ----------------------------------------------------------------------------------------------

PAYLOAD = {"session_id": "s1", "cwd": "/tmp", "hook_event_name": "Stop", "stop_hook_active": False,
           "tool_name": "mcp__x__y", "tool_response": {"is_error": True, "content": "boom"}, "prompt": "hi"}
STDIN = st.one_of(
    mutated(PAYLOAD).map(dumps), VALUE.map(dumps), st.binary(max_size=60),
    st.sampled_from([b"", b"{", b"[]", b'{"session_id":"\xff"}', b'{"session_id":"\\ud800"}', b"[" * 3000]),
)
KINDS = st.sampled_from(["session-start", "prompt", "stop", "post-tool"])
AGENT_ARGS = st.sampled_from([[], ["--agent", "codex"], ["--agent", "claude-code"], ["--watch", "mcp__,x"]])


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_hook_payload_never_raises_but_a_refusal(base: Path, tmp_path: Path, depth: str) -> None:
    def check(case: tuple[str, list[str], bytes]) -> None:
        kind, extra, stdin = case
        dc = _copy(base, tmp_path / "h")
        before = snapshot(dc.layout.root)
        try:
            hookrun.read_payload(stdin)
        except ValueError:  # not JSON, or not an object: the hook says so on stderr and the session goes on
            return
        out = refused_or_done(lambda: hookrun.answer(str(dc.layout.root), [kind, "--entity", ENTITY, *extra], stdin))
        assert_only_grew(before, dc.layout.root)
        if isinstance(out, str) and "--agent" in extra and "codex" in extra:
            assert out == "" or json.loads(out) is not None  # codex reads hook output as strict JSON

    fuzz(depth, "hook payloads", st.tuples(KINDS, AGENT_ARGS, STDIN), check)


# -- roster files -----------------------------------------------------------------------------------------------

def toml(value: Any) -> str:
    """A TOML literal for ``value`` (strings as JSON strings, which TOML basic strings mostly are)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return '""'
    if isinstance(value, (int, float)):
        return repr(value) if value == value else "nan"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(str(k))} = {toml(v)}" for k, v in value.items()) + "}"


FIELD = st.one_of(ODD, VALUE, st.lists(TEXT, max_size=3))
SECTIONS = st.fixed_dictionaries({}, optional={
    "owner": st.fixed_dictionaries({}, optional={"home": FIELD, "roots": FIELD}),
    "markers": st.fixed_dictionaries({}, optional={"foreign": FIELD}),
    "notifier": st.fixed_dictionaries({}, optional={"mode": FIELD | st.sampled_from(["none", "session-inject"]),
                                                    "command": FIELD, "timeout": FIELD}),
    "projects": st.lists(st.fixed_dictionaries({"name": FIELD | st.sampled_from(["atlas", "../x", "a/b"]),
                                                "root": FIELD | st.sampled_from(["/tmp/r", "relative", "/"])},
                                               optional={"aliases": FIELD, "box_in_repo": FIELD}), max_size=3),
    "entities": st.lists(st.fixed_dictionaries({"id": FIELD | st.sampled_from(["ent_a", "dovecote:engine"])}),
                         max_size=3),
    "store": st.fixed_dictionaries({}, optional={"url": FIELD | st.just("postgresql://u:secret@h/db")}),
}) | st.dictionaries(TEXT, FIELD, max_size=2)


def _render(doc: dict[str, Any]) -> bytes:
    return "\n".join(f"{json.dumps(k)} = {toml(v)}" for k, v in doc.items()).encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def roster_text(base: Path) -> bytes:
    return (base / "owner" / ".dovecote" / "config.toml").read_bytes()


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_roster_file_parses_or_is_refused_with_a_keyword(base: Path, roster_text: bytes, tmp_path: Path,
                                                            depth: str) -> None:
    flipped = st.tuples(st.integers(0, len(roster_text) - 1), st.binary(max_size=4)).map(
        lambda c: roster_text[: c[0]] + c[1] + roster_text[c[0] + 1:])

    def check(text: bytes) -> None:
        got = refused_or_done(lambda: roster_mod.parse(text))
        if isinstance(got, Refusal):  # invalid_config, or the rule a name or URL breaks (invalid_name, ...)
            return
        dc = _copy(base, tmp_path / "h")
        (dc.layout.root / "config.toml").write_bytes(text)
        dc = refused_or_done(lambda: open_home(dc.layout.root))
        if not isinstance(dc, Refusal):
            refused_or_done(dc.sweep)
            refused_or_done(dc.entities)
            refused_or_done(lambda: builtins(dc.inbox(verbs.Inbox(entity_id=ENTITY))))

    fuzz(depth, "roster files", st.one_of(SECTIONS.map(_render), flipped), check)

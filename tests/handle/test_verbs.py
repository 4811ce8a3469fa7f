"""The typed verbs: one decoder, the right refusal for every bad input, schemas with docs and ranges.

What MCP and REST will receive is a plain dict; ``verbs.decode`` is the only way
it becomes a verb's input, and the handle runs every Struct a library caller
builds through the same checks (``verbs.checked``), so nothing out of range
reaches a ledger from any face.
"""

from __future__ import annotations

import enum
import json
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote import verbs
from dovecote.derive.lifecycle import LINK_KINDS
from dovecote.errors import REASONS, Refusal
from dovecote.model import vocab
from dovecote.model.results import builtins
from dovecote.ops.search.query import DEFAULT_LIMIT
from helpers import new_home, snapshot

MAX = verbs.MAX_INT

#: A smallest valid input of every verb.
MINIMAL: dict[type[verbs.Verb], dict[str, Any]] = {
    verbs.Report: {"tool": "seek", "class": "bug", "what": "w"},
    verbs.Distribute: {},
    verbs.Sweep: {},
    verbs.Box: {"address": "home"},
    verbs.Doctor: {},
    verbs.Verify: {},
    verbs.Message: {"recipient": "ent_b", "subject": "s"},
    verbs.OutboxSend: {},
    verbs.Move: {"kind": "claim", "entity_id": "ent_b", "ref": "abcd"},
    verbs.Inbox: {},
    verbs.Show: {"entity_id": "ent_b", "ref": "abcd"},
    verbs.View: {},
    verbs.ImportInboxTree: {"path": "/tmp/x"},
    verbs.ImportVnext: {"path": "/tmp/x"},
    verbs.ImportAgentMail: {"path": "/tmp/x"},
    verbs.Search: {"query": "deploy"},
    verbs.StaleCheck: {},
    verbs.Organize: {"entity_id": "ent_b"},
    verbs.Wait: {"entity_id": "ent_b"},
    verbs.ProjectAdd: {"name": "atlas", "root": "/srv/atlas"},
    verbs.ProjectRemove: {"name": "atlas"},
    verbs.ProjectList: {},
    verbs.EntityAdd: {"entity_id": "ent_b"},
    verbs.EntityRemove: {"entity_id": "ent_b"},
    verbs.EntityList: {},
    verbs.TokenIssue: {"entity_id": "ent_b"},
    verbs.TokenList: {},
    verbs.TokenRevoke: {"token_id": "0123456789ab"},
    verbs.HooksInstall: {"agent": "codex", "entity_id": "ent_b"},
    # -- delivery (issue 9) --
    verbs.Send: {"recipient": "ent_b", "subject": "s"},
    verbs.Intake: {},
    verbs.Mailman: {},
    verbs.Ack: {"entity_id": "ent_b", "ref": "abcd"},
    verbs.Trackers: {},
    verbs.PresenceBeat: {"agent": "ent_b"},
    verbs.Presence: {},
    verbs.Status: {},
    # case intelligence (issue 10)
    verbs.Receipt: {"answers": ["0123456789ab"], "disposition": "moot"},
    verbs.Cases: {},
    verbs.Case: {"fingerprint": "fp:north/crash"},
    verbs.Sentinels: {},
    verbs.Claims: {},
    verbs.MonitorAdd: {"name": "nightly", "expect": "tool=backup", "every": "1d"},
    verbs.Monitors: {},
    verbs.HookEvent: {"event": "post-tool", "payload": {"session_id": "s1", "tool_name": "mcp__x"}},
    # missions (issue 11)
    verbs.BlockAdd: {"block_id": "sb_alpha", "project": "repo-a"},
    verbs.BlockBump: {"block_id": "sb_alpha"},
    verbs.Blocks: {},
    verbs.MissionPost: {"letter": {"schema": "dovecote-mission-v1"}},
    verbs.Missions: {},
    verbs.Mission: {"mission_id": "msn_0123456789ab"},
    verbs.MissionArchive: {"mission_id": "msn_0123456789ab"},
    verbs.LeaseTake: {"entity_id": "ent_b", "globs": ["src/**"]},
    verbs.LeaseRenew: {"entity_id": "ent_b"},
    verbs.LeaseRelease: {"entity_id": "ent_b"},
    verbs.Leases: {},
    verbs.LeaseCheck: {},
    verbs.LeaseGuardInstall: {},
    verbs.ReceiptImport: {"mission_id": "msn_0123456789ab"},
}

ALL = sorted(set(verbs.VERBS.values()), key=lambda v: v.__name__)


def refused(verb: type[verbs.Verb], data: object) -> Refusal:
    with pytest.raises(Refusal) as e:
        verbs.decode(verb, data)
    return e.value


def test_every_verb_has_a_minimal_example_that_decodes() -> None:
    assert set(MINIMAL) == set(ALL)
    for verb, data in MINIMAL.items():
        assert isinstance(verbs.decode(verb, data), verb)


def test_decode_gives_the_typed_values_and_defaults() -> None:
    m = verbs.decode(verbs.Message, {"recipient": "ent_b", "subject": "s", "priority": "high", "expires_at_tic": 7})
    assert m.priority is vocab.Priority.high and m.category is vocab.Category.notification
    assert m.trust_level is vocab.TrustLevel.peer and m.expires_at_tic == 7 and m.artifact_paths == ()
    r = verbs.decode(verbs.Report, {"tool": "t", "class": "triage", "what": "w", "answers": ["0123456789ab"]})
    assert r.klass is vocab.ReportClass.triage
    assert r.letter() == {"tool": "t", "class": "triage", "what": "w", "answers": ["0123456789ab"]}


@pytest.mark.parametrize(
    ("verb", "data", "keyword", "names"),
    [
        (verbs.Message, {"subject": "s"}, "missing_field", "recipient"),
        (verbs.Message, {"recipient": "ent_b", "subject": "s", "to": "x"}, "unknown_field", "to"),
        (verbs.Message, {"recipient": "ent_b", "subject": 5}, "invalid_field", "subject"),
        (verbs.Message, {"recipient": "ent_b", "subject": "s", "expires_at_tic": -1}, "invalid_field",
         "expires_at_tic"),
        (verbs.Message, {"recipient": "ent_b", "subject": "s", "reminder_tic": MAX + 1}, "invalid_field",
         "reminder_tic"),
        (verbs.Message, {"recipient": "ent_b", "subject": "s", "current_tic": True}, "invalid_field", "current_tic"),
        (verbs.Message, {"recipient": "ent_b", "subject": "s", "current_tic": "3"}, "invalid_field", "current_tic"),
        (verbs.Message, {"recipient": "ent_b", "subject": "s", "current_tic": 1.5}, "invalid_field", "current_tic"),
        (verbs.Message, {"recipient": "ent_b", "subject": "s", "trust_level": "god"}, "invalid_field", "trust_level"),
        (verbs.Message, {"recipient": "ent\x1b[31m", "subject": "s"}, "invalid_name", "recipient"),
        (verbs.Message, {"recipient": "ent_b", "subject": "s", "sender": "../x"}, "invalid_name", "sender"),
        (verbs.Message, {"recipient": "ent_b", "subject": "s\udcff"}, "invalid_field", "subject"),
        (verbs.Message, {"recipient": "ent_b", "subject": "s", "artifact_paths": ["a", 1]}, "invalid_field",
         "artifact_paths"),
        (verbs.Move, {"kind": "archive", "entity_id": "e", "ref": "abcd"}, "invalid_field", "kind"),
        (verbs.Move, {"kind": "claim", "entity_id": "e", "ref": "abcd", "until_tic": 5}, "invalid_field", "until_tic"),
        (verbs.Move, {"kind": "defer", "entity_id": "e", "ref": ""}, "invalid_field", "ref"),
        (verbs.Inbox, {"direction": "sideways"}, "invalid_field", "direction"),
        (verbs.Inbox, {"entity_id": "a\x00b"}, "invalid_name", "entity id"),
        (verbs.Search, {"query": "x", "limit": 0}, "invalid_field", "limit"),
        (verbs.Search, {"query": "  "}, "missing_field", "query"),
        (verbs.Box, {"address": "nowhere"}, "invalid_address", "nowhere"),
        (verbs.Report, {"tool": "t", "class": "", "what": "w"}, "missing_field", "class"),
        (verbs.Report, {"tool": "t", "class": "bug", "what": "w", "answers": ["nope"]}, "invalid_field", "answers"),
        (verbs.ProjectAdd, {"name": "a", "root": "/r", "aliases": ["ok", "b/c"]}, "invalid_name", "alias"),
        (verbs.StaleCheck, {"emit_signals": 1}, "invalid_field", "emit_signals"),
        # -- delivery (issue 9) --
        (verbs.Send, {"subject": "s"}, "missing_field", "recipient"),
        (verbs.Send, {"recipient": "b", "to_all": True, "subject": "s"}, "invalid_field", "not both"),
        (verbs.Send, {"recipient": "b", "subject": "s", "type": "task"}, "missing_field", "work_item_id"),
        (verbs.Send, {"recipient": "b", "subject": "s", "type": "memo"}, "invalid_field", "type"),
        (verbs.Send, {"recipient": "b", "subject": "s", "type": "task", "work_item_id": "w", "parent_id": "p"},
         "invalid_field", "parent_id"),
        (verbs.Send, {"recipient": "b", "subject": "s", "type": "response", "work_item_id": "w",
                      "task_type": "research"}, "invalid_field", "task_type"),
        (verbs.Send, {"recipient": "b", "subject": "s", "risk": "high"}, "invalid_field", "risk"),
        (verbs.Send, {"recipient": "b", "subject": "s", "type": "task", "work_item_id": "w",
                      "escalation_target": "../x"}, "invalid_name", "escalation target"),
        (verbs.Send, {"recipient": "b", "subject": "s", "type": "task", "work_item_id": "w", "ack_timeout": 0},
         "invalid_field", "ack_timeout"),
        (verbs.Ack, {"entity_id": "b", "ref": "abcd", "status": "maybe"}, "invalid_field", "status"),
        (verbs.Mailman, {"interval": 0}, "invalid_field", "interval"),
        (verbs.Mailman, {"notify_mode": "telepathy"}, "invalid_field", "notify_mode"),
        (verbs.Presence, {"active_minutes": 0}, "invalid_field", "active_minutes"),
        (verbs.Status, {"limit": 0}, "invalid_field", "limit"),
    ],
)
def test_each_bad_input_gets_its_keyword_naming_the_field(
    verb: type[verbs.Verb], data: dict[str, Any], keyword: str, names: str
) -> None:
    r = refused(verb, data)
    assert r.reason == keyword
    assert names in r.detail


def test_an_enum_refusal_lists_the_vocabulary() -> None:
    r = refused(verbs.Message, {"recipient": "ent_b", "subject": "s", "priority": "asap"})
    assert "(one of: urgent, high, normal, low)" in r.detail


@pytest.mark.parametrize("data", [None, [], "x", 5, ["recipient"]])
def test_input_that_is_not_an_object_is_invalid_json(data: object) -> None:
    assert refused(verbs.Message, data).reason == "invalid_json"


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


@pytest.mark.parametrize("verb", ALL, ids=lambda v: v.__name__)
@settings(max_examples=60, deadline=None)
@given(extra=st.dictionaries(st.text(max_size=12), JSONISH, max_size=4), drop=st.booleans())
def test_any_mapping_decodes_or_is_refused_with_a_registered_keyword(
    verb: type[verbs.Verb], extra: dict[str, Any], drop: bool
) -> None:
    """Whatever arrives, the answer is the Struct or a ``Refusal``: never a msgspec error or a crash."""
    fields = {f.encode_name for f in msgspec.structs.fields(verb)}
    base = dict(MINIMAL[verb])
    if drop and base:
        base.pop(next(iter(base)))
    data = {**base, **extra}
    try:
        out = verbs.decode(verb, data)
    except Refusal as r:
        assert r.reason in REASONS
        if set(extra) - fields:
            assert r.reason in ("unknown_field", "invalid_field", "invalid_name", "missing_field",
                                "invalid_address"), r
    else:
        assert isinstance(out, verb) and not set(data) - fields


@settings(max_examples=100, deadline=None)
@given(
    tic=st.integers(min_value=-(2**70), max_value=2**70),
    priority=st.sampled_from(vocab.PRIORITIES),
    subject=st.text(min_size=1, max_size=40).filter(str.strip),
)
def test_a_message_round_trips_and_tics_are_refused_exactly_outside_the_range(
    tic: int, priority: str, subject: str
) -> None:
    data = {"recipient": "ent_b", "subject": subject, "priority": priority, "expires_at_tic": tic}
    if 0 <= tic <= MAX:
        m = verbs.decode(verbs.Message, data)
        assert verbs.decode(verbs.Message, msgspec.to_builtins(m)) == m
        assert verbs.checked(m) == m
    else:
        assert refused(verbs.Message, data).reason == "invalid_field"
        built = verbs.Message(recipient="ent_b", subject=subject, expires_at_tic=tic)  # msgspec checks nothing here
        with pytest.raises(Refusal, match="invalid_field"):
            verbs.checked(built)


def test_a_struct_built_in_python_is_checked_like_a_decoded_one() -> None:
    with pytest.raises(Refusal, match="invalid_field: move: until_tic"):
        verbs.checked(verbs.Move(kind=vocab.MoveKind.defer, entity_id="e", ref="abcd", until_tic=-3))
    with pytest.raises(Refusal, match="invalid_name"):
        verbs.Message(recipient="a/b", subject="s")  # names are checked at construction too
    with pytest.raises(Refusal, match="invalid_field"):
        verbs.checked(verbs.Search(query="q", limit={1, 2}))  # type: ignore[arg-type]
    assert verbs.checked(verbs.ImportInboxTree(path=Path("/tmp/x"))).path == "/tmp/x"  # type: ignore[arg-type]


def test_a_decoded_value_is_checked_once_and_a_built_one_every_time() -> None:
    decoded = verbs.decode(verbs.Message, {"recipient": "ent_b", "subject": "s"})
    assert verbs.checked(decoded) is decoded  # a face decodes once; the handle's check does not redo it
    built = verbs.Message(recipient="ent_b", subject="s")
    again = verbs.checked(built)
    assert again == built and again is not built  # built in Python: checked through the decoder
    bad = msgspec.structs.replace(decoded, expires_at_tic=-1)  # a copy of a decoded value is a new value
    with pytest.raises(Refusal, match="invalid_field"):
        verbs.checked(bad)


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.text(max_size=6) | st.integers() | st.none(),
                    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
                    max_leaves=8),
       st.sampled_from(["\ud800", "\udfff", "a\udc80b"]))
def test_a_lone_surrogate_anywhere_is_refused_with_its_path(value: object, bad: str) -> None:
    assert verbs.decode(verbs.Message, {"recipient": "ent_b", "subject": "s", "body": "b"}).body == "b"
    for data, where in (({"recipient": "ent_b", "subject": bad}, "subject"),
                        ({"recipient": "ent_b", "subject": "s", "x": [value, {"k": bad}]}, "x[1].k"),
                        ({"recipient": "ent_b", "subject": "s", bad: value}, None)):
        r = refused(verbs.Message, data)
        assert r.reason == "invalid_field" and "not valid UTF-8" in r.detail, r
        if where is not None:
            assert where in r.detail


def test_library_callers_are_range_checked_and_nothing_is_written(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    dc.add_entity(verbs.EntityAdd(entity_id="ent_a"))
    dc.add_entity(verbs.EntityAdd(entity_id="ent_b"))
    item = dc.send(verbs.Message(sender="ent_a", recipient="ent_b", subject="s", current_tic=1)).id
    before = snapshot(dc.layout.root)
    bad: list[Any] = [
        lambda: dc.send(verbs.Message(sender="ent_a", recipient="ent_b", subject="s", expires_at_tic=2**60)),
        lambda: dc.draft(verbs.Message(sender="ent_a", recipient="ent_b", subject="s", priority="asap")),
        lambda: dc.move(verbs.Move(kind="defer", entity_id="ent_b", ref=item, until_tic=-1)),
        lambda: dc.move(verbs.Move(kind="claim", entity_id="ent_b", ref=item, current_tic=MAX + 1)),
        lambda: builtins(dc.inbox(verbs.Inbox(entity_id="ent_b", direction="up"))),
        lambda: builtins(dc.stale_check(verbs.StaleCheck(current_tic=-5, emit_signals=True))),
        lambda: dc.report([{"tool": "t", "class": "bug", "what": "w", "when": "now"}]),
        lambda: dc.add_project(verbs.ProjectAdd(name="p", root="/srv/p", aliases=("a\nb",))),
        lambda: dc.send(verbs.Message(sender="ent_a", recipient="ent_b\x1b[2J", subject="s")),
        lambda: dc.send(verbs.Message(sender="ent_a", recipient="ent_b", subject="bad \udcff bytes")),
        lambda: dc.move(verbs.Move(kind="seen", entity_id="ent_b", ref=item, reason="\udc80")),
        lambda: dc.add_entity(verbs.EntityAdd(entity_id="ent\u202eevil")),
    ]
    for call in bad:
        with pytest.raises(Refusal):
            call()
    assert snapshot(dc.layout.root) == before


def _props(s: dict[str, Any], verb: type[verbs.Verb]) -> dict[str, Any]:
    return s["$defs"][verb.__name__]


@pytest.mark.parametrize("verb", ALL, ids=lambda v: v.__name__)
def test_every_schema_is_json_schema_shaped_with_a_doc_on_every_field(verb: type[verbs.Verb]) -> None:
    s = verbs.schema(verb)
    json.dumps(s)  # plain JSON
    assert s["$ref"] == f"#/$defs/{verb.__name__}"
    obj = _props(s, verb)
    assert obj["type"] == "object" and obj["additionalProperties"] is False
    assert obj["description"]  # the verb's docstring
    props = obj.get("properties", {})
    assert set(props) == {f.encode_name for f in msgspec.structs.fields(verb)}
    assert set(obj.get("required", [])) <= set(props)
    for name, p in props.items():
        assert p.get("description"), f"{verb.__name__}.{name} has no description"
    for ref in json.dumps(s).split('"$ref": "#/$defs/')[1:]:
        assert ref.split('"')[0] in s["$defs"]


def test_schemas_carry_the_ranges_and_the_vocabularies() -> None:
    s = verbs.schema(verbs.Message)
    props = _props(s, verbs.Message)["properties"]
    tic = next(a for a in props["expires_at_tic"]["anyOf"] if a.get("type") == "integer")
    assert (tic["minimum"], tic["maximum"]) == (0, MAX)
    assert sorted(s["$defs"]["Priority"]["enum"]) == sorted(vocab.PRIORITIES)  # msgspec lists them sorted
    assert sorted(s["$defs"]["TrustLevel"]["enum"]) == sorted(vocab.TRUST_LEVELS)
    assert props["recipient"]["pattern"].startswith("^[A-Za-z0-9]")
    report = verbs.schema(verbs.Report)
    assert "class" in _props(report, verbs.Report)["properties"]
    assert sorted(report["$defs"]["Symptom"]["enum"]) == sorted(vocab.SYMPTOMS)


def test_each_vocabulary_tuple_is_its_enum() -> None:
    for e, values in ((vocab.Priority, vocab.PRIORITIES), (vocab.Category, vocab.CATEGORIES),
                      (vocab.TrustLevel, vocab.TRUST_LEVELS), (vocab.Direction, vocab.DIRECTIONS),
                      (vocab.ReportClass, vocab.REPORT_CLASSES), (vocab.Symptom, vocab.SYMPTOMS),
                      (vocab.MisdeliveryKind, vocab.MISDELIVERY_KINDS), (vocab.Disposition, vocab.DISPOSITIONS)):
        assert tuple(m.value for m in typing.cast(type[enum.Enum], e)) == values


def test_the_moves_are_lifecycle_links_and_each_has_its_options() -> None:
    assert {k.value for k in vocab.MoveKind} <= LINK_KINDS
    assert {k.value for k in vocab.MoveKind} == LINK_KINDS - {"resurface"}, "every move of the table, but time's"
    assert set(verbs.MOVE_OPTIONS) == set(vocab.MoveKind)
    options = {"until_tic", "until", "reason", "result_ref"}
    assert all(o <= options for o in verbs.MOVE_OPTIONS.values())


def test_the_search_limit_default_is_the_ops_default() -> None:
    assert verbs.Search(query="q").limit == DEFAULT_LIMIT


def test_every_field_doc_is_one_line() -> None:
    for verb in ALL:
        for f in msgspec.structs.fields(verb):
            text = verbs.doc(verb, f.name)
            assert text and "\n" not in text, (verb.__name__, f.name)

"""Every handle method that takes a verb also takes the verb's fields as arguments (``handle_core.fields``).

The methods are found from the handle itself (each public method whose first parameter is a verb), so a
method added without the decorator fails here; a few calls then run for real through the ops they reach.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import msgspec
import pytest

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote, EntityRow
from dovecote.model.results import builtins
from dovecote.verbs import EntityAdd, Inbox, Message
from dovecote.verbs.arguments import order
from helpers import new_home


def _verb_methods() -> list[tuple[str, list[type[verbs.Verb]]]]:
    """(name, the verbs its first parameter names) for every public method of the handle that takes a verb."""
    found = []
    for name in sorted(dir(Dovecote)):
        method = getattr(Dovecote, name)
        if name.startswith("_") or not inspect.isfunction(method):
            continue
        params = list(inspect.signature(method).parameters.values())[1:]  # after self
        if not params or params[0].kind is not inspect.Parameter.POSITIONAL_ONLY:
            continue
        named = [getattr(verbs, n) for n in re.findall(r"\bverbs\.([A-Z]\w*)", str(params[0].annotation))]
        if named:
            found.append((name, named))
    return found


METHODS = _verb_methods()


def test_the_handle_s_verb_methods_are_all_found() -> None:
    names = {name for name, _ in METHODS}
    assert {"inbox", "send", "report", "search", "mission_archive", "token_issue", "status", "ack"} <= names
    assert len(names) >= 50, names


def _snake(verb: type[verbs.Verb]) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", verb.__name__).lower()


@pytest.fixture(scope="module")
def one_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dovecote, Path]:
    """One home for every wrong call below: none of them reaches the home."""
    where = tmp_path_factory.mktemp("fields")
    return new_home(where), where


@pytest.mark.parametrize(("name", "named"), METHODS, ids=[name for name, _ in METHODS])
def test_a_field_of_the_wrong_type_is_a_type_error_naming_the_verb_and_the_field(
    one_home: tuple[Dovecote, Path], name: str, named: list[type[verbs.Verb]]
) -> None:
    dc, tmp_path = one_home
    before = sorted((p.relative_to(tmp_path), p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    fields = order(named[-1])
    with pytest.raises(TypeError) as e:
        getattr(dc, name)(1j)  # a complex number: no field of any verb takes one
    said = str(e.value)
    first = f": {fields[0]}: " if fields else " takes at most 0 fields"
    assert any(said.startswith(_snake(v) + first) for v in named), said
    if fields:  # by name too: every field given, the first one looked at (the last) named
        with pytest.raises(TypeError, match=rf"^\w+: {re.escape(fields[-1])}: "):
            getattr(dc, name)(**{f: 1j for f in reversed(fields)})
    with pytest.raises(TypeError, match=r"has no field 'no_such_field'"):
        getattr(dc, name)(no_such_field=1)
    after = sorted((p.relative_to(tmp_path), p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    assert after == before, "a wrong call wrote something"


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    dc = new_home(tmp_path)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    return dc


def test_the_natural_calls_build_the_same_verb_as_a_verb_instance(dc: Dovecote) -> None:
    dc.add_entity("ent_c", "a third")  # EntityAdd's fields in order: entity_id, role
    assert dc.entities()[2] == EntityRow(id="ent_c", role="a third")
    sent = dc.send(recipient="ent_b", subject="hi", sender="ent_a", body="one")
    positional = dc.send("ent_b", "hello", "two", sender="ent_a")  # Send's fields in Message's order
    assert sent.to == positional.to == "ent_b" and sent.sender == "ent_a"
    assert builtins(dc.inbox("ent_b")) == builtins(dc.inbox(Inbox(entity_id="ent_b")))
    items = builtins(dc.inbox("ent_b", include_terminal=True))["items"]
    assert sorted(i["id"] for i in items) == sorted([sent.id, positional.id])
    assert dc.inbox(entity_id="ent_b", now=None).counts["inbound"] == 2  # now= is the method's own
    assert builtins(dc.show("ent_b", sent.id))["item"]["id"] == sent.id
    assert dc.search("hello", entity_id="ent_b").count == 1
    assert dc.draft(Message(recipient="ent_a", sender="ent_b", subject="a draft")).to == "ent_a"  # whole, as before


def test_a_report_takes_its_fields_by_attribute_or_json_name_and_a_list_as_before(dc: Dovecote) -> None:
    one = dc.report(tool="seek", klass="bug", what="empty result")
    assert dc.report("seek", "bug", "empty result") == [(one[0][0], False)]  # the same letter again
    assert dc.report(**{"tool": "seek", "class": "bug", "what": "other"})[0][1]
    assert dc.report([{"tool": "seek", "class": "bug", "what": "third"}])[0][1]


def test_a_wrong_call_is_a_type_error_and_a_refused_value_the_faces_refusal(dc: Dovecote) -> None:
    with pytest.raises(TypeError, match=r"^inbox: entity_id: Expected `str \| null`, got `int`$"):
        dc.inbox(5)
    with pytest.raises(TypeError, match=r"^search: limit: Expected `int`, got `str`$"):
        builtins(dc.search("hi", limit="3"))
    with pytest.raises(TypeError, match=r"^inbox: entity_id: Expected `str \| null`, got `bytes`$"):
        dc.inbox(b"ent_b")  # never quietly base64
    with pytest.raises(TypeError, match=r"^show: missing field ref$"):
        dc.show("ent_b")
    with pytest.raises(TypeError, match=r"^inbox: entity_id was given twice$"):
        dc.inbox("ent_b", entity_id="ent_b")
    with pytest.raises(TypeError, match=r"^inbox takes at most 4 fields as arguments"):
        dc.inbox("ent_b", None, "inbound", False, True)
    with pytest.raises(TypeError, match=r"^mission_archive has no field 'gesture_token'"):
        dc.mission_archive("msn_0123456789ab", gesture_token="x")
    with pytest.raises(Refusal) as r:
        builtins(dc.search("hi", limit=0))
    assert r.value.reason == "invalid_field" and "search: limit" in r.value.detail
    with pytest.raises(Refusal) as r:
        dc.token_issue("ent_b", "root")
    assert r.value.reason == "invalid_field" and "role" in r.value.detail
    with pytest.raises(Refusal) as r:
        dc.mission_archive("msn_0123456789ab")  # a human gesture stays one: fields carry none
    assert r.value.reason in {"human_gesture_required", "unknown_mission"}


def test_positional_fields_follow_the_verb_s_declared_order() -> None:
    assert order(verbs.Send)[:3] == ("recipient", "subject", "body")
    assert order(verbs.Report)[:3] == ("tool", "klass", "what")
    assert set(order(verbs.Send)) == set(verbs.Send.__struct_fields__)
    for verb in verbs.VERBS.values():
        assert sorted(order(verb)) == sorted(f.name for f in msgspec.structs.fields(verb))

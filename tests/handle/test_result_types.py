"""The handle answers typed values, and the schemas the faces publish are generated from those types.

A public method of ``Dovecote`` (and a module function of the library API) declares a frozen ``msgspec.Struct``
(or a list of them) as its answer, never ``dict[str, Any]``: the CLI's ``--json``, REST bodies and MCP's
``structuredContent`` are that value's one encoding (``results.builtins``; ``test_verb_json`` pins the bytes).
"""

from __future__ import annotations

import inspect

import msgspec

from dovecote.handle import api
from dovecote.handle.api import Acked, Cases, Delivery, Dovecote, InboxView, ReceiptFiled, SentAnswer, Shown, WaitResult
from dovecote.mcp import schemas
from dovecote.mcp.tools import TOOLS, Tool, Views
from dovecote.model.results import Result, builtins


def _plain(fn: object) -> bool:
    return "dict[str, Any]" in str(inspect.signature(fn).return_annotation)  # type: ignore[arg-type]


def test_no_public_method_of_the_handle_answers_plain_data() -> None:
    public = {n: f for n, f in inspect.getmembers(Dovecote, inspect.isfunction) if not n.startswith("_")}
    assert len(public) > 70 and {n for n, f in public.items() if _plain(f)} == set()


def test_no_function_of_the_library_api_answers_plain_data() -> None:
    """``copy_store``, ``migrate_store``, ``init``...: the library's own functions (``handle.api`` and the
    home's, ``handle.home``, which ``api`` names), as the handle's methods."""
    from dovecote.handle import home

    own = {n: f for module in (api, home) for n, f in inspect.getmembers(module, inspect.isfunction)
           if f.__module__ == module.__name__ and not n.startswith("_")}
    assert {"copy_store", "migrate_store", "init"} <= set(own) and {n for n, f in own.items() if _plain(f)} == set()


def test_every_typed_answer_the_handle_names_is_a_frozen_result() -> None:
    for name in api.RESULTS:
        kind = getattr(api, name)
        assert issubclass(kind, Result) and kind.__struct_config__.frozen, name


def test_a_result_encodes_as_its_fields_in_order_and_an_unset_one_is_left_out() -> None:
    class Row(Result, frozen=True):
        b: int
        a: str | None
        c: int | msgspec.UnsetType = msgspec.UNSET

    assert builtins(Row(2, None)) == {"b": 2, "a": None}
    assert list(builtins([Row(1, "x", 3)])[0]) == ["b", "a", "c"]
    assert msgspec.json.encode(Row(2, None)) == b'{"b":2,"a":null}'


def test_mcp_output_schemas_of_typed_answers_come_from_their_types() -> None:
    (cases, *_) = TOOLS["cases"].views  # type: ignore[union-attr]
    assert cases.output == schemas.output(Cases) == {
        "type": "object", "required": ["cases", "count", "kindless", "recurrence", "unreachable"]}
    assert TOOLS["receipt"].output == schemas.output(ReceiptFiled) == {
        "type": "object", "required": ["answers", "appended", "box", "fingerprint", "id"]}


def test_mcp_output_schemas_are_generated_never_listed_by_hand() -> None:
    """The mail tools' output schemas are their answers' types' (an inbox's ``schema`` tag and a show's body were
    missing from the hand lists); a send's is what a message's ``Delivery`` and a work send's ``Sent`` both write."""
    assert not [n for n in vars(schemas) if n.isupper() and isinstance(getattr(schemas, n), dict)]
    assert TOOLS["inbox"].output == schemas.output(InboxView) and "schema" in TOOLS["inbox"].output["required"]
    assert TOOLS["show"].output == schemas.output(Shown) and "body" in TOOLS["show"].output["required"]
    assert TOOLS["wait"].output == schemas.output(WaitResult)
    assert TOOLS["ack"].output == schemas.output(Acked)
    assert TOOLS["send"].output == schemas.output(Delivery, SentAnswer) == {
        "type": "object", "required": ["appended", "from", "id", "thread_id", "to"]}


def _tools() -> list[Tool]:
    return [v for t in TOOLS.values() for v in (t.views if isinstance(t, Views) else (t,))]


def test_every_tool_has_a_generated_output_schema_naming_keys_its_answer_always_carries() -> None:
    """No tool answers a bare object: each one's schema is its result types' always-written keys."""
    for tool in _tools():
        assert tool.results and all(issubclass(k, Result) for k in tool.results), tool.name
        assert tool.output == schemas.output(*tool.results) and tool.output["required"], tool.name
    for group in (t for t in TOOLS.values() if isinstance(t, Views)):
        assert group.output == schemas.output(*(k for v in group.views for k in v.results)), group.name


def test_a_tools_result_type_is_the_type_its_call_answers() -> None:
    """A call annotated with its typed answer names the tool's result type (so the schema cannot describe another
    type); the two that answer plain data (sweep and box, the lazy reads) name their REST route's type,
    which the route's schema test validates their answers against."""
    plain = {}
    for tool in _tools():
        answer = tool.call.__annotations__["return"]
        if answer == "dict[str, Any]":
            plain[tool.name] = [k.__name__ for k in tool.results]
        else:
            assert answer == " | ".join(k.__name__ for k in tool.results), (tool.name, answer)
    assert plain == {"sweep": ["SweepAnswer"], "box": ["BoxAnswer"]}

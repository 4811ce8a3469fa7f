"""One table of limits (``verbs.limits``): every text, list and object field of every verb is bounded, and one
over its bound is ``too_large`` on every face, nothing written.

The walk reads each verb's fields as msgspec sees them (``msgspec.inspect``), so a field added without a bound
fails here, whichever verb it is on. A name's bound is ``addresses.check_name``'s (its schema says so); a field
that takes an object whole (a hook's payload, a mission letter) bounds how many keys it has, and the free-form JSON
in it is bounded by the request (``MAX_BODY``) and by ``MAX_DEPTH``. A pattern that fixes a string's length (a
letter id's) is its bound.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import msgspec
import msgspec.inspect as mi
import pytest
from starlette.testclient import TestClient
from test_verbs import MINIMAL

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle.api import Principal
from dovecote.http.app import create_app
from dovecote.http.rest import SweepParams
from dovecote.mcp.server import Face
from dovecote.mcp.tools import TOOLS
from dovecote.model.addresses import check_name
from dovecote.model.envelope import SUBJECT_MAX
from dovecote.roster.config import Limits
from dovecote.verbs import limits
from helpers import run_cli, snapshot
from serverhelpers import ENTITY, SENDER, assert_error_shape, served_home

#: Every input a face decodes: the verbs, and the REST routes' own parameters where no verb fits.
INPUTS: list[type[msgspec.Struct]] = sorted({*verbs.VERBS.values(), SweepParams}, key=lambda v: v.__name__)


def _fixed(pattern: str | None) -> bool:
    """Whether ``pattern`` bounds a string's length itself (anchored, no open repetition: a letter id's)."""
    return pattern is not None and pattern.startswith("^") and pattern.endswith("$") and not re.search(
        r"[*+]|\{\d*,\}", pattern)


def _unbounded(t: Any, where: str, bound: bool = False) -> list[str]:
    """The places under ``t`` that hold a string, a list or an object without a bound (``bound``: the
    enclosing Metadata's schema gives one, as a name's does)."""
    if isinstance(t, mi.Metadata):
        schema = t.extra_json_schema or {}
        return _unbounded(t.type, where, bound or "maxLength" in schema)
    if isinstance(t, mi.UnionType):
        return [u for x in t.types for u in _unbounded(x, where, bound)]
    if isinstance(t, mi.StrType):
        return [] if t.max_length is not None or bound or _fixed(t.pattern) else [where]
    if isinstance(t, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
        return ([] if t.max_length is not None else [where]) + _unbounded(t.item_type, f"{where}[]")
    if isinstance(t, mi.DictType):
        mine = [] if t.max_length is not None else [where]
        if isinstance(t.value_type, mi.AnyType):  # free-form JSON: the request's size and MAX_DEPTH bound it
            return mine
        return mine + _unbounded(t.key_type, f"{where} key") + _unbounded(t.value_type, f"{where}{{}}")
    if isinstance(t, mi.AnyType):
        return [where]
    return []


@pytest.mark.parametrize("verb", INPUTS, ids=lambda v: v.__name__)
def test_every_text_list_and_object_field_of_every_verb_has_a_bound(verb: type[msgspec.Struct]) -> None:
    info = mi.type_info(verb)
    assert isinstance(info, mi.StructType)
    missing = [u for f in info.fields for u in _unbounded(f.type, f.name)]
    assert not missing, f"{verb.__name__}: no bound in verbs.limits for {missing}"


def test_a_names_bound_is_the_tables_and_check_name_holds_it() -> None:
    assert verbs.schema(verbs.EntityAdd)["$defs"]["EntityAdd"]["properties"]["entity_id"]["maxLength"] == limits.NAME
    check_name("n" * limits.NAME)
    with pytest.raises(Refusal) as e:
        check_name("n" * (limits.NAME + 1))
    assert e.value.reason == "invalid_name"


def test_the_table_agrees_with_the_rules_that_hold_the_same_bound_further_in() -> None:
    """A body's bound is the roster's default hard limit (which may lower it), a subject's the envelope's (which
    also cuts an imported one when shown): one number each, however many rules hold it."""
    assert Limits().body_hard_limit == limits.BODY
    assert limits.MAX_BODY <= limits.BODY
    assert SUBJECT_MAX == limits.SUBJECT


def _over(t: Any) -> Any:
    """A value one over the bound of ``t`` (None where ``t`` is bounded otherwise: a pattern, a name)."""
    if isinstance(t, mi.Metadata):
        return _over(t.type)
    if isinstance(t, mi.UnionType):
        return next((v for x in t.types if (v := _over(x)) is not None), None)
    if isinstance(t, mi.StrType) and t.max_length is not None and t.pattern is None:
        return "a" * (t.max_length + 1)
    if isinstance(t, (mi.ListType, mi.VarTupleType)) and t.max_length is not None:
        return ["0123456789ab"] * (t.max_length + 1)
    if isinstance(t, mi.DictType) and t.max_length is not None:
        return {f"k{n}": "v" for n in range(t.max_length + 1)}
    return None


@pytest.mark.parametrize("verb", sorted(MINIMAL, key=lambda v: v.__name__), ids=lambda v: v.__name__)
def test_one_over_any_fields_bound_is_refused_too_large(verb: type[verbs.Verb]) -> None:
    info = mi.type_info(verb)
    assert isinstance(info, mi.StructType)
    for f in info.fields:
        over = _over(f.type)
        if over is None:
            continue
        with pytest.raises(Refusal) as e:
            verbs.decode(verb, {**MINIMAL[verb], f.encode_name: over})
        assert e.value.reason == "too_large", (verb.__name__, f.name, e.value)
        assert f.encode_name in e.value.detail


#: What the hostile test sent, field by field: REST and MCP stored each of them.
HOSTILE: dict[str, Any] = {
    "thread_id": "t" * 500_000,
    "idempotency_key": "k" * 100_000,
    "constraints": ["c"] * 100_000,
}


def _ledgers(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in snapshot(root).items() if k.endswith(".jsonl")}


@pytest.mark.files_only
@pytest.mark.parametrize("field", sorted(HOSTILE))
def test_an_over_long_field_is_too_large_on_rest_mcp_and_the_cli_and_nothing_is_written(
        tmp_path: Path, field: str) -> None:
    dc = served_home(tmp_path)
    token = dc.token_issue(SENDER, "operator").token
    fields = {"subject": "s", "body": "b", field: HOSTILE[field]}
    if field == "constraints":
        fields |= {"type": "task", "work_item_id": "w1"}
    before = _ledgers(dc.layout.root)
    with TestClient(create_app(dc)) as c:
        r = c.post(f"/api/v1/entities/{ENTITY}/messages", json=fields, headers={"Authorization": f"Bearer {token}"})
    assert_error_shape(r, 413, "too_large")

    async def call() -> Any:
        return await Face(dc).call(TOOLS["send"], Principal(SENDER, "operator", local=True),
                                   {"recipient": ENTITY, **fields})

    with pytest.raises(Refusal) as e:
        anyio.run(call)
    assert e.value.reason == "too_large"
    option = {"thread_id": ["--thread-id", "t" * (limits.ID + 1)],
              "idempotency_key": ["--idempotency-key", "k" * (limits.ID + 1)],
              "constraints": ["--type", "task", "--work-item-id", "w1", "--constraint", "c" * (limits.TEXT + 1)]}
    cli = run_cli(tmp_path, "send", "--recipient", ENTITY, "--sender", SENDER, "--subject", "s", *option[field],
                  home=dc.layout.root)
    assert cli.returncode == 2 and cli.stderr.startswith(b"Error: too_large:"), cli.stderr
    assert _ledgers(dc.layout.root) == before

"""Fuzz: MCP tool arguments through the SDK's client, over the in-process transport.

Arguments come from each tool's own ``inputSchema`` (every property given a value of its type, of another
type, or a hostile string; required ones sometimes dropped; unknown keys added) and from garbage (names of no
tool, arguments that are not objects' worth of anything). One connection per caller takes every call in turn:
each answer is a result or ``isError`` whose text starts with a keyword of ``errors.REASONS``; no text carries
a traceback; the connection still answers at the end; and no ledger lost a byte.

Left out: ``sentinels`` (it runs the probe commands receipts carry, by design: a fuzz would run made-up
commands on this machine) and a ``wait`` longer than no time (it blocks by design; its timeout is 0 here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from dovecote.errors import REASONS
from dovecote.handle.api import Dovecote, Principal
from dovecote.mcp.server import build
from dovecote.mcp.tools import TOOLS
from fuzzhelpers import COUNTS, DEPTHS, ODD, TEXT, VALUE, assert_only_grew
from helpers import snapshot
from mailhelpers import ENTITY, SENDER, mail_home, send

SKIPPED = {"sentinels"}
HOSTILE_STRINGS = st.sampled_from(["", "../../etc/passwd", "/etc/passwd", "a\x00b", "x" * 5000, "\u202e\x1b[2J",
                                   "dovecote:engine", "entity:../x", "ENT_BUILDER", "ent_builder\u200b", "msn_../"])


def for_schema(schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values a client could send for ``schema``: mostly of its type, sometimes of any other, or hostile text."""
    if "enum" in schema:
        typed: st.SearchStrategy[Any] = st.sampled_from(schema["enum"])
    elif schema.get("type") == "string":
        typed = TEXT | HOSTILE_STRINGS | st.sampled_from([ENTITY, SENDER, "home", f"entity:{ENTITY}", "atlas"])
    elif schema.get("type") == "integer":
        typed = st.integers(-(2**70), 2**70) | st.integers(-2, 200)
    elif schema.get("type") == "number":
        typed = st.floats(allow_nan=False) | st.integers(-5, 5)
    elif schema.get("type") == "boolean":
        typed = st.booleans()
    elif schema.get("type") == "array" and depth < 2:
        typed = st.lists(for_schema(schema.get("items", {}), depth + 1), max_size=3)
    elif schema.get("type") == "object" and depth < 2:
        typed = arguments(schema, depth + 1)
    elif "anyOf" in schema and depth < 2:
        typed = st.one_of([for_schema(s, depth + 1) for s in schema["anyOf"]])
    else:
        typed = VALUE
    return st.one_of(typed, typed, typed, ODD, VALUE)


def arguments(schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    props = schema.get("properties", {})
    required = set(schema.get("required", ()))
    fields = {k: for_schema(v, depth) for k, v in props.items()}
    return st.builds(
        lambda must, may, extra, drop: {**{k: v for k, v in must.items() if k not in drop}, **may, **extra},
        st.fixed_dictionaries({k: s for k, s in fields.items() if k in required}),
        st.fixed_dictionaries({}, optional={k: s for k, s in fields.items() if k not in required}),
        st.dictionaries(TEXT, VALUE, max_size=1) | st.just({}),
        st.sets(st.sampled_from(sorted(required) or [""]), max_size=1) | st.just(set()),
    )


def calls(tools: list[Any]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    by_schema = [st.tuples(st.just(t.name), arguments(t.input_schema)) for t in tools if t.name not in SKIPPED]
    garbage = st.tuples(TEXT | st.sampled_from(["", "sentinel", "report "]), st.dictionaries(TEXT, VALUE, max_size=2))
    return st.one_of(*by_schema, garbage)


def _settle(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {**args, "timeout": 0} if name == "wait" else args


def _home(tmp: Path) -> Dovecote:
    dc = mail_home(tmp)
    send(dc, "first")
    return dc


async def _catalog(dc: Dovecote, principal: Principal) -> list[Any]:
    async with Client(build(dc, principal=principal).server) as c:
        return list((await c.list_tools()).tools)


def _keyword(text: str) -> str:
    return text.split(":", 1)[0]


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("caller", ["agent", "operator"])
def test_fuzzed_tool_arguments_get_a_result_or_an_error_with_a_keyword(tmp_path: Path, depth: str,
                                                                      caller: str) -> None:
    principal = Principal(ENTITY, "agent") if caller == "agent" else Principal(SENDER, "operator")
    dc = _home(tmp_path)
    tools = anyio.run(_catalog, dc, principal)
    assert {t.name for t in tools} <= set(TOOLS)
    per_example = 30
    ran = 0

    @settings(max_examples=max(COUNTS[depth] // per_example, 2), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(calls(tools), min_size=per_example, max_size=per_example))
    def session(batch: list[tuple[str, dict[str, Any]]]) -> None:
        nonlocal ran
        before = snapshot(dc.layout.root)

        async def run() -> None:
            nonlocal ran
            face = build(dc, principal=principal)
            face.watcher.poll = 0.02
            async with Client(face.server) as c:
                for name, args in batch:
                    r = await c.call_tool(name, _settle(name, args))
                    ran += 1
                    text = "\n".join(getattr(x, "text", "") for x in r.content)
                    assert "Traceback" not in text, (name, args, text)
                    if r.is_error:
                        assert _keyword(text) in REASONS, (name, args, text)
                    else:
                        assert r.structured_content is not None, (name, args, text)
                alive = await c.call_tool("doctor", {})  # the server survived every call
                assert not alive.is_error

        anyio.run(run)
        assert_only_grew(before, dc.layout.root, moving=("intake/",))

    session()
    print(f"fuzz mcp arguments ({caller}, {depth}): {ran} calls")
    assert ran >= 2 * per_example

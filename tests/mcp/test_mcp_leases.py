"""The ``lease`` tool through the MCP SDK's own client: one tool, its verb chosen by ``action``; an agent's
lease is its own (the entity defaults to the connection's), another agent running into it is ``isError`` with
``lease_conflict: `` naming the holder and expiry; an operator, whose catalog does not list the tool, calls it
all the same for any entity."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from mcp import Client

from dovecote.handle.api import Dovecote, Principal
from dovecote.mcp.server import build
from dovecote.model.addresses import project as project_box
from helpers import add_project, box_ids
from mailhelpers import ENTITY, SENDER, mail_home

pytestmark = pytest.mark.anyio


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    dc = mail_home(tmp_path)
    add_project(dc, tmp_path, "atlas")
    return dc


def client(dc: Dovecote, principal: Principal) -> Client:
    return Client(build(dc, principal=principal).server)


async def test_one_tool_takes_lists_and_releases_and_a_conflict_names_the_holder(dc: Dovecote) -> None:
    async with client(dc, Principal(ENTITY, "agent")) as mine:
        listed = {t.name: t for t in (await mine.list_tools()).tools}
        assert listed["lease"].input_schema["properties"]["action"]["enum"] == ["list", "take", "renew", "release"]
        took = await mine.call_tool("lease", {"action": "take", "globs": ["src/**"], "reason": "refactor"})
        assert not took.is_error, took.content
        lease = (took.structured_content or {})["lease"]
        assert lease["entity"] == ENTITY and took.content[0].text == f"lease {lease['id']} until {lease['expires']}"
        letter = orjson.loads(dc.store.read(project_box("atlas")).letters[0].raw)
        assert (letter["agent"], letter["entity"]) == (ENTITY, ENTITY)  # the token's entity authors it
    before = box_ids(dc, project_box("atlas"))
    async with client(dc, Principal(SENDER, "agent")) as theirs:
        refused = await theirs.call_tool("lease", {"action": "take", "globs": ["src/a.py"]})
        assert refused.is_error
        assert refused.content[0].text.startswith(f"lease_conflict: {SENDER} cannot take src/a.py in atlas: "
                                                  f"{ENTITY} holds src/** (exclusive) until {lease['expires']}")
        forbidden = await theirs.call_tool("lease", {"action": "release", "entity_id": ENTITY})
        assert forbidden.is_error and forbidden.content[0].text.startswith("forbidden: ")
        listing = await theirs.call_tool("lease", {})
        assert [x["entity"] for x in (listing.structured_content or {})["leases"]] == [ENTITY]
        wrong = await theirs.call_tool("lease", {"action": "steal"})
        assert wrong.is_error and wrong.content[0].text.startswith("invalid_field: lease: action must be one of")
    assert box_ids(dc, project_box("atlas")) == before  # refusals wrote nothing
    async with client(dc, Principal("ent_ops", "operator")) as ops:
        assert "lease" not in {t.name for t in (await ops.list_tools()).tools}  # a listing, not a gate
        released = await ops.call_tool("lease", {"action": "release", "entity_id": ENTITY})
        assert not released.is_error and (released.structured_content or {})["count"] == 1

"""What the MCP tests share: the mark for the 2025-era subscribe (the anyio backend is in conftest), a case,
and the SDK's client over streamable HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from dovecote.handle.api import Dovecote
from helpers import rep

#: The 2025-era subscribe is deprecated in the SDK (2026-07-28 listens instead); tests of that era expect it.
LEGACY = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


def trilogy(dc: Dovecote) -> list[str]:
    """The seed's founding case: three honesty letters about one tool answering empty over data that exists."""
    filed = dc.report([rep("empty answer over data that exists", tool="north", klass="honesty",
                           ts=f"2026-07-05T10:00:0{n}Z") for n in range(3)])
    return [lid for lid, _ in filed]


@asynccontextmanager
async def http_client(url: str, token: str, **kw: Any) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP with a bearer token (the HTTP client is ours to close)."""
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as h, Client(
        streamable_http_client(url, http_client=h), **kw
    ) as c:
        yield c

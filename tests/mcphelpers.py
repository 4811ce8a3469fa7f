"""What the MCP tests share: the mark for the 2025-era subscribe (the anyio backend is in conftest), a case."""

from __future__ import annotations

import pytest

from dovecote.api import Dovecote
from helpers import rep

#: The 2025-era subscribe is deprecated in the SDK (2026-07-28 listens instead); tests of that era expect it.
LEGACY = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


def trilogy(dc: Dovecote) -> list[str]:
    """The seed's founding case: three honesty letters about one tool answering empty over data that exists."""
    filed = dc.report([rep("empty answer over data that exists", tool="north", klass="honesty",
                           ts=f"2026-07-05T10:00:0{n}Z") for n in range(3)])
    return [lid for lid, _ in filed]

"""What the MCP tests share: the mark for the 2025-era subscribe (the anyio backend is in conftest)."""

from __future__ import annotations

import pytest

#: The 2025-era subscribe is deprecated in the SDK (2026-07-28 listens instead); tests of that era expect it.
LEGACY = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

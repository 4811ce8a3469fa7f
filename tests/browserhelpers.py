"""The one way the browser tests start chromium (Playwright driving Debian's /usr/bin/chromium).

Without the browser the tests skip, except under CI=true, where a missing browser fails them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run", "--disable-sync"]


def chromium() -> Iterator[Any]:
    """A headless chromium for a module's tests (a module fixture yields from this)."""
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing (make test installs Debian's chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()

"""The roster read through ``roster_cache`` is the roster ``roster.load`` reads, without ``tomllib`` once known."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.errors import Refusal
from dovecote.roster import cache as roster_cache
from dovecote.roster import config as roster
from dovecote.roster.home import Layout
from mailhelpers import mail_home

_SCALAR = (st.text(max_size=12) | st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1) | st.booleans()
           | st.floats(allow_nan=False))
_KEYS = st.text(min_size=1, max_size=8)
_DOC = st.dictionaries(_KEYS, st.recursive(
    _SCALAR, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=12,
), max_size=5)


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (True is not 1, 1.0 is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


@settings(max_examples=150, deadline=None)
@given(_DOC)
def test_a_kept_document_is_the_one_tomllib_decodes(
    tmp_path_factory: pytest.TempPathFactory, doc: dict[str, Any]
) -> None:
    layout = Layout(tmp_path_factory.mktemp("home"))
    text = tomlkit.dumps(doc).encode()
    fresh = tomllib.loads(text.decode())
    key = roster_cache.sha256(text).hexdigest()
    roster_cache._keep(layout, key, fresh)
    kept = roster_cache._kept(layout, key)
    assert kept is not None and _same(kept, fresh)
    assert roster_cache._kept(layout, key[::-1]) is None  # other bytes: not this entry


def test_the_cached_roster_is_the_parsed_one(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    layout = dc.layout
    want = roster.load(layout.config)
    shutil.rmtree(layout.cache, ignore_errors=True)
    assert roster_cache.load(layout) == want  # decoded, not yet kept: reading writes nothing
    assert not layout.cache.exists()
    roster_cache.keep(layout, want)  # after a read that succeeded
    assert roster_cache._kept(layout, want.signature) is not None
    assert roster_cache.load(layout) == want  # from the entry
    layout.config.write_bytes(layout.config.read_bytes() + b'\n[[entities]]\nid = "ent_new"\n')
    changed = roster_cache.load(layout)
    assert changed == roster.load(layout.config) and changed.entity("ent_new") is not None


def test_a_broken_entry_is_ignored_and_a_broken_roster_still_refused(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    layout = dc.layout
    roster_cache.keep(layout, roster_cache.load(layout))
    entry = Path(roster_cache._entry(layout, create=False))
    for junk in (b"", b"\x00garbage", b"\xe9"):
        entry.write_bytes(junk)
        assert roster_cache.load(layout) == roster.load(layout.config)
    layout.config.write_bytes(b"[owner\n")
    with pytest.raises(Refusal) as e:
        roster_cache.load(layout)
    assert e.value.reason == "invalid_config"
    os.remove(layout.config)
    with pytest.raises(Refusal) as e:
        roster_cache.load(layout)
    assert e.value.reason == "no_home"


def test_a_known_roster_is_read_without_tomllib(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    code = ("import sys\nfrom pathlib import Path\nfrom dovecote.roster import cache as roster_cache\n"
            f"from dovecote.roster.home import Layout\nlayout = Layout(Path({str(dc.layout.root)!r}))\n"
            "roster_cache.keep(layout, roster_cache.load(layout))\nprint('tomllib' in sys.modules)\n")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
            for _ in range(2)]
    assert [r.stdout.strip() for r in runs] == ["True", "False"]

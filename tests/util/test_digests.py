"""``dovecote.util.digests`` gives exactly ``hashlib``'s digests, before and after it moves to ``hashlib``."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dovecote.model.ids import line_id, line_ids
from dovecote.util import digests


@pytest.mark.parametrize("switched", [False, True], ids=["builtin", "hashlib"])
@given(data=st.binary(max_size=4096))
def test_sha256_is_hashlibs(switched: bool, data: bytes) -> None:
    saved = digests._hashed, digests._fast
    digests._hashed, digests._fast = (digests.SWITCH_AFTER + 1, hashlib.sha256) if switched else (0, None)
    try:
        assert digests.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
        h = digests.sha256(data[:7])
        h.update(data[7:])
        assert h.digest() == hashlib.sha256(data).digest()
    finally:
        digests._hashed, digests._fast = saved


@given(st.binary(max_size=4096), st.integers(min_value=1, max_value=64))
def test_blake2b_is_hashlibs(data: bytes, size: int) -> None:
    assert digests.blake2b(data, digest_size=size).hexdigest() == hashlib.blake2b(data, digest_size=size).hexdigest()


@pytest.mark.parametrize(
    "hash_bytes",
    ["digests.sha256(b'x' * {n})", "line_ids([b'y' * 1000] * ({n} // 1000 + 1))"],
    ids=["one", "a batch of lines"],
)
def test_hashlib_is_imported_only_once_hashing_is_heavy(hash_bytes: str) -> None:
    """One hash or a batch (``sha256_for`` counts the batch's bytes) moves to ``hashlib`` at the same point."""
    code = (
        "import sys\n"
        "from dovecote.util import digests\n"
        "from dovecote.model.ids import line_ids\n"
        f"{hash_bytes.format(n=1000)}\n"
        "print('hashlib' in sys.modules)\n"
        f"{hash_bytes.format(n='(digests.SWITCH_AFTER + 1)')}\n"
        "print('hashlib' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["False", "True"]


@given(st.lists(st.binary(max_size=512), max_size=20), st.booleans())
def test_many_lines_hash_to_their_ids_one_by_one(lines: list[bytes], switched: bool) -> None:
    """``line_ids`` (one constructor for a batch, from ``sha256_for``) gives each line's ``line_id``,
    on the builtin and after the move to ``hashlib``."""
    saved = digests._hashed, digests._fast
    digests._hashed, digests._fast = (digests.SWITCH_AFTER + 1, hashlib.sha256) if switched else (0, None)
    try:
        assert line_ids(lines) == [line_id(ln) for ln in lines]
        assert line_ids(lines) == [hashlib.sha256(ln).hexdigest()[:12] for ln in lines]
    finally:
        digests._hashed, digests._fast = saved


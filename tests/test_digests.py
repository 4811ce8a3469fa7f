"""``dovecote.digests`` gives exactly ``hashlib``'s digests (it only avoids importing it)."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from dovecote import digests


@given(st.binary(max_size=4096))
def test_sha256_is_hashlibs(data: bytes) -> None:
    assert digests.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    h = digests.sha256()
    h.update(data[:7])
    h.update(data[7:])
    assert h.digest() == hashlib.sha256(data).digest()


@given(st.binary(max_size=4096), st.integers(min_value=1, max_value=64))
def test_blake2b_is_hashlibs(data: bytes, size: int) -> None:
    assert digests.blake2b(data, digest_size=size).hexdigest() == hashlib.blake2b(data, digest_size=size).hexdigest()

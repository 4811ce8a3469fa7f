"""SHA-256 and BLAKE2b without importing ``hashlib`` until hashing is heavy enough to pay for it.

``hashlib`` loads OpenSSL when it is imported: about eleven million
instructions, a fifth of a cold ``python -c pass``, paid by every CLI call
(letter ids, the roster's signature, the cached rendering's key) though most
hash a few hundred bytes. CPython's builtin ``_sha256`` (``_sha2`` from 3.12)
gives the same digests without that import, but costs several times more per
byte than OpenSSL's (which uses the CPU's SHA instructions): reading a whole
box of 40,000 lines through it costs more than the import saves. So
``sha256`` starts on the builtin and moves to ``hashlib`` for good once this
process has hashed ``SWITCH_AFTER`` bytes through it (about where the import
has paid for itself). ``blake2b`` is the builtin ``_blake2``, the very type
``hashlib`` hands out. The digests are the same either way
(tests/util/test_digests.py).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _hashlib import HASH
    from collections.abc import Callable
    from hashlib import blake2b
    from hashlib import sha256 as _builtin
else:
    try:
        from _sha256 import sha256 as _builtin  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256 as _builtin  # CPython 3.12 and later
        except ImportError:
            from hashlib import sha256 as _builtin
    try:
        from _blake2 import blake2b
    except ImportError:
        from hashlib import blake2b

__all__ = ["blake2b", "sha256", "sha256_for"]

#: Bytes hashed on the builtin before ``sha256`` imports ``hashlib`` (its import costs what
#: the builtin spends on about this many more bytes than OpenSSL does).
SWITCH_AFTER = 256 * 1024

_hashed = 0
_fast: Callable[[bytes], HASH] | None = None


def sha256(data: bytes = b"") -> HASH:
    """A SHA-256 hash object over ``data`` (update it for more), as ``hashlib.sha256(data)``."""
    fast = _fast
    if fast is not None:  # once switched: one test, no second call
        return fast(data)
    return sha256_for(len(data))(data)


def sha256_for(size: int) -> Callable[[bytes], HASH]:
    """The constructor to hash ``size`` more bytes with (counted as hashed): the builtin until
    ``SWITCH_AFTER`` bytes, then ``hashlib``'s. ``sha256`` asks it for each call; a caller hashing
    many lines at once asks once and calls the constructor itself, without a Python call per line."""
    global _hashed, _fast
    if _fast is not None:
        return _fast
    _hashed += size
    if _hashed > SWITCH_AFTER:
        from hashlib import sha256 as fast

        _fast = fast
        return fast
    return _builtin

"""SHA-256 and BLAKE2b from the interpreter's own modules, without importing ``hashlib``.

``hashlib`` loads OpenSSL when it is imported: about eleven million
instructions, a fifth of a cold ``python -c pass``, paid by every CLI call
(letter ids, the roster's signature, the cached rendering's key). CPython's
builtin ``_sha256`` (``_sha2`` from 3.12) and ``_blake2`` give the same
digests (tests/test_digests.py); ``hashlib`` answers only where neither exists.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import blake2b, sha256
else:
    try:
        from _sha256 import sha256  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # CPython 3.12 and later
        except ImportError:
            from hashlib import sha256
    try:
        from _blake2 import blake2b
    except ImportError:
        from hashlib import blake2b

__all__ = ["blake2b", "sha256"]

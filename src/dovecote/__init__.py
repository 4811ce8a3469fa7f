"""dovecote: a durable, file-first mailbox and case-intelligence system for agents.

``dovecote.open()`` finds a home (``--home``, ``$DOVECOTE_HOME``, the nearest
``.dovecote/`` upward, ``~/.dovecote``) and returns a ``Dovecote`` handle whose
methods are the whole library API. Importing this package is cheap: the handle
and its dependencies load on first use, so ``dovecote --version`` stays fast.
"""

from __future__ import annotations

from dovecote._version import __version__

# ``typing`` costs a few milliseconds of every start-up (``dovecote --version``
# included); the names below are needed only by type checkers, which read
# this constant as ``typing.TYPE_CHECKING``.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from dovecote.errors import DovecoteError, Refusal, StoreError
    from dovecote.handle.api import Dovecote, init

__all__ = ["Dovecote", "DovecoteError", "Refusal", "StoreError", "__version__", "init", "open"]

_LAZY = {
    "Dovecote": "dovecote.handle.api",
    "init": "dovecote.handle.api",
    "DovecoteError": "dovecote.errors",
    "Refusal": "dovecote.errors",
    "StoreError": "dovecote.errors",
}


def open(home: Any = None) -> Dovecote:
    """Open a dovecote home (see the module docstring for how it is found)."""
    from dovecote.handle.api import open_home

    return open_home(home)


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'dovecote' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(mod), name)

"""Human gestures: the gesture passphrase a person sets once and types for each gesture.

Law (DESIGN 9): a human gesture (``mission archive``, ``receipt import``) is
made only with a secret the person holds. Nothing a process can observe about
itself tells a person from a program running as the same user: a terminal on
stdin is not one (a program drives a pseudo-terminal with ``script``), nor is
anything printed to it (the program owning the pseudo-terminal reads it), nor a
login link (whoever started ``serve`` holds it). So every gesture, on every
face that offers one, is checked here, by ``check``, against the passphrase the
person set with ``dovecote gesture-key set``.

The passphrase is kept only as a slow salted hash (``hashlib.scrypt``, a random
salt, the cost parameters stored beside the hash) in ``gesture-key.json`` in the
home: mode 0600, written whole (temp, fsync, rename), never in ``config.toml``,
the roster or the environment. A guess costs one scrypt, on a face or offline.

What it cannot prove: a program that reads the person's keystrokes (a
keylogger, the terminal it types into) learns the passphrase, and a program
that can write the home's files can replace the key file or append to a ledger
directly. It proves the gesture came from someone who knows the passphrase.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from dovecote.errors import Refusal
from dovecote.ledger.jsonl import write_atomic
from dovecote.model.letters import format_ts
from dovecote.model.results import Result

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: The file in the home that holds the hash (never a cache: ``verify`` leaves it alone).
KEY_FILE = "gesture-key.json"
#: The origins a face vouches for: a terminal's prompt, the Human View's form. A new one is a code change.
GESTURE_ORIGINS = ("terminal", "human-view")
#: scrypt's cost: 2**15 x 8 x 128 bytes = 32 MiB and about a tenth of a second per guess.
COST = {"n": 2**15, "r": 8, "p": 1}
#: The bounds a stored cost must keep (a key file with another one is damaged, not obeyed).
_BOUNDS = {"n": (2**10, 2**20), "r": (1, 32), "p": (1, 16)}
_HOW = "the person runs `dovecote gesture-key set` at a terminal first"


def key_path(ctx: Context) -> Path:
    return ctx.layout.root / KEY_FILE


def _digest(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(passphrase.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=256 * r * (n + p + 2),
                          dklen=32)


def _stored(ctx: Context) -> dict[str, Any] | None:
    """The key file's record (None when no passphrase is set); a damaged one refuses every gesture."""
    try:
        raw = key_path(ctx).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise Refusal("human_gesture_required", f"the gesture key {key_path(ctx)} cannot be read: {e.strerror}"
                      ) from None
    try:
        rec = orjson.loads(raw)
        ok = rec.get("scheme") == "scrypt" and all(
            isinstance(rec.get(k), int) and lo <= rec[k] <= hi for k, (lo, hi) in _BOUNDS.items())
        bytes.fromhex(rec["salt"]), bytes.fromhex(rec["hash"])
    except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError):
        ok = False
    if not ok:
        raise Refusal("human_gesture_required", f"the gesture key {key_path(ctx)} is damaged: the person removes "
                                                "it and runs `dovecote gesture-key set` again")
    return dict(rec)


def _matches(rec: dict[str, Any], passphrase: str) -> bool:
    got = _digest(passphrase, bytes.fromhex(rec["salt"]), rec["n"], rec["r"], rec["p"])
    return hmac.compare_digest(got, bytes.fromhex(rec["hash"]))


def is_set(ctx: Context) -> bool:
    """Whether a gesture passphrase is set in this home (a face asks before it prompts for one)."""
    return _stored(ctx) is not None


def check(ctx: Context, gesture: str | None, passphrase: str | None, what: str) -> str:
    """The gesture's origin, once its passphrase matches the person's; else ``human_gesture_required``.

    The one check every gesture goes through: the CLI's prompt and the Human
    View's form pass what the person typed; REST and MCP pass nothing.
    """
    if gesture not in GESTURE_ORIGINS:
        raise Refusal("human_gesture_required", f"{what} is a human gesture: a person types the gesture passphrase "
                                                "at a terminal or on the Human View's form; no agent or token")
    rec = _stored(ctx)
    if rec is None:
        raise Refusal("human_gesture_required", f"{what} needs the gesture passphrase, and none is set: {_HOW}")
    if not passphrase or not _matches(rec, passphrase):
        raise Refusal("human_gesture_required", f"{what}: that is not the gesture passphrase"
                      if passphrase else f"{what} needs the gesture passphrase")
    return gesture


class KeySet(Result, frozen=True):
    """Where the gesture passphrase's hash is kept, and whether one was there before (it was changed)."""

    path: str
    changed: bool


def set_key(ctx: Context, new: str, old: str | None) -> KeySet:
    """Set the gesture passphrase to ``new``; changing one needs the ``old`` one. ``{path, changed}``.

    Refused ``missing_field`` (an empty passphrase) and ``human_gesture_required``
    (a key is set and ``old`` is not it); a refusal leaves the file as it was.
    """
    if not new:
        raise Refusal("missing_field", "the gesture passphrase is empty: type one (a long one: a program running "
                                       "as you can read its hash and guess offline)")
    rec = _stored(ctx)
    if rec is not None and (not old or not _matches(rec, old)):
        raise Refusal("human_gesture_required", "changing the gesture passphrase needs the current one, and "
                                                "that is not it")
    salt = secrets.token_bytes(16)
    out = {"scheme": "scrypt", **COST, "salt": salt.hex(), "hash": _digest(new, salt, **COST).hex(),
           "set_at": format_ts(ctx.now())}
    write_atomic(key_path(ctx), orjson.dumps(out, option=orjson.OPT_APPEND_NEWLINE), mode=0o600)
    return KeySet(str(key_path(ctx)), rec is not None)

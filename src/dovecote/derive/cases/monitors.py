"""Dead-man's switch monitors: a matching letter is expected at least every period.

States as healthchecks.io defines them: ``new`` (no matching letter since the
monitor was added), ``up`` (the last one is at most ``every`` old), ``late``
(older, but within ``every + grace``), ``down`` (older still), ``paused``.
Going down mints one letter (symptom ``silent_drop``) per down streak, so a
missing signal becomes a case like any other; silence is observed against a
declared expectation, never guessed.

Pure: the state is a function of the monitor's definition letter, the newest
matching letter's time and the time now (the caller's clock).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from dovecote.errors import Refusal
from dovecote.util.timeutil import parse_time

#: The letter fields a filter may name (the ones every fold decodes), by filter key.
FILTER_KEYS: tuple[str, ...] = ("agent", "brain", "class", "kind", "repo", "symptom", "tool")
#: A monitor's grace when none is given (healthchecks.io's default).
DEFAULT_GRACE = "1h"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

Signature = tuple[str | None, ...]  # a letter's values of FILTER_KEYS, in that order


def seconds(duration: str) -> int:
    """``90s``, ``15m``, ``1h``, ``2d`` in seconds."""
    unit = _UNITS.get(duration[-1:])
    if unit is None or not duration[:-1].isdigit() or int(duration[:-1]) <= 0:
        raise Refusal("invalid_field", f"duration {duration!r} is not a number and a unit (s, m, h, d), like 15m")
    return int(duration[:-1]) * unit


def parse_filter(text: str) -> dict[str, str]:
    """``tool=backup,class=win`` as {key: value}; refuses keys outside ``FILTER_KEYS`` and empty parts."""
    out: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.strip().partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not value or key not in FILTER_KEYS:
            raise Refusal(
                "invalid_field", f"filter part {part.strip()!r} is not key=value with a key of {', '.join(FILTER_KEYS)}"
            )
        out[key] = value
    return out


def matches(flt: dict[str, str], sig: Signature) -> bool:
    return all(sig[FILTER_KEYS.index(k)] == v for k, v in flt.items())


def state(
    added: str | None, every: str, grace: str | None, paused: bool, last: str | None, now: datetime
) -> tuple[str, datetime | None]:
    """(the state, when it goes or went down) of one monitor; the moment is None while new or paused."""
    if paused:
        return "paused", None
    t_last, t_added = parse_time(last), parse_time(added)
    if t_last is None or (t_added is not None and t_last < t_added):
        return "new", None
    due = t_last + timedelta(seconds=seconds(every))
    down_at = due + timedelta(seconds=seconds(grace or DEFAULT_GRACE))
    if now <= due:
        return "up", down_at
    return ("late" if now <= down_at else "down"), down_at

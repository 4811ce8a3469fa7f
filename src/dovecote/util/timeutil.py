"""Letter times: the one way dovecote reads them, orders them and writes them.

Letters come from many writers: dovecote writes ``2026-07-05T10:00:00Z``, the
/inbox skill ``+00:00`` offsets and fractional seconds, other tools local
offsets, and hand-written or imported lines sometimes no zone at all. Read
naively, a zone-less time compared with an aware one raises ``TypeError``
(one such letter made every read of its box crash), and times compared as
text sort ``+00:00``, ``.123Z`` and ``Z`` in the wrong order. So every read of
a time goes through ``parse_time`` and every ordering through ``order_key``:

* ISO-8601 as ``datetime.fromisoformat`` reads it (``Z``, offsets, fractional
  seconds, a date alone); a time without a zone is UTC;
* the result is always an aware UTC datetime, so any two compare;
* what cannot be read (not a string, not a time, out of range once moved to
  UTC) is ``None``: "no time", which callers treat as unknown, never a crash.

Writing has one form too (``format_ts``): UTC to the second with ``Z``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

#: Where a letter with no readable time sorts: before every real time.
NO_TIME = datetime.min.replace(tzinfo=UTC)


def format_ts(t: datetime) -> str:
    """The one way dovecote writes a letter's time: ISO-8601 UTC to the second."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(text: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return None
    tz = t.tzinfo
    if tz is UTC:
        return t
    if tz is None:
        return t.replace(tzinfo=UTC)
    try:
        return t.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00 has no UTC form
        return None


# The reads of one box ask for the same few times again and again (an item's
# created_at, its entered_at, a due); the cache makes those repeats cheap.
_parse_cached = lru_cache(maxsize=1 << 14)(_parse)


def parse_time(value: object) -> datetime | None:
    """An aware UTC datetime for an ISO-8601 time (zone-less = UTC); None if unreadable."""
    if not isinstance(value, str):
        return None
    return _parse_cached(value)


def order_key(value: object) -> datetime:
    """The key that orders letters by the instant of their ``ts`` (no time sorts first).

    Not cached: a sweep keys each open letter once, and most times are unique,
    so a cache would only add its own bookkeeping to the hot path.
    """
    if not isinstance(value, str):
        return NO_TIME
    return _parse(value) or NO_TIME


#: The ms of an hour (``YYYY-MM-DDTHH``) as ``order_key`` reads it; None for one it cannot read.
_hours: dict[str, int | None] = {}
_HOURS_MAX = 1 << 14


def order_ms(ts: str | None) -> int:
    """``order_key(ts)`` in ms since the epoch (an unreadable time, NO_TIME, is negative).

    A first build reads every letter's time once, and most are unique, but they fall in few
    hours: dovecote's own form (``YYYY-MM-DDTHH:MM:SSZ``) is its hour, read once, plus its
    minutes and seconds (tests/ops/search/test_search.py holds it equal to ``order_key``); the search
    index's rowids are made of it (``ops.search.sync.ts_key``)."""
    if (ts is not None and len(ts) == 20 and ts[19] == "Z" and ts[4] == "-" and ts[7] == "-" and ts[10] == "T"
            and ts[13] == ":" and ts[16] == ":"):
        mm, ss = ts[14:16], ts[17:19]
        if mm.isascii() and mm.isdigit() and ss.isascii() and ss.isdigit() and mm < "60" and ss < "60":
            hour = ts[:13]
            base = _hours.get(hour, -1)
            if base == -1:
                if len(_hours) >= _HOURS_MAX:
                    _hours.clear()
                t = order_key(hour + ":00:00Z")
                base = _hours[hour] = None if t is NO_TIME else int(t.timestamp()) * 1000
            if base is not None:
                return base + int(mm) * 60_000 + int(ss) * 1000
    return int(order_key(ts).timestamp() * 1000)


#: ``instant_text`` of a letter with no readable time (it sorts before every real one).
NO_TIME_TEXT = "0001-01-01T00:00:00.000000"
_fromisoformat = datetime.fromisoformat


def instant_text(value: object) -> str:
    """``order_key`` as fixed-width text (``YYYY-MM-DDTHH:MM:SS.ffffff``, UTC), so it
    can be a plain string sort key: two letters' texts compare as their instants do.

    Sorting hundreds of thousands of open letters on strings is several times
    cheaper than on (datetime, id) tuples. The common canonical form
    (``…THH:MM:SSZ``) is sliced, not formatted: its separators are found by
    one slice (every third character from the fifth) and the parser only says
    whether it is a time at all, since a cold sweep asks this of every letter it
    holds; anything else goes through ``order_key``.
    """
    if value.__class__ is not str:  # one identity test for the usual plain string
        if not isinstance(value, str):
            return NO_TIME_TEXT
        value = str(value)
    if len(value) == 20 and value[4::3] == "--T::Z":
        try:
            _fromisoformat(value)
        except ValueError:
            return NO_TIME_TEXT
        return value[:19] + ".000000"
    t = _parse(value)
    if t is None:
        return NO_TIME_TEXT
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{t.microsecond:06d}"
    )

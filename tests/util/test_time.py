"""One time parser: zone-less times are UTC, nothing crashes, order is by instant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from dovecote.derive.fates import fold
from dovecote.derive.lifecycle import Link, State, replay
from dovecote.model.addresses import entity
from dovecote.model.letters import canonical_line, letter_id, make_letter
from dovecote.model.results import builtins
from dovecote.util.timeutil import NO_TIME, NO_TIME_TEXT, format_ts, instant_text, order_key, parse_time
from dovecote.verbs import Inbox, Move
from helpers import run_cli
from mailhelpers import ENTITY, mail_home, send, skill_envelope, write_json

ZONELESS = "2026-01-01T00:00:00"


def test_the_parser_reads_every_form_as_an_aware_utc_instant() -> None:
    want = datetime(2026, 1, 1, tzinfo=UTC)
    for text in (ZONELESS, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00+00:00", "2026-01-01T02:00:00+02:00",
                 "2025-12-31T19:00:00-05:00", "2026-01-01T00:00:00.000Z", "2026-01-01"):
        t = parse_time(text)
        assert t == want and t is not None and t.tzinfo is UTC, text
    assert parse_time("2026-01-01T00:00:00.123Z") == want + timedelta(milliseconds=123)


def test_what_cannot_be_read_is_no_time_never_an_error() -> None:
    for value in (None, 5, "", "tomorrow", "2026-13-01T00:00:00Z", "2026-02-30", "0001-01-01T00:00:00+01:00",
                  "9999-12-31T23:59:59-01:00", ["2026-01-01"], "2026-01-01T00:00:00Zjunk"):
        assert parse_time(value) is None, value
        assert order_key(value) is NO_TIME


_OFFSETS = st.one_of(
    st.none(),
    st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59)).map(
        lambda d: timezone(timedelta(minutes=d // timedelta(minutes=1)))
    ),
)


@given(st.datetimes(), _OFFSETS, st.sampled_from(["auto", "seconds", "milliseconds", "microseconds"]))
def test_any_iso_time_parses_to_its_instant(t: datetime, tz: timezone | None, spec: str) -> None:
    t = t.replace(tzinfo=tz)
    text = t.isoformat(timespec=spec)
    shown = datetime.fromisoformat(text)  # the time as written, to the precision written
    try:
        want = shown.replace(tzinfo=UTC) if tz is None else shown.astimezone(UTC)
    except OverflowError:
        assert parse_time(text) is None  # no UTC form: no time, not a crash
        return
    got = parse_time(text)
    assert got == want and got is not None and got.tzinfo is UTC
    assert parse_time(text.replace("+00:00", "Z")) == want


@given(st.text(max_size=40))
def test_any_text_is_a_time_or_no_time(text: str) -> None:
    t = parse_time(text)
    assert t is None or t.tzinfo is UTC
    assert order_key(text) == (t or NO_TIME)


_TIME_PARTS = st.sampled_from(["0", "1", "2", "9", "6", "٣", " ", "-", ":", "T", "Z", "W", "."])


@given(
    st.tuples(st.integers(1, 9999), st.integers(0, 13), st.integers(0, 32), st.integers(0, 25), st.integers(0, 61),
              st.integers(0, 61)),
    st.lists(st.tuples(st.integers(0, 19), _TIME_PARTS), max_size=3),
)
def test_a_time_as_sort_text_is_its_instant(parts: tuple[int, ...], spoil: list[tuple[int, str]]) -> None:
    """The sliced reading of dovecote's own form equals the instant ``order_key`` reads, written
    out, for good times and near misses (a digit or separator changed, a field out of range)."""
    y, mo, d, h, mi, s = parts
    chars = list(f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}Z")
    for at, ch in spoil:
        chars[at] = ch
    text = "".join(chars)
    t = order_key(text)
    want = NO_TIME_TEXT if t is NO_TIME else t.strftime("%Y-%m-%dT%H:%M:%S.%f").rjust(26, "0")
    assert instant_text(text) == want
    assert instant_text(_Text(text)) == want  # a str subclass leaves the plain-string shortcut, to the same text


class _Text(str):
    """A string that is not exactly ``str`` (``instant_text`` tests the class by identity first)."""


def test_mixed_forms_sort_by_instant_not_by_text() -> None:
    # As text these sort bare, frac, plus, z, p2 ("." < "Z", and the offset is ignored).
    stamps = {
        "p2": "2026-01-01T11:30:00+02:00",  # 09:30Z
        "frac": "2026-01-01T10:00:00.123Z",
        "z": "2026-01-01T10:00:00Z",
        "plus": "2026-01-01T10:00:00.500+00:00",
        "bare": "2026-01-01T09:59:59",
    }
    want = ["p2", "bare", "z", "frac", "plus"]
    assert sorted(stamps, key=lambda k: order_key(stamps[k])) == want
    letters = {k: make_letter({"ts": ts, "agent": "a", "tool": "seek", "class": "bug", "what": k})
               for k, ts in stamps.items()}
    book = fold(list(letters.values()), markers=())
    by_id = {v.id: k for k, v in letters.items()}
    assert [by_id[i] for i in book.open_letters()] == want
    assert [by_id[i] for i in book.all_letters()] == want


def test_a_fork_is_decided_by_the_earlier_instant_not_the_smaller_text() -> None:
    # "10:00:00Z" < "11:00:00+02:00" as text, but the nack (09:00Z) came first.
    claim = Link("aaaaaaaaaaaa", "claim", "item", "item", "2026-01-01T10:00:00Z", "x")
    nack = Link("bbbbbbbbbbbb", "nack", "item", "item", "2026-01-01T11:00:00+02:00", "y")
    r = replay("item", State.WAIT, [claim, nack])
    assert r.state is State.NACK and [lk.id for lk, _ in r.conflicts] == [claim.id]


def test_inbox_items_of_one_priority_are_ordered_by_the_instant_they_were_created(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    box = dc.store.path(entity(ENTITY))
    send(dc, "first, to create the box", current_tic=None)
    made = {"late": "2026-01-01T10:00:00.500Z", "early": "2026-01-01T11:00:00+02:00", "mid": "2026-01-01T09:30:00"}
    ids = {}
    with box.open("ab") as f:
        for name, created in made.items():
            env = skill_envelope(f"m_{name}", name, created_at=created, source_tic=None)
            env.update(kind="message", ts=created)
            line = canonical_line(env)
            ids[name] = letter_id(line)
            f.write(line + b"\n")
    order = [i["id"] for i in builtins(dc.inbox(Inbox(entity_id=ENTITY)))["items"] if i["id"] in ids.values()]
    assert order == [ids["early"], ids["mid"], ids["late"]]


def test_format_ts_is_utc_to_the_second() -> None:
    t = datetime(2026, 1, 1, 2, 0, 0, 999, tzinfo=timezone(timedelta(hours=2)))
    assert format_ts(t) == "2026-01-01T00:00:00Z"
    assert parse_time(format_ts(t)) == t.replace(microsecond=0)


def _ok(tmp: Path, *args: str, home: Path) -> bytes:
    r = run_cli(tmp, *args, home=home)
    assert r.returncode == 0, (args, r.stderr.decode())
    assert b"Traceback" not in r.stderr
    return r.stdout


READS = (
    ("inbox", ENTITY), ("inbox", ENTITY, "--format", "json"), ("inbox", ENTITY, "--format", "injection"),
    ("inbox", ENTITY, "--detailed", "--all"), ("view",), ("stale-check",), ("verify",), ("organize", ENTITY),
    ("search", "index"), ("sweep",), ("doctor",),
)


def test_a_zoneless_time_in_an_imported_envelope_crashes_no_read(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    send(dc, "a normal letter")
    mbox = tmp_path / "tree"
    write_json(mbox / "inbound" / "WAIT_normal_directive_t105_1a2b3c4d.json",
               skill_envelope("1a2b3c4d", "Rebuild the index", created_at=ZONELESS, source_tic=None))
    home = dc.layout.root
    _ok(tmp_path, "import", "inbox-tree", str(mbox), "--entity", ENTITY, home=home)
    for args in READS:
        _ok(tmp_path, *args, home=home)
    view = orjson.loads(_ok(tmp_path, "inbox", ENTITY, "--format", "json", home=home))
    item = next(i for i in view["items"] if i["subject"] == "Rebuild the index")
    assert item["created_at"] == ZONELESS  # the data is shown as stored
    assert item["age_hours"] is not None  # and read as UTC


def test_a_zoneless_time_in_a_hand_written_link_crashes_no_read(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    iid = send(dc, "claim me by hand")
    other = send(dc, "defer me by hand")
    box = dc.store.path(entity(ENTITY))
    with box.open("ab") as f:
        f.write(canonical_line({"ts": ZONELESS, "agent": ENTITY, "kind": "claim", "ref": iid, "prev": iid}) + b"\n")
        f.write(canonical_line({"ts": ZONELESS, "agent": ENTITY, "kind": "defer", "ref": other, "prev": other,
                                "until": "2026-01-02T00:00:00"}) + b"\n")
    home = dc.layout.root
    for args in READS:
        _ok(tmp_path, *args, home=home)
    view = orjson.loads(_ok(tmp_path, "inbox", ENTITY, "--format", "json", home=home))
    states = {i["id"]: i["state"] for i in view["items"]}
    assert states[iid] == "ACTIVE"
    assert states[other] == "WAIT"  # the zone-less due (UTC) has passed: resurfaced by time


def test_a_zoneless_until_is_utc_at_write_time_too(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    iid = send(dc, "later")
    dc.move(Move(kind="defer", entity_id=ENTITY, ref=iid, until="2099-01-01T00:00:00"))
    row = next(i for i in builtins(dc.inbox(Inbox(entity_id=ENTITY, current_tic=100)))["items"] if i["id"] == iid)
    assert (row["state"], row["due_time"]) == ("DEFER", "2099-01-01T00:00:00Z")

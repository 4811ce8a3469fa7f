"""Properties of the ledger reader: ids, incremental reads, checkpoints.

Every warm surface (sweep, box, verify) trusts that reading a ledger a piece at
a time gives the same answer as reading it whole, and that a checkpoint resumes
at exactly the right letter. These tests state that against an independent
model of the file (orjson decides what is a letter), for arbitrary letters,
malformed lines, blank lines, CRLF endings and arbitrary write boundaries.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dovecote.ledger.jsonl import ABSENT, WINDOW, Checkpoint, LedgerReader, window_digest
from dovecote.model.letters import canonical_line, letter_id
from helpers import VECTOR as VECTOR_DICT
from helpers import VECTOR_LINE

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- the id vector --------------------------------------------------------------


def test_id_vector_matches_m1nd() -> None:
    """The id is shared with m1nd's spool; a drift would split every letter in two."""
    assert letter_id(VECTOR_LINE) == "e59b1adb1c4b"
    assert letter_id(VECTOR_LINE + b"\n") == "e59b1adb1c4b"
    assert letter_id(VECTOR_LINE + b"\r\n") == "e59b1adb1c4b"


def test_canonical_line_reproduces_vector_bytes() -> None:
    """Writers build dicts in any key order; the canonical form must be the m1nd bytes."""
    assert canonical_line(VECTOR_DICT) == VECTOR_LINE
    shuffled = dict(reversed(list(VECTOR_DICT.items())))
    assert canonical_line(shuffled) == VECTOR_LINE


def test_reader_gives_vector_id(tmp_path: Path) -> None:
    """The id a reader assigns is the id of the bytes on disk, whatever the line ending."""
    path = tmp_path / "letters.jsonl"
    path.write_bytes(VECTOR_LINE + b"\r\n")
    r = LedgerReader(path)
    r.refresh()
    assert [x.id for x in r.letters] == ["e59b1adb1c4b"]
    assert r.letters[0].raw == VECTOR_LINE


# -- a model of a ledger file ---------------------------------------------------

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    _TEXT,
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
    max_leaves=8,
)
_KEYS = st.one_of(
    st.sampled_from(["ts", "agent", "kind", "class", "repo", "brain", "tool", "answers", "ref", "symptom", "what"]),
    _TEXT,
)
_IDS = st.text(alphabet="0123456789abcdef", min_size=12, max_size=12)
_OBJECTS = st.dictionaries(
    _KEYS,
    st.one_of(_JSON, st.lists(_IDS, max_size=3)),
    max_size=6,
)

_MALFORMED_FIXED = [
    b"{",
    b'{"a":',
    b"[1,2]",
    b'"a string"',
    b"42",
    b"null",
    b"garbage",
    b'{"a":1}{"b":2}',
    b'{"a":1} {"b":2}',
    b'{"agent":"x"}{"agent":"y"}',
    b'{"a":1}x',
    b"\x00\xff",
]


def _is_blank(line: bytes) -> bool:
    return not line or line.isspace()


def _is_object(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


_MALFORMED = st.one_of(
    st.sampled_from(_MALFORMED_FIXED),
    st.binary(max_size=20).filter(lambda b: b"\n" not in b and not _is_blank(b.rstrip(b"\r")) and not _is_object(b)),
).filter(lambda b: not b.endswith(b"\r"))
_BLANK = st.sampled_from([b"", b" ", b"\t", b"  \t "])


@st.composite
def _entry(draw: st.DrawFn) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(["letter", "letter", "letter", "letter", "indented", "malformed", "blank"]))
    if kind in ("letter", "indented"):
        line = canonical_line(draw(_OBJECTS))
        return ("letter", b" " + line if kind == "indented" else line)
    if kind == "malformed":
        return ("malformed", draw(_MALFORMED))
    return ("blank", draw(_BLANK))


@dataclass
class Model:
    """What a correct reader must see in a file, computed without dovecote."""

    data: bytes
    ids: list[str]
    defects: list[int]
    duplicates: int


def _model_of(data: bytes, first_line: int = 1) -> Model:
    """Letters, malformed line numbers and duplicates of the complete lines of ``data``."""
    end = data.rfind(b"\n")
    lines = data[:end].split(b"\n") if end >= 0 else []
    ids: list[str] = []
    seen: set[str] = set()
    defects: list[int] = []
    dups = 0
    for n, raw in enumerate(lines, first_line):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if _is_blank(line):
            continue
        if not _is_object(line):
            defects.append(n)
            continue
        i = letter_id(line)
        if i in seen:
            dups += 1
        else:
            seen.add(i)
            ids.append(i)
    return Model(data, ids, defects, dups)


@st.composite
def _files(draw: st.DrawFn, min_size: int = 0) -> bytes:
    entries = draw(st.lists(_entry(), min_size=min_size, max_size=25))
    if entries and draw(st.booleans()):  # a replay: some line appears twice
        entries.append(draw(st.sampled_from(entries)))
    out = []
    for _, line in entries:
        out.append(line + draw(st.sampled_from([b"\n", b"\n", b"\r\n"])))
    return b"".join(out)


@contextmanager
def _ledger() -> Iterator[Path]:
    """A fresh ledger path per example (function-scoped fixtures do not reset between examples)."""
    with tempfile.TemporaryDirectory() as d:
        yield Path(d) / "letters.jsonl"


def _state(r: LedgerReader) -> tuple[list[str], list[int], int]:
    assert all(d.kind == "malformed" for d in r.defects)
    return [x.id for x in r.letters], [d.line for d in r.defects], r.duplicates


def _read_whole(path: Path) -> LedgerReader:
    r = LedgerReader(path)
    r.refresh()
    return r


# -- full and incremental reads --------------------------------------------------


@SETTINGS
@given(_files())
# Two objects run together next to a blank line: a batch decoder that counts
# objects instead of lines would pair letters with the wrong lines.
@example(b'{"agent":"x"}{"agent":"y"}\n\n{"agent":"z"}\n')
@example(b'{"agent":"x"} {"agent":"y"}\n \n')
def test_full_read_matches_model(data: bytes) -> None:
    """Every letter is read once with its id, every malformed line is named, none is fatal."""
    with _ledger() as path:
        path.write_bytes(data)
        r = _read_whole(path)
        m = _model_of(data)
        assert _state(r) == (m.ids, m.defects, m.duplicates)
        assert r.torn is None
        for letter in r.letters:
            assert letter_id(letter.raw) == letter.id
            assert b"\n" not in letter.raw and not letter.raw.endswith(b"\r")


@SETTINGS
@given(st.data())
def test_incremental_read_equals_full_read(data: st.DataObject) -> None:
    """A warm reader fed arbitrary byte chunks (splits mid-line included) ends where a cold one does."""
    content = data.draw(_files())
    cuts = sorted(data.draw(st.sets(st.integers(min_value=1, max_value=max(1, len(content) - 1)), max_size=8)))
    bounds = [0, *[c for c in cuts if c < len(content)], len(content)]
    with _ledger() as path:
        path.write_bytes(b"")
        warm = LedgerReader(path)
        gathered: list[str] = []
        with open(path, "ab") as f:
            for a, b in pairwise(bounds):
                f.write(content[a:b])
                f.flush()
                gathered += [x.id for x in warm.refresh()]
                # At every step the warm state is what a cold read of the same bytes gives.
                cold = _read_whole(path)
                assert _state(warm) == _state(cold)
                assert warm.torn == cold.torn
                written = content[:b]
                if written and not written.endswith(b"\n"):
                    assert warm.torn is not None and warm.torn.kind == "torn"
                    assert warm.torn.line == written.count(b"\n") + 1
                else:
                    assert warm.torn is None
        m = _model_of(content)
        assert _state(warm) == (m.ids, m.defects, m.duplicates)
        assert gathered == m.ids
        assert warm.generation == 0


@SETTINGS
@given(_files(), _entry())
def test_torn_tail_never_read_as_letter(head: bytes, tail: tuple[str, bytes]) -> None:
    """Bytes without their newline are not a letter yet, even when they parse as one."""
    last = tail[1]
    with _ledger() as path:
        path.write_bytes(head + last)
        r = _read_whole(path)
        m = _model_of(head)
        assert _state(r) == (m.ids, m.defects, m.duplicates)
        if last:
            assert r.torn is not None
            assert r.torn.line == head.count(b"\n") + 1


# -- checkpoints ------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_resume_returns_exactly_what_was_appended(data: st.DataObject) -> None:
    """A checkpoint is a cache: resuming from it must cost only the new bytes and lose none."""
    content = data.draw(_files(min_size=1))
    cut = data.draw(st.integers(min_value=0, max_value=len(content)))
    with _ledger() as path:
        path.write_bytes(content[:cut])
        first = _read_whole(path)
        cp = first.checkpoint()
        with open(path, "ab") as f:
            f.write(content[cut:])
        resumed = LedgerReader.resume(path, cp)
        got = [x.id for x in resumed.refresh()]
        suffix = _model_of(content[cp.offset :], first_line=cp.line_no + 1)
        assert resumed.generation == 0
        assert got == suffix.ids
        assert [d.line for d in resumed.defects] == suffix.defects
        # The reader that took the checkpoint sees the same growth, minus what it already held.
        before = set(_state(first)[0])
        new = [x.id for x in first.refresh()]
        assert new == [i for i in _model_of(content).ids if i not in before]


@SETTINGS
@given(_files(min_size=1), _files(min_size=1))
def test_replaced_file_starts_over(old: bytes, new: bytes) -> None:
    """A ledger replaced by a new file (git checkout, a merge) must not be stitched onto the old one."""
    with _ledger() as path:
        path.write_bytes(old)
        r = _read_whole(path)
        cp = r.checkpoint()
        gen = r.generation
        tmp = path.with_name("next.tmp")
        tmp.write_bytes(new)
        os.replace(tmp, path)
        r.refresh()
        m = _model_of(new)
        assert r.generation == gen + 1
        assert _state(r) == (m.ids, m.defects, m.duplicates)
        resumed = LedgerReader.resume(path, cp)
        resumed.refresh()
        assert resumed.generation == 1
        assert _state(resumed) == (m.ids, m.defects, m.duplicates)


def _lines(*objs: dict[str, Any]) -> bytes:
    return b"".join(canonical_line(o) + b"\n" for o in objs)


def test_rewritten_shorter_in_place_starts_over(tmp_path: Path) -> None:
    """A ledger truncated and rewritten in place (same inode) is a new ledger, not a continuation."""
    path = tmp_path / "letters.jsonl"
    path.write_bytes(_lines({"what": "a"}, {"what": "b"}, {"what": "c"}))
    r = _read_whole(path)
    ino = path.stat().st_ino
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(_lines({"what": "z"}))
    assert path.stat().st_ino == ino
    r.refresh()
    assert r.generation == 1
    assert _state(r) == (_model_of(path.read_bytes()).ids, [], 0)


def test_rewritten_in_place_with_moved_boundary_starts_over(tmp_path: Path) -> None:
    """A hand edit that lengthens an early letter shifts every line; the reader must notice."""
    path = tmp_path / "letters.jsonl"
    path.write_bytes(_lines({"what": "a"}, {"what": "b"}))
    r = _read_whole(path)
    edited = _lines({"what": "a, edited by hand"}, {"what": "b"})
    assert edited[r.offset - 1 : r.offset] != b"\n"
    with open(path, "r+b") as f:
        f.write(edited)
    r.refresh()
    assert r.generation == 1
    assert _state(r) == (_model_of(edited).ids, [], 0)


def test_deleted_file_reads_empty_then_starts_over(tmp_path: Path) -> None:
    """A missing ledger reads as zero letters, and a new one is read from its start."""
    path = tmp_path / "letters.jsonl"
    path.write_bytes(_lines({"what": "a"}))
    r = _read_whole(path)
    path.unlink()
    assert r.refresh() == []
    assert r.letters == [] and not r.exists
    path.write_bytes(_lines({"what": "b"}))
    assert [x.id for x in r.refresh()] == _model_of(path.read_bytes()).ids


# -- in-place rewrites that keep the size (issue 6, item 11) ------------------------------


def test_rewritten_in_place_to_the_same_size_starts_over(tmp_path: Path) -> None:
    """One letter's text changed, same length: every line boundary and the size stay; the reader must notice."""
    path = tmp_path / "letters.jsonl"
    original = _lines({"what": "a"}, {"what": "b"})
    path.write_bytes(original)
    r = _read_whole(path)
    cp = r.checkpoint()
    edited = _lines({"what": "a"}, {"what": "c"})
    assert len(edited) == len(original) and edited[r.offset - 1 : r.offset] == b"\n"
    time.sleep(0.05)  # a later edit, as by hand: the file's mtime moves (ledger.py names the same-tick blind spot)
    with open(path, "r+b") as f:
        f.write(edited)
    assert r.refresh() == r.letters
    assert r.generation == 1
    assert _state(r) == (_model_of(edited).ids, [], 0)
    resumed = LedgerReader.resume(path, cp)  # a cold process resuming from a stored checkpoint
    resumed.refresh()
    assert resumed.generation == 1
    assert _state(resumed) == (_model_of(edited).ids, [], 0)


@SETTINGS
@given(st.data())
def test_a_same_size_rewrite_before_a_checkpoint_is_never_read_as_a_continuation(data: st.DataObject) -> None:
    """Any byte changed in the window before a checkpoint, with or without an append after it."""
    content = data.draw(_files().filter(lambda b: b"\n" in b))
    with _ledger() as path:
        path.write_bytes(content)
        cp = _read_whole(path).checkpoint()
        # an ASCII byte for an ASCII byte keeps the text UTF-8, which the model judges as the reader does
        window = st.integers(min_value=max(0, cp.offset - WINDOW), max_value=cp.offset - 1)
        at = data.draw(window.filter(lambda i: content[i] < 128))
        # (no CR: a line ending in two CRs gets another id from the reader than from letter_id, noted apart)
        byte = data.draw(st.sampled_from(b' {}[]":,0a\n').filter(lambda b: b != content[at]))
        edited = content[:at] + bytes([byte]) + content[at + 1 :] + data.draw(_files())
        path.write_bytes(edited)  # the same inode: write_bytes truncates and rewrites in place
        resumed = LedgerReader.resume(path, cp)
        resumed.refresh()
        m = _model_of(edited)
        assert resumed.generation == 1
        assert _state(resumed) == (m.ids, m.defects, m.duplicates)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(crs=st.integers(min_value=0, max_value=3), lf=st.booleans())
def test_an_id_computed_before_an_append_is_the_id_the_reader_finds(crs: int, lf: bool) -> None:
    line = VECTOR_LINE + b"\r" * crs + (b"\n" if lf else b"")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "letters.jsonl"
        path.write_bytes(line if lf else line + b"\n")
        r = LedgerReader(path)
        r.refresh()
        # a CRLF ending is a line ending; further CRs are JSON whitespace, part of the letter's bytes
        assert [x.id for x in r.letters] == [letter_id(line)]
        assert (letter_id(line) == letter_id(VECTOR_LINE)) is (crs <= 1)


# -- an appender reads its own bytes from memory ---------------------------------


@SETTINGS
@given(_files(), st.lists(st.lists(_OBJECTS, min_size=1, max_size=4), min_size=1, max_size=5))
def test_what_an_appender_reads_of_its_own_lines_equals_a_whole_read(before: bytes, batches: list[Any]) -> None:
    """``LockedLedger.append`` takes the lines it wrote from memory (``took_own``), not the file:
    the reader it leaves must be the one a new reader of the whole file is, batch after batch
    (letters, defects, duplicates, the offset and its cursor marks, and the next refresh)."""
    from dovecote.ledger.append import locked

    with _ledger() as path:
        path.write_bytes(before)
        r = LedgerReader(path)
        for batch in batches:
            with locked(r) as led:
                led.append([canonical_line(o) for o in batch])
            whole = _read_whole(path)
            assert _state(r) == _state(whole)
            assert (r.offset, r.line_no, r.torn) == (whole.offset, whole.line_no, whole.torn)
            assert r.count_at(r.offset) == len(r.letters) and r.checkpoint() == whole.checkpoint()
            assert r.refresh() == []  # nothing new, and nothing taken twice


# -- a snapshot bound, and a byte offset turned back into a count of letters ------------------------


def test_a_bound_reads_only_the_snapshot_and_absent_reads_nothing(tmp_path: Path) -> None:
    """``verify`` reads one fixed snapshot: bytes appended past the bound are not read until it is lifted."""
    path = tmp_path / "letters.jsonl"
    first = _lines({"what": "a"}, {"what": "b"})
    path.write_bytes(first + _lines({"what": "c"}))
    r = LedgerReader(path)
    r.bound = len(first)
    assert [x.id for x in r.refresh()] == _model_of(first).ids
    assert r.offset == len(first) and r.torn is None
    r.bound = len(first) - 1  # inside the second line: the reader has gone further than the snapshot
    r.refresh()
    assert [x.id for x in r.letters] == _model_of(first).ids[:1] and r.generation == 1
    r.bound = None
    r.refresh()
    assert [x.id for x in r.letters] == _model_of(path.read_bytes()).ids
    r.bound = ABSENT  # the file did not exist when the snapshot was taken
    assert r.refresh() == [] and r.letters == [] and not r.exists
    whole = LedgerReader(path)
    whole.bound = ABSENT
    assert whole.refresh() == [] and not whole.exists


def test_count_at_turns_an_offset_the_reader_stood_at_into_a_count(tmp_path: Path) -> None:
    """A store cursor is a byte offset: the reader answers how many letters it had read there, or None."""
    path = tmp_path / "letters.jsonl"
    first = _lines({"what": "a"}, {"what": "b"})
    path.write_bytes(first)
    r = LedgerReader(path)
    assert r.count_at(0) == 0
    r.refresh()
    with open(path, "ab") as f:
        f.write(_lines({"what": "c"}))
    r.refresh()
    end = path.stat().st_size
    assert (r.count_at(0), r.count_at(len(first)), r.count_at(end)) == (0, 2, 3)
    assert r.count_at(end + 1) is None  # past the end: never stood there
    assert r.count_at(len(first) - 1) is None  # inside a line: never stood there either
    assert r.count_at(1) is None
    resumed = LedgerReader.resume(path, r.checkpoint())
    assert resumed.count_at(end) == 0 and resumed.count_at(0) is None  # a resumed reader knows only its start


def test_a_snapshot_of_an_empty_ledger_is_not_an_absent_one(tmp_path: Path) -> None:
    path = tmp_path / "letters.jsonl"
    path.write_bytes(b"")
    r = LedgerReader(path)
    r.bound = 0  # the file was there, empty, when the snapshot was taken
    assert r.refresh() == [] and r.exists


def test_a_checkpoint_keeps_the_digest_of_exactly_the_last_4096_bytes(tmp_path: Path) -> None:
    """Checkpoints are kept in cache/ across versions: the window they hash is part of their format."""
    path = tmp_path / "letters.jsonl"
    data = _lines(*({"what": f"letter {n:04d}"} for n in range(300)))
    assert len(data) > 4096 + 1
    path.write_bytes(data)
    r = _read_whole(path)
    assert r.checkpoint() == Checkpoint(path.stat().st_ino, len(data), 300, window_digest(data[-4096:]))
    # a rewrite just inside the window is seen; one byte further back is not (verify's job)
    edited = bytearray(data)
    edited[len(data) - 4097] ^= 1
    path.write_bytes(bytes(edited))
    assert LedgerReader.resume(path, r.checkpoint()).refresh() == []
    edited[len(data) - 4097] ^= 1
    edited[len(data) - 4096] ^= 1
    path.write_bytes(bytes(edited))
    again = LedgerReader.resume(path, r.checkpoint())
    again.refresh()
    assert again.generation == 1

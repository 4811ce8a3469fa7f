"""The sweep's rows, built and printed in batches.

A sweep can list hundreds of thousands of open letters. Decoding each line
again for its ``what`` (``Letter.data()``), and serializing the whole answer
as one object, were most of a cold sweep's time and half its memory. Here a
batch of lines is decoded in one msgspec call that reads only ``what``, and
the JSON is written a batch of rows at a time, byte for byte what
``orjson.dumps(answer, option=OPT_INDENT_2)`` would print.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import msgspec
import orjson

from dovecote.derive.fates import FLIGHT, WET
from dovecote.model.letters import Letter
from dovecote.util.timeutil import instant_text

BATCH = 4096
#: The answers of a row that has none: one shared list (rows never change their answers).
NO_ANSWERS: list[str] = []
Boxes = list[tuple[str, Mapping[str, Any]]]  # (label, reader index), sorted by label


class Row(msgspec.Struct, array_like=True, gc=False):
    """An open letter's row without the parts that move (fate, answered_by): what a
    fold snapshot keeps, ready to emit."""

    key: str  # instant_text(ts) + id: the listing's order
    id: str
    ts: str | None
    agent: str | None
    klass: str | None
    repo: str | None
    brain: str | None
    tool: str | None
    what: str | None
    answers: list[str]
    box: str | None


def owners(ids: Iterable[str], boxes: Boxes) -> dict[str, str]:
    """Each id's box: the first (by label) whose ledger holds it; an id only the spool
    holds has none. One C-level set intersection per box, never a scan per row."""
    pending = set(ids)
    out: dict[str, str] = {}
    for label, index in boxes:
        if not pending:
            break
        hits = index.keys() & pending  # a dict's keys view probes the smaller side: the batch, not the box
        out.update(dict.fromkeys(hits, label))
        pending -= hits
    return out


def make_rows(letters: Sequence[Letter], boxes: Boxes, keys: Sequence[str] | None = None) -> list[Row]:
    """The rows of open letters, a batch at a time (``what`` decoded for the whole batch).
    ``keys``: the letters' sort keys when the caller has them (``FateBook.open_keys``)."""
    if keys is None:
        keys = [instant_text(lt.ts) + lt.id for lt in letters]
    out: list[Row] = []
    # Owners of every letter at once: each box's index is probed by the set of ids, box by box,
    # about one probe a letter held; batch by batch, each batch probed every box (ten times that).
    owner = owners([lt.id for lt in letters], boxes)
    for n in range(0, len(letters), BATCH):
        batch = letters[n : n + BATCH]
        out += [
            Row(key, lt.id, lt.ts, lt.agent, lt.klass, lt.repo, lt.brain, lt.tool, what, lt.answers or NO_ANSWERS,
                owner.get(lt.id))
            for key, lt, what in zip(keys[n : n + BATCH], batch, whats(batch), strict=True)
        ]
    return out


def open_dicts(rows: Sequence[Row], picked: set[str], refs: Mapping[str, list[str]]) -> Iterator[list[dict[str, Any]]]:
    """Open rows as the sweep lists them, a batch of dicts at a time (never all at once)."""
    for n in range(0, len(rows), BATCH):
        yield [
            {
                "id": r.id,
                "ts": r.ts,
                "agent": r.agent,
                "class": r.klass,
                "repo": r.repo,
                "brain": r.brain,
                "tool": r.tool,
                "what": r.what,
                "answers": list(r.answers),
                "answered_by": sorted(set(b)) if (b := refs.get(r.id)) else [],
                "fate": FLIGHT if r.id in picked else WET,
                "box": r.box,
            }
            for r in rows[n : n + BATCH]
        ]


class _What(msgspec.Struct):
    what: str | None = None


_what_lines = msgspec.json.Decoder(_What).decode_lines


def _what_of(letter: Letter) -> str | None:
    v = letter.data().get("what")
    return v if isinstance(v, str) else None


def whats(letters: Sequence[Letter]) -> list[str | None]:
    """Each letter's ``what`` when it is a string, else None (as ``data()`` reads it).

    A batch that msgspec cannot read as it stands (a ``what`` that is no
    string, bytes orjson would refuse) is read letter by letter instead.
    """
    out: list[str | None] = []
    for n in range(0, len(letters), BATCH):
        batch = letters[n : n + BATCH]
        try:
            got = _what_lines(b"\n".join(lt.raw for lt in batch))
        except (msgspec.DecodeError, RecursionError):
            got = []
        if len(got) == len(batch):
            out += [w.what for w in got]
        else:
            out += [_what_of(lt) for lt in batch]
    return out


_INDENT = orjson.OPT_INDENT_2


def indented_chunks(head: dict[str, Any], key: str, batches: Iterable[Sequence[Any]]) -> Iterator[bytes]:
    """``orjson.dumps({**head, key: rows}, option=OPT_INDENT_2) + b"\\n"``, in pieces:
    ``rows`` are the concatenated ``batches``, each serialized on its own.

    The list is the last value of the object. orjson writes a newline inside a
    string only escaped, so every raw newline is layout and a batch printed at
    depth 0 is moved to depth 2 by indenting after each one.
    """
    whole = orjson.dumps({**head, key: []}, option=_INDENT)
    assert whole.endswith(b"[]\n}")
    first = True
    for batch in batches:
        if not batch:
            continue
        body = orjson.dumps(batch, option=_INDENT)[2:-2]  # drop "[\n" and "\n]"
        yield (whole[:-3] + b"\n" if first else b",\n") + b"  " + body.replace(b"\n", b"\n  ")
        first = False
    yield whole + b"\n" if first else b"\n  ]\n}\n"

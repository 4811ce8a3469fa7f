"""The sweep's rows, built and printed in batches.

A sweep can list hundreds of thousands of open letters. Decoding each line
again for its ``what`` (``Letter.data()``), and serializing the whole answer
as one object, were most of a cold sweep's time and half its memory. Here a
batch of lines is decoded in one msgspec call that reads only ``what``, and
the JSON is written a batch of rows at a time, byte for byte what
``orjson.dumps(answer, option=OPT_INDENT_2)`` would print.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
import orjson

from dovecote.letters import Letter

BATCH = 4096


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


def indented_chunks(head: dict[str, Any], key: str, rows: Sequence[Any]) -> Iterator[bytes]:
    """``orjson.dumps({**head, key: rows}, option=OPT_INDENT_2) + b"\\n"``, in pieces.

    The list is the last value of the object. orjson writes a newline inside a
    string only escaped, so every raw newline is layout and a batch printed at
    depth 0 is moved to depth 2 by indenting after each one.
    """
    whole = orjson.dumps({**head, key: []}, option=_INDENT)
    if not rows:
        yield whole + b"\n"
        return
    assert whole.endswith(b"[]\n}")
    yield whole[:-3] + b"\n"
    for n in range(0, len(rows), BATCH):
        body = orjson.dumps(rows[n : n + BATCH], option=_INDENT)[2:-2]  # drop "[\n" and "\n]"
        yield (b",\n" if n else b"") + b"  " + body.replace(b"\n", b"\n  ")
    yield b"\n  ]\n}\n"

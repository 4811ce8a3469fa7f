"""The file ledger: append-only JSONL, one letter per line; this module reads it (``ledger.append`` writes).

Laws this module upholds (DESIGN 1.2, 1.3, 1.5):

* A line is a letter only once its newline is on disk. A crash can leave at
  most one torn last line: readers skip it and report it, and the next append
  first writes a newline so it starts on a fresh line. The torn fragment then
  reads as a malformed line, reported with its line number, never fatal (or,
  when the crash fell between a line's last byte and its newline, as the whole
  letter it was: never acknowledged, but nothing is lost by keeping it).
* Reads are incremental: a reader remembers the byte offset it reached and
  re-reads only what was appended since. If the file was replaced or shrank,
  or the last ``WINDOW`` bytes before the offset no longer hash the same (an
  in-place rewrite, even one that keeps the size), it starts over
  (``generation`` goes up so dependents know). A rewrite that leaves those
  bytes alone (an edit further back in a long ledger) is not seen by the
  incremental reader; ``verify``, which reads everything again, catches it.

The append side (the lock, the fsync, the group commit) is ``ledger.append``: a
read loads none of it. Nothing here knows about boxes, rosters or fates.
"""
from __future__ import annotations

import os
import threading
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Sequence
from itertools import repeat
from pathlib import Path

import msgspec
from msgspec.structs import force_setattr

from dovecote.errors import StoreError
from dovecote.model.ids import line_ids
from dovecote.model.letters import Letter, decode_line, decode_lines_fast
from dovecote.util import fileops
from dovecote.util.digests import blake2b
from dovecote.util.osutil import collector_paused, lock

#: How many bytes before a reader's offset it hashes to notice an in-place rewrite.
WINDOW = 4096
#: A reader ``bound`` meaning "the file did not exist when the snapshot was taken".
ABSENT = -1


def window_digest(data: bytes) -> str:
    """The digest a checkpoint keeps of the bytes just before its offset."""
    return blake2b(data, digest_size=16).hexdigest()


class Defect(msgspec.Struct, frozen=True):
    """A line that is not a letter: ``torn`` (no newline yet) or ``malformed``."""

    path: str
    line: int
    kind: str
    detail: str

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "kind": self.kind, "detail": self.detail}


class Checkpoint(msgspec.Struct, frozen=True):
    """Where a reader stopped: enough to resume and to notice a replaced file.

    ``window`` is ``window_digest`` of the (up to ``WINDOW``) bytes before
    ``offset``: the same inode and size with other bytes there is another file.
    """

    ino: int
    offset: int
    line_no: int
    window: str = ""


def fsync_dir(path: Path) -> None:
    fileops.fsync_dir(path)


def ensure_dir(path: Path) -> None:
    """Create ``path`` and any missing parents, fsyncing each parent that changed."""
    fileops.make_dirs(path)


def write_atomic(path: Path, data: bytes | Iterable[bytes], *, mode: int = 0o666) -> None:
    """Replace a whole (cache) file durably, creating its folder: ``fileops.replace_file``, fsynced."""
    ensure_dir(path.parent)
    fileops.replace_file(path, data, mode=mode)


def settled_size(path: Path) -> int:
    """The ledger's size between appends (``ABSENT`` if there is none): taken under a
    shared lock, so it never falls inside a line a writer is appending."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return ABSENT
    except OSError as e:
        raise StoreError(f"cannot open {path}: {e.strerror or e}") from e
    try:
        lock(fd, shared=True)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


class LedgerReader:
    """Incremental reader of one ledger file.

    ``letters`` holds each distinct letter once, in file order; ``index`` maps
    id to letter. A line whose id is already present is counted in
    ``duplicates`` and otherwise ignored.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.RLock()
        #: read no further than this byte (``ABSENT``: as if the file did not exist);
        #: None reads to the end. ``verify`` sets it to read one fixed snapshot.
        self.bound: int | None = None
        self._reset()

    def _reset(self) -> None:
        self.letters: list[Letter] = []
        self.index: dict[str, Letter] = {}
        self.defects: list[Defect] = []
        self.torn: Defect | None = None
        self.duplicates = 0
        self.offset = 0
        self.line_no = 0
        self.ino: int | None = None
        #: the (up to WINDOW) bytes before ``offset``, kept to compare (None: a resumed
        #: reader, which knows only their digest until it has read past its checkpoint)
        self._tail: bytes | None = b""
        self._digest: str | None = None  # window_digest(_tail), once asked for
        #: (size, mtime, ctime) when last read through: unchanged means nothing to check
        self._stamp: tuple[int, int, int] | None = None
        #: every offset this generation reached, and how many letters were read by then:
        #: what turns a store cursor (a byte offset) back into a place in ``letters``
        self._mark_offsets = array("q", [0])
        self._mark_counts = array("q", [0])
        self.generation = getattr(self, "generation", -1) + 1

    @property
    def exists(self) -> bool:
        return self.ino is not None

    def count_at(self, offset: int) -> int | None:
        """How many of ``letters`` had been read when the reader stood at ``offset``
        (None: it never stood there in this generation, so the caller starts over)."""
        if offset == self.offset:
            return len(self.letters)
        i = bisect_left(self._mark_offsets, offset)
        if i < len(self._mark_offsets) and self._mark_offsets[i] == offset:
            return self._mark_counts[i]
        return None

    def checkpoint(self) -> Checkpoint:
        if self._digest is None:
            self._digest = window_digest(self._tail or b"")
        return Checkpoint(self.ino or 0, self.offset, self.line_no, self._digest)

    @classmethod
    def resume(cls, path: Path, cp: Checkpoint) -> LedgerReader:
        """A reader that starts at ``cp``: its first refresh reads only newer bytes.

        If the file was replaced or no longer matches, the reader starts from
        zero instead and ``generation`` is 1, so the caller drops its state.
        """
        r = cls(path)
        r.offset, r.line_no, r.ino = cp.offset, cp.line_no, cp.ino
        r._tail, r._digest = None, cp.window
        r._mark_offsets[0] = cp.offset
        return r

    def refresh(self) -> list[Letter]:
        """Read what was appended since the last call; return the new letters."""
        with self.lock:
            try:
                return self._refresh()
            except OSError as e:
                raise StoreError(f"cannot read {self.path}: {e.strerror or e}") from e

    def _refresh(self) -> list[Letter]:
        bound = self.bound
        try:
            if bound == ABSENT:
                raise FileNotFoundError(self.path)
            st = os.stat(self.path)
        except FileNotFoundError:
            if self.ino is not None or self.offset:
                self._reset()
            return []
        size = st.st_size if bound is None else min(st.st_size, bound)
        if self.ino is not None and (st.st_ino != self.ino or size < self.offset):
            self._reset()
        self.ino = st.st_ino
        stamp = (size, st.st_mtime_ns, st.st_ctime_ns)
        if stamp == self._stamp or size == self.offset == 0:
            return []  # untouched since the last read (a same-tick rewrite is the one blind spot)
        with open(self.path, "rb") as f:
            start = self.offset
            head = b""
            if start:
                f.seek(start - min(WINDOW, start))
                head = f.read(min(WINDOW, start))
                known = head == self._tail if self._tail is not None else window_digest(head) == self._digest
                if not known:  # rewritten in place: start over
                    self._reset()
                    self.ino = st.st_ino
                    start = 0
                    head = b""
                    f.seek(0)
            data = f.read(size - start)
        new = self._absorb(data, start, head)
        self._stamp = stamp
        return new

    def took_own(self, payload: bytes, start: int, fd: int, ids: Sequence[str] = ()) -> bool:
        """Read the bytes this process just appended at ``start`` under the lock, from
        memory: the ones a refresh would read back from the file (True), unless the reader
        did not stand at ``start`` or the file is not the size those bytes make it (False:
        the caller refreshes). ``ids``: the payload is these new letters' lines, each ended
        by a newline, their ids computed already (and checked absent from ``index``)."""
        with self.lock:
            if self.offset != start or self.torn is not None or self._tail is None or self.bound is not None:
                return False
            st = os.fstat(fd)
            if st.st_size != start + len(payload) or st.st_ino != self.ino:
                return False
            self._absorb(payload, start, self._tail, ids)
            self._stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            return True

    def _absorb(self, data: bytes, start: int, head: bytes = b"", ids: Sequence[str] = ()) -> list[Letter]:
        """Take the complete lines of ``data`` (read from ``start``; ``head`` is
        the window of bytes before it, so the window before the new offset can be kept).
        ``ids``: the lines' ids, when the caller computed them already (its own append)."""
        end = data.rfind(b"\n")
        if end < len(data) - 1:
            tail_line = self.line_no + data.count(b"\n", 0, end + 1) + 1
            self.torn = Defect(str(self.path), tail_line, "torn", "last line has no newline yet")
        else:
            self.torn = None
        if end < 0:
            return []
        chunk = data[:end]
        lines = chunk.split(b"\n")
        self.offset = start + end + 1
        need = min(WINDOW, self.offset)
        if end + 1 >= need:
            self._tail = data[end + 1 - need : end + 1]
        else:
            self._tail = head[len(head) - (need - end - 1) :] + data[: end + 1]
        self._digest = None
        index = self.index
        line_no = self.line_no
        letters = self.letters
        before = len(letters)
        with collector_paused():
            fast = None if b"\r" in chunk else decode_lines_fast(chunk, lines)
            if fast is not None:
                lids = ids if len(ids) == len(lines) else line_ids(lines)
                fresh = dict(zip(lids, fast, strict=True))
                if len(fresh) == len(lids) and index.keys().isdisjoint(fresh):
                    # No line repeats a letter (the usual case): each step is mapped at C speed,
                    # with no Python loop over the lines (a cold sweep reads every line of every box).
                    deque(map(force_setattr, fast, repeat("id"), lids), maxlen=0)
                    deque(map(force_setattr, fast, repeat("raw"), lines), maxlen=0)
                    index.update(fresh)
                    letters.extend(fast)
                else:
                    for line, letter, lid in zip(lines, fast, lids, strict=True):
                        if lid in index:
                            self.duplicates += 1
                            continue
                        force_setattr(letter, "id", lid)
                        force_setattr(letter, "raw", line)
                        index[lid] = letter
                        letters.append(letter)
                line_no += len(lines)
            else:
                line_no = self._absorb_slowly(lines, line_no)
        self.line_no = line_no
        self._mark_offsets.append(self.offset)
        self._mark_counts.append(len(letters))
        return letters[before:]


    def _absorb_slowly(self, lines: list[bytes], line_no: int) -> int:
        """Line by line: blank lines skipped, malformed ones reported."""
        index = self.index
        for line in lines:
            line_no += 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line or line.isspace():
                continue
            letter = decode_line(line)
            if letter is None:
                self.defects.append(Defect(str(self.path), line_no, "malformed", "not a JSON object"))
            elif letter.id in index:
                self.duplicates += 1
            else:
                index[letter.id] = letter
                self.letters.append(letter)
        return line_no

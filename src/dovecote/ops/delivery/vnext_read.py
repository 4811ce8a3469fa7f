"""Reading a vNext mailbox directory into values: the one place ``import vnext`` touches its files.

Law: this module only reads. It opens files with ``O_RDONLY``, never follows a
symbolic link, never creates, moves or rewrites anything (the vNext tools
still own the tree; a test hashes it before and after). Everything after the
read (migration, drift, counts, letters) is a pure function over the values
returned here (``derive.delivery.vnext_trackers``, ``ops.delivery.import_vnext``).

The layout it knows (notes B1)::

    intake/{pending,processed,quarantine}/<envelope_id>.json   envelopes (send_mail.py)
    agents/<agent>/{inbox,outbox,received}/<envelope_id>.json  copies of delivered envelopes
    agents/<agent>/acks/<envelope_id>.json                     ack files (write_ack.py)
    haiku/tracking/<delivery_id>.json                          trackers, legacy or v3
    ledger/**/*.jsonl                                          event rows (mailbox-event-v1)

A file that cannot be read as what it should be is a ``Malformed`` value with a
keyword (``invalid_json``, ``not_an_object``, ``not_utf8``, ``unreadable``
(including a folder where a file belongs), ``symlink``), never an exception: the vNext status view crashed on one bad
tracker (B13.11); this reader names it and reads on. Paths are reported
relative to the root. Files are read in name order, as the vNext tools do.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import orjson

from dovecote.model.vnext_tree import AckFile, Copy, Malformed, Record, Row, VnextTree

#: The intake folders, in the order an envelope moves through them.
INTAKE_FOLDERS = ("pending", "processed", "quarantine")
#: The folders of an agent that hold envelope copies (``responses/`` is never written: B1).
COPY_FOLDERS = ("inbox", "outbox", "received")


class _Reader:
    """Reads under one root, collecting what is malformed instead of raising."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.malformed: list[Malformed] = []

    def rel(self, path: Path) -> str:
        rel = path.relative_to(self.root).as_posix()
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")

    def bad(self, path: Path, reason: str, detail: str, line: int | None = None) -> None:
        self.malformed.append(Malformed(self.rel(path), reason, detail, line))

    def entries(self, folder: Path, suffix: str) -> list[Path]:
        """The regular files named ``*<suffix>`` directly in ``folder``, sorted; links are reported."""
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            return []
        except OSError as e:
            self.bad(folder, "unreadable", e.strerror or str(e))
            return []
        if stat.S_ISLNK(st.st_mode):
            self.bad(folder, "symlink", "a symbolic link is never followed")
            return []
        if not stat.S_ISDIR(st.st_mode):
            return []
        out = []
        for p, mode in self.listing(folder):
            if not p.name.endswith(suffix):
                continue
            if stat.S_ISLNK(mode):
                self.bad(p, "symlink", "a symbolic link is never followed")
            elif stat.S_ISREG(mode):
                out.append(p)
            else:
                self.bad(p, "unreadable", "not a regular file")
        return out

    def listing(self, folder: Path) -> list[tuple[Path, int]]:
        """The entries of ``folder`` (dot-files skipped, sorted) with their ``lstat`` modes; what cannot
        be listed or stat'ed is reported ``unreadable``, never raised."""
        try:
            names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
        except FileNotFoundError:
            return []
        except OSError as e:
            self.bad(folder, "unreadable", e.strerror or str(e))
            return []
        out = []
        for name in names:
            try:
                out.append((folder / name, os.lstat(folder / name).st_mode))
            except OSError as e:
                self.bad(folder / name, "unreadable", e.strerror or str(e))
        return out

    def subdirs(self, folder: Path) -> list[str]:
        """The folders directly in ``folder``; a symbolic link in their place is reported, never followed."""
        out = []
        for p, mode in self.listing(folder):
            if stat.S_ISLNK(mode):
                self.bad(p, "symlink", "a symbolic link is never followed")
            elif stat.S_ISDIR(mode):
                out.append(p.name)
        return out

    def raw(self, path: Path) -> bytes | None:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as e:
            self.bad(path, "unreadable", e.strerror or str(e))
            return None
        try:
            with os.fdopen(fd, "rb") as f:
                return f.read()
        except OSError as e:  # an I/O error after the open
            self.bad(path, "unreadable", e.strerror or str(e))
            return None

    def obj(self, path: Path, data: bytes, line: int | None = None) -> dict[str, Any] | None:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            self.bad(path, "not_utf8", "the bytes are not UTF-8 text", line)
            return None
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            self.bad(path, "invalid_json", str(e).split(":")[0], line)
            return None
        if not isinstance(value, dict):
            self.bad(path, "not_an_object", f"holds a JSON {type(value).__name__}, not an object", line)
            return None
        return value

    def records(self, folder: Path) -> tuple[Record, ...]:
        out = []
        for p in self.entries(folder, ".json"):
            data = self.raw(p)
            if data is None:
                continue
            value = self.obj(p, data)
            if value is not None:
                out.append(Record(self.rel(p), value))
        return tuple(out)

    def jsonl(self, folder: Path) -> list[Row]:
        """Every row of every ``*.jsonl`` under ``folder`` (recursively, sorted; blank lines skipped)."""
        rows: list[Row] = []
        for p in self.entries(folder, ".jsonl"):
            data = self.raw(p)
            if data is None:
                continue
            for n, line in enumerate(data.split(b"\n"), 1):
                if line.strip():
                    value = self.obj(p, line, n)
                    if value is not None:
                        rows.append(Row(self.rel(p), n, value))
        for sub in self.subdirs(folder):
            rows += self.jsonl(folder / sub)
        return rows


def read_tree(root: Path) -> VnextTree:
    """The values of the vNext mailbox at ``root`` (which must be a directory: the caller checks)."""
    r = _Reader(root)
    intake = {name: r.records(root / "intake" / name) for name in INTAKE_FOLDERS}
    agents = tuple(r.subdirs(root / "agents"))
    copies: list[Copy] = []
    acks: list[AckFile] = []
    for agent in agents:
        for folder in COPY_FOLDERS:
            copies += [Copy(agent, folder, rec) for rec in r.records(root / "agents" / agent / folder)]
        acks += [AckFile(agent, rec) for rec in r.records(root / "agents" / agent / "acks")]
    trackers = r.records(root / "haiku" / "tracking")
    rows = tuple(r.jsonl(root / "ledger"))
    return VnextTree(
        root=str(root), intake=intake, copies=tuple(copies), acks=tuple(acks), trackers=trackers,
        rows=rows, malformed=tuple(r.malformed), agents=agents,
    )

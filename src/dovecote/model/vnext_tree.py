"""A vNext mailbox directory as values: what ``ops.delivery.vnext_read`` reads, and the pure folds take.

The values live in the model (not beside the reader) so that the folds over them
(``derive.delivery.vnext_letters``, ``derive.delivery.vnext_trackers``) never
import the module that touches the files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Record:
    """One JSON object file: where it is (relative to the root) and what it holds."""

    path: str
    obj: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Row:
    """One JSONL ledger row: its file, its line number (from 1) and its object."""

    path: str
    line: int
    obj: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Malformed:
    """A file (or a ledger line) that is not what its place says it is, with the keyword why."""

    path: str
    reason: str
    detail: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "reason": self.reason, "detail": self.detail}
        if self.line is not None:
            out["line"] = self.line
        return out


@dataclass(frozen=True, slots=True)
class Copy:
    """An envelope copy in an agent's folder: whose folder and which one."""

    agent: str
    folder: str
    record: Record


@dataclass(frozen=True, slots=True)
class AckFile:
    """An ack file ``agents/<agent>/acks/<name>.json`` (write_ack.py), not yet reconciled."""

    agent: str
    record: Record


@dataclass(frozen=True)
class VnextTree:
    """Everything a vNext mailbox directory holds, as values."""

    root: str
    intake: dict[str, tuple[Record, ...]]
    copies: tuple[Copy, ...]
    acks: tuple[AckFile, ...]
    trackers: tuple[Record, ...]
    rows: tuple[Row, ...]
    malformed: tuple[Malformed, ...]
    agents: tuple[str, ...] = field(default=())

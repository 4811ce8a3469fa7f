"""The JSON the reports' rich answers write, as types: a sweep's, a box's and a distribution's.

A sweep and a box stay rich values (a sweep streams its rows a batch at a time from the fold, never
all at once; a distribution's ``elsewhere`` is the ids, its JSON their count and the ids), so their
JSON is written by their own ``to_dict``. These Structs describe that JSON key for key, in order, so
the OpenAPI's response schemas and MCP's output schemas are generated from a type, not listed by
hand; ``tests/handle/test_http_responses.py`` checks that every answer decodes as its shape and
encodes back to the same bytes.
"""

from __future__ import annotations

import msgspec

from dovecote.ledger.jsonl import Defect
from dovecote.model.results import Result


class FateCounts(Result, frozen=True):
    """Letters counted by fate (``derive.fates``), in precedence order reversed: the open ones first."""

    wet_ink: int
    in_flight: int
    fired_clay: int
    external: int


class LetterRow(Result, frozen=True):
    """One field report or receipt as a sweep or a box lists it (``sweep._book_batches``)."""

    id: str
    ts: str | None
    agent: str | None
    klass: str | None = msgspec.field(name="class")
    repo: str | None
    brain: str | None
    tool: str | None
    what: str | None
    answers: list[str]
    answered_by: list[str]
    fate: str | None  # None: a receipt (a closing letter has no fate)
    box: str | None


class PendingName(Result, frozen=True):
    """A name whose letters wait in the spool, why (unreachable, ambiguous_name, unknown_project), and how many."""

    name: str
    reason: str
    letters: int


class Elsewhere(Result, frozen=True):
    """The filed letters today's law would file in another box: how many, and their ids."""

    letters: int
    ids: list[str]


class DistributionAnswer(Result, frozen=True):
    """The JSON of ``distribute.Distribution``."""

    spool_total: int
    appended: int
    to_project: int
    to_home: int
    pending: list[str]
    pending_detail: list[PendingName]
    elsewhere: Elsewhere


class SweepAnswer(Result, frozen=True):
    """The JSON of ``sweep.SweepResult``: its numbers, the case overlay, what it could not read, its rows."""

    schema: str
    spool_path: str
    distribution: DistributionAnswer | None
    total: int
    open: int
    counts: FateCounts
    receipts: int
    misdelivery: int
    recurrence: dict[str, int]
    kindless: int
    unreachable: list[str]
    malformed: list[Defect]
    letters: list[LetterRow]


class BoxAnswer(Result, frozen=True):
    """The JSON of ``box.BoxContents``: one box's letters counted by kind, its field reports' fates, its rows."""

    box: str
    exists: bool
    known: bool
    held: int
    by_kind: dict[str, int]
    total: int
    open: int
    counts: FateCounts
    receipts: int
    malformed: list[Defect]
    letters: list[LetterRow]

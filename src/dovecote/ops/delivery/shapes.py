"""The JSON delivery's plain answers write, as types: an intake run's, a mailman pass's and a work send's.

``IntakeRun``, ``Pass`` and ``Sent`` are built up while the run goes (a row per file, per box, per
recipient), and their ``to_dict`` writes counts beside the rows. These Structs describe that JSON key
for key, in order, so the OpenAPI's response schemas and MCP's output schemas are generated from a
type, not listed by hand; ``tests/handle/test_http_responses.py`` checks each answer against its shape.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dovecote.model.results import Result


class Quarantined(Result, frozen=True):
    """An envelope file that can never be delivered, and why (its reason keyword and the detail)."""

    file: str
    reason: str
    detail: str


class LeftPending(Result, frozen=True):
    """An envelope file left in pending/ (a box that could not be written: the next run retries it)."""

    file: str
    error: str


class IntakeAnswer(Result, frozen=True):
    """The JSON of ``intake.IntakeRun``."""

    dir: str
    seen: int
    processed: int
    quarantined: int
    left_pending: int
    letters_appended: int
    letters_present: int
    quarantine: list[Quarantined]
    pending: list[LeftPending]


class BoxError(Result, frozen=True):
    """A box a reconcile pass could not write."""

    box: str
    error: str


class ReconcileAnswer(Result, frozen=True):
    """The JSON of ``mailman.Reconciled``: the engine letters one pass appended, by kind."""

    open_checked: int
    repings: int
    timeouts: int
    escalations: int
    nudges_claimed: int
    errors: list[BoxError]


class PassAnswer(Result, frozen=True):
    """The JSON of ``mailman.Pass``."""

    ts: str
    notify_mode: str
    intake: IntakeAnswer
    reconcile: ReconcileAnswer


class SentRow(Result, frozen=True):
    """One recipient's delivery of a work send: its letter id, and whether this call appended it."""

    id: str
    to: str
    appended: bool


class SentAnswer(Result, frozen=True):
    """The JSON of ``work_send.Sent``: a task, a response or a broadcast, one row per delivery (``id`` and
    ``to`` are the one delivery's, null for several)."""

    type: str
    sender: str = msgspec.field(name="from")
    envelope_id: str | None
    work_item_id: str | None
    thread_id: str | None
    parent_id: str | None
    parent_inferred: dict[str, Any] | None
    count: int
    id: str | None
    to: str | None
    appended: bool
    deliveries: list[SentRow]

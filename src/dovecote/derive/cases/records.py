"""The case fold's records: one row per witness, receipt, engine letter and monitor definition, and
``CaseState``, the whole fold as one msgspec value.

``derive.cases.book`` folds letters into these; a snapshot of a ``CaseState`` is the fold's whole
cache (``ops.warm.cases``), so these rows are positional (``array_like``) and hold no cycles (``gc=False``).
"""

from __future__ import annotations

import msgspec


class Witness(msgspec.Struct, array_like=True, gc=False):
    key: str  # instant_text(ts) + id: the case's order
    id: str
    ts: str | None
    fingerprint: str
    box: str | None  # the first box (by label) holding it; None while only the spool does
    brain: str | None
    repo: str | None
    honesty: bool


class Receipt(msgspec.Struct, array_like=True, gc=False):
    key: str
    id: str
    ts: str | None
    fingerprint: str | None
    case_id: str | None
    disposition: str | None
    ref: str | None
    probe: str | None
    expect: str | None
    answers: list[str]
    box: str | None


class Engine(msgspec.Struct, array_like=True, gc=False):
    id: str
    role: str  # escalation, regression, green, monitor_down, monitor_up, abandonment
    fingerprint: str | None
    streak: int
    subject: str | None  # the monitor's name, the session id
    box: str | None


class MonitorDef(msgspec.Struct, array_like=True, gc=False):
    key: str
    id: str
    ts: str | None
    name: str
    expect: str
    every: str
    grace: str | None
    paused: bool


class CaseState(msgspec.Struct, array_like=True):
    """Everything the fold knows; a snapshot of it is the whole cache."""

    seen: list[str] = msgspec.field(default_factory=list)
    kindless: int = 0
    witnesses: list[Witness] = msgspec.field(default_factory=list)
    receipts: list[Receipt] = msgspec.field(default_factory=list)
    engine: list[Engine] = msgspec.field(default_factory=list)
    closed: list[str] = msgspec.field(default_factory=list)  # answered by a receipt: witnesses, or not seen yet
    monitors: list[MonitorDef] = msgspec.field(default_factory=list)
    #: each distinct (agent, brain, class, kind, repo, symptom, tool) of a report, and its newest time key
    signatures: list[tuple[tuple[str | None, ...], tuple[str, str | None]]] = msgspec.field(default_factory=list)

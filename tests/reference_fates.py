"""The fate fold's stated spec: DESIGN 3 written as directly as possible.

``derive.fates.FateBook`` is incremental and fast; this is slow and obvious.
The property tests in ``test_fates.py`` check that any order and batching of
arrivals folds to exactly what ``reference`` says.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dovecote.model.letters import Letter
from dovecote.model.vocab import REPORT_KINDS


@dataclass
class Reference:
    fates: dict[str, str | None]
    counts: dict[str, int]
    receipts: int
    misdelivery: int
    open_ids: list[str]
    all_ids: list[str]
    answered_by: dict[str, list[str]]


def reference(letters: Iterable[Letter], markers: Sequence[str]) -> Reference:
    """DESIGN 3, written as directly as possible."""
    reports: dict[str, Letter] = {}
    for lt in letters:
        if lt.kind in REPORT_KINDS and lt.id not in reports:
            reports[lt.id] = lt

    def is_receipt(lt: Letter) -> bool:
        return isinstance(lt.klass, str) and lt.klass.lower() == "triage"

    closed = {a for lt in reports.values() if is_receipt(lt) for a in lt.answers or ()}
    picked = {a for lt in reports.values() if not is_receipt(lt) for a in lt.answers or ()}
    fates: dict[str, str | None] = {}
    for i, lt in reports.items():
        if is_receipt(lt):
            fates[i] = None
        elif lt.tool is not None and any(m.lower() in lt.tool.lower() for m in markers):
            fates[i] = "external"
        elif i in closed:
            fates[i] = "fired_clay"
        elif i in picked:
            fates[i] = "in_flight"
        else:
            fates[i] = "wet_ink"
    counts = {f: sum(1 for v in fates.values() if v == f) for f in ("external", "fired_clay", "in_flight", "wet_ink")}
    key = {i: (reports[i].ts or "", i) for i in reports}
    refs: dict[str, set[str]] = {}
    for lt in reports.values():
        for a in lt.answers or ():
            refs.setdefault(a, set()).add(lt.id)
    return Reference(
        fates=fates,
        counts=counts,
        receipts=sum(1 for v in reports.values() if is_receipt(v)),
        misdelivery=sum(1 for v in reports.values() if v.klass == "memory_misdelivery"),
        open_ids=sorted((i for i, f in fates.items() if f in ("wet_ink", "in_flight")), key=key.__getitem__),
        all_ids=sorted(reports, key=key.__getitem__),
        answered_by={i: sorted(v) for i, v in refs.items()},
    )

"""Claim vs measure (R11 organ 4): what honesty letters claimed, against what their receipts measured.

Counts only (CASE-INV-6): per fingerprint of honesty letters, ``claimed_right``
(the latest receipt with a disposition that answers it says ``fixed``: the
tool was wrong, as claimed), ``claimed_wrong`` (``declined``), ``unresolved``
(no such receipt, or ``moot``), always beside ``claims``, their denominator.
No score is ever computed. Pure: a function of the case fold.
"""

from __future__ import annotations

from typing import Any

from dovecote.derive.cases.book import CaseBook
from dovecote.derive.cases.records import Receipt

CLAIM_COUNTS = ("claims", "claimed_right", "claimed_wrong", "unresolved")
_CLAIM = {"fixed": "claimed_right", "declined": "claimed_wrong", "moot": "unresolved"}



def claims(book: CaseBook) -> dict[str, Any]:
    """Claim vs measure (organ 4), counts only: per fingerprint of honesty letters,
    claimed_right (a fixed receipt answers it), claimed_wrong (declined) and unresolved."""
    verdict = _verdicts(book)
    per: dict[str, dict[str, int]] = {}
    for w in book.witnesses.values():
        if not w.honesty:
            continue
        row = per.setdefault(w.fingerprint, dict.fromkeys(CLAIM_COUNTS, 0))
        row["claims"] += 1
        got = verdict.get(w.id)
        row[_CLAIM.get(got.disposition or "", "unresolved") if got else "unresolved"] += 1
    totals = {k: sum(r[k] for r in per.values()) for k in CLAIM_COUNTS}
    return {"by_fingerprint": {k: per[k] for k in sorted(per)}, "totals": totals}


def _verdicts(book: CaseBook) -> dict[str, Receipt]:
    """Each answered id's deciding receipt: the latest one with a disposition."""
    out: dict[str, Receipt] = {}
    for r in sorted(book.receipts.values(), key=lambda r: r.key):
        if r.disposition is not None:
            for a in r.answers:
                out[a] = r
    return out


def labels(book: CaseBook) -> list[dict[str, Any]]:
    """One field-label row per resolved claim (signal: the family's verdict channel;
    label: what the receipt measured), in letter order."""
    verdict = _verdicts(book)
    rows = []
    for w in sorted(book.witnesses.values(), key=lambda w: w.key):
        got = verdict.get(w.id)
        if not w.honesty or got is None or got.disposition not in _CLAIM or _CLAIM[got.disposition] == "unresolved":
            continue
        family, _, symptom = w.fingerprint[3:].rpartition("/")
        rows.append({
            "signal": f"{family}/verdict", "claim": symptom, "label": _CLAIM[got.disposition],
            "fingerprint": w.fingerprint, "letter": w.id, "receipt": got.id,
        })
    return rows


CLAIM_COUNTS = ("claims", "claimed_right", "claimed_wrong", "unresolved")

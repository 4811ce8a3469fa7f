"""Closed vocabularies. Each list lives here and nowhere else.

Extending one of these is a design change (it changes which letters group and
which inputs are refused), so it is a code change with a test, never a config
knob.
"""

from __future__ import annotations

#: Field-report classes a writer may use. ``triage`` marks a receipt.
REPORT_CLASSES: tuple[str, ...] = (
    "bug",
    "friction",
    "honesty",
    "memory_misdelivery",
    "triage",
    "win",
)

#: The class that makes a letter a receipt (compared case-insensitively).
RECEIPT_CLASS = "triage"

#: The class counted as a memory misdelivery (compared exactly, as m1nd does).
MISDELIVERY_CLASS = "memory_misdelivery"

#: Sub-kinds of a memory misdelivery (MEDULLA 9.1). Legacy m1nd lines carry the
#: sub-kind in ``kind``; dovecote writers put it in ``misdelivery_kind``.
MISDELIVERY_KINDS: tuple[str, ...] = (
    "false_absence",
    "leak",
    "misattribution",
    "vanished",
    "wrong_store_write",
)

#: Symptom kinds for fingerprints (R11). There is no "other" bucket.
SYMPTOMS: tuple[str, ...] = (
    "crash",
    "false_absence",
    "overclaimed_verdict",
    "scope_escape",
    "silent_drop",
    "stale_claim",
    "ux_confusion",
    "wrong_route",
)

#: Receipt dispositions.
DISPOSITIONS: tuple[str, ...] = ("declined", "fixed", "moot")

#: Foreign-tool markers a new roster starts with. The roster holds the live list.
DEFAULT_FOREIGN_MARKERS: tuple[str, ...] = ("browseros", "context7", "playwright", "semgrep")

#: The one author name reserved for letters dovecote itself mints.
ENGINE_AGENT = "dovecote:engine"

#: Fates, in precedence order (highest first).
FATES: tuple[str, ...] = ("external", "fired_clay", "in_flight", "wet_ink")

#: ``kind`` values that still make a letter a field report: absent, ``report``,
#: and the legacy m1nd lines whose ``kind`` carries a symptom or misdelivery sub-kind.
REPORT_KINDS: frozenset[str | None] = frozenset(
    {None, "report", *MISDELIVERY_KINDS, *SYMPTOMS}
)

#: Message priorities, most urgent first (the inbox orders by this, then age).
PRIORITIES: tuple[str, ...] = ("urgent", "high", "normal", "low")

#: Envelope categories and trust levels (the /inbox skill's schema 1.0).
CATEGORIES: tuple[str, ...] = ("query", "response", "notification", "directive")
TRUST_LEVELS: tuple[str, ...] = ("operator", "peer", "subordinate", "visitor")

#: Categories whose items expect a response unless the sender said otherwise.
RESPONSE_CATEGORIES: frozenset[str] = frozenset({"query", "directive"})

"""Closed vocabularies. Each list lives here and nowhere else.

Extending one of these is a design change (it changes which letters group and
which inputs are refused), so it is a code change with a test, never a config
knob.
"""

from __future__ import annotations

import unicodedata
from enum import StrEnum

# Each closed list below is a ``StrEnum`` (the typed verbs in ``verbs.py`` and
# their JSON schemas take it as is) and a tuple of its values (what the
# readers and writers compare against). The enum is the one source.


class ReportClass(StrEnum):
    """Field-report classes a writer may use. ``triage`` marks a receipt."""

    bug = "bug"
    friction = "friction"
    honesty = "honesty"
    memory_misdelivery = "memory_misdelivery"
    triage = "triage"
    win = "win"


REPORT_CLASSES: tuple[str, ...] = tuple(c.value for c in ReportClass)

#: The class that makes a letter a receipt (compared case-insensitively).
RECEIPT_CLASS = ReportClass.triage.value
#: Classes never counted kindless in a case: a win is no trouble, a receipt is no witness (the case fold and
#: the cases page both read it here).
NOT_TROUBLE: frozenset[str] = frozenset({ReportClass.win.value, RECEIPT_CLASS})

#: The class counted as a memory misdelivery (compared exactly, as m1nd does).
MISDELIVERY_CLASS = ReportClass.memory_misdelivery.value


class MisdeliveryKind(StrEnum):
    """Sub-kinds of a memory misdelivery (MEDULLA 9.1). Legacy m1nd lines carry the
    sub-kind in ``kind``; dovecote writers put it in ``misdelivery_kind``."""

    false_absence = "false_absence"
    leak = "leak"
    misattribution = "misattribution"
    vanished = "vanished"
    wrong_store_write = "wrong_store_write"


MISDELIVERY_KINDS: tuple[str, ...] = tuple(k.value for k in MisdeliveryKind)


class Symptom(StrEnum):
    """Symptom kinds for fingerprints (R11). There is no "other" bucket."""

    crash = "crash"
    false_absence = "false_absence"
    overclaimed_verdict = "overclaimed_verdict"
    scope_escape = "scope_escape"
    silent_drop = "silent_drop"
    stale_claim = "stale_claim"
    ux_confusion = "ux_confusion"
    wrong_route = "wrong_route"


SYMPTOMS: tuple[str, ...] = tuple(s.value for s in Symptom)


class Disposition(StrEnum):
    """Receipt dispositions."""

    declined = "declined"
    fixed = "fixed"
    moot = "moot"


DISPOSITIONS: tuple[str, ...] = tuple(d.value for d in Disposition)

class SentinelExpect(StrEnum):
    """What a sentinel probe must show to be green."""

    absent = "absent"  # it printed nothing (and exited 0, or 1 as grep does when nothing matched)
    exit0 = "exit0"  # it exited 0


#: Foreign-tool markers a new roster starts with. The roster holds the live list.
DEFAULT_FOREIGN_MARKERS: tuple[str, ...] = ("browseros", "context7", "playwright", "semgrep")

#: The one author name reserved for letters dovecote itself mints.
ENGINE_AGENT = "dovecote:engine"


def looks_like_engine(name: str) -> bool:
    """Whether ``name`` would read as the engine's: equal to it after compatibility normalization (full-width
    letters), with invisible format characters (zero-width, bidi controls) dropped and case folded. The engine's
    own letters are told by the exact name, but a person reading ``Dovecote:Engine`` or ``dovecote:\u200bengine``
    would take it for the engine, so no author may take any of them. (Cross-script look-alikes, a Cyrillic
    ``е``, are not folded: that needs Unicode's confusables data.)"""
    folded = unicodedata.normalize("NFKC", name)
    return "".join(c for c in folded if unicodedata.category(c) != "Cf").casefold() == ENGINE_AGENT

class Fate(StrEnum):
    """A field report's fate, in precedence order (highest first)."""

    external = "external"
    fired_clay = "fired_clay"
    in_flight = "in_flight"
    wet_ink = "wet_ink"


#: Fates, in precedence order (highest first).
FATES: tuple[str, ...] = tuple(f.value for f in Fate)


class LetterKind(StrEnum):
    """A letter's ``kind``, where a reader or a writer names one: each kind is spelled here only.

    A reader compares ``letter.kind == LetterKind.draft``; a writer puts ``LetterKind.draft.value``
    in the letter (the bytes are the same text). Absent means a field report."""

    report = "report"
    message = "message"
    task = "task"
    response = "response"
    draft = "draft"
    sent = "sent"
    # the lifecycle moves (``derive/lifecycle.TRANSITIONS`` is keyed by these)
    claim = "claim"
    complete = "complete"
    defer = "defer"
    undefer = "undefer"
    nack = "nack"
    seen = "seen"
    unseen = "unseen"
    resurface = "resurface"
    # advisory file leases, in a project's box (``derive/leases``): taken, renewed, released
    lease = "lease"
    lease_renew = "lease_renew"
    lease_release = "lease_release"


#: ``kind`` values that still make a letter a field report: absent, ``report``,
#: and the legacy m1nd lines whose ``kind`` carries a symptom or misdelivery sub-kind.
REPORT_KINDS: frozenset[str | None] = frozenset(
    {None, LetterKind.report.value, *MISDELIVERY_KINDS, *SYMPTOMS}
)


class Priority(StrEnum):
    """Message priorities, most urgent first (the inbox orders by this, then age)."""

    urgent = "urgent"
    high = "high"
    normal = "normal"
    low = "low"


PRIORITIES: tuple[str, ...] = tuple(p.value for p in Priority)


class Category(StrEnum):
    """Envelope categories (the /inbox skill's schema 1.0)."""

    query = "query"
    response = "response"
    notification = "notification"
    directive = "directive"


CATEGORIES: tuple[str, ...] = tuple(c.value for c in Category)


class TrustLevel(StrEnum):
    """Envelope trust levels (the /inbox skill's schema 1.0), most trusted first; ``human`` (a person's own
    word, from the Human View's session) is the one level above it that no token's role may claim."""

    human = "human"
    operator = "operator"
    peer = "peer"
    subordinate = "subordinate"
    visitor = "visitor"


TRUST_LEVELS: tuple[str, ...] = tuple(t.value for t in TrustLevel)


class Direction(StrEnum):
    """Which side of an entity's mail an inbox reading shows."""

    inbound = "inbound"
    outbound = "outbound"
    both = "both"


DIRECTIONS: tuple[str, ...] = tuple(d.value for d in Direction)


class MoveKind(StrEnum):
    """The lifecycle moves a caller may make: every move kind but ``resurface`` (time's, never a caller's)."""

    claim = LetterKind.claim.value
    complete = LetterKind.complete.value
    defer = LetterKind.defer.value
    undefer = LetterKind.undefer.value
    nack = LetterKind.nack.value
    seen = LetterKind.seen.value
    unseen = LetterKind.unseen.value



class TokenRole(StrEnum):
    """What a token may reach: an agent its own box (and send to anyone), an operator every box."""

    agent = "agent"
    operator = "operator"


#: The role of the signed-in person at the Human View (its session, never a token: ``TokenRole`` has no such
#: role, so no token is issued with it); its trust cap is the one level no token's role reaches.
PERSON_ROLE = "person"


class HookAgent(StrEnum):
    """The agents whose hook configuration ``hooks install`` writes."""

    claude_code = "claude-code"
    codex = "codex"


#: Categories whose items expect a response unless the sender said otherwise.
RESPONSE_CATEGORIES: frozenset[str] = frozenset({"query", "directive"})


class LeaseState(StrEnum):
    """A lease's state, derived at read time from its letters and the clock (never stored)."""

    active = "active"
    released = "released"
    expired = "expired"

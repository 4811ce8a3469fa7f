"""The verbs of field reports and the case views: report, distribute, sweep, box, doctor, verify."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import Meta

from dovecote.model.addresses import parse_address
from dovecote.model.vocab import Disposition, MisdeliveryKind, ReportClass, Symptom
from dovecote.verbs.base import LetterId, Verb
from dovecote.verbs.limits import ITEMS, Body, Id, PathText


class Report(Verb, frozen=True):
    """One field report for the spool: the field-report schema, the one definition of what a report
    (or a receipt) may hold. The rules that tie one field to another are ``ops.reports.report.check_report``'s."""

    NOT_BLANK: ClassVar[tuple[str, ...]] = ("tool", "class", "what")

    tool: Annotated[Id, Meta(description="What the report is about.")]
    klass: Annotated[ReportClass, Meta(description="The report's class; triage makes it a receipt.")] = (
        msgspec.field(name="class")
    )
    what: Annotated[Body, Meta(description="What happened.")]
    repo: Annotated[PathText | None, Meta(description="The project (name or path).")] = None
    brain: Annotated[PathText | None, Meta(description="The project; beats repo.")] = None
    expected: Annotated[Body | None, Meta(description="What was expected.")] = None
    snippet: Annotated[Body | None, Meta(description="Evidence.")] = None
    symptom: Annotated[Symptom | None, Meta(description="The symptom.")] = None
    misdelivery_kind: Annotated[
        MisdeliveryKind | None, Meta(description="Required for a memory_misdelivery.")
    ] = None
    answers: Annotated[
        Annotated[list[LetterId], Meta(max_length=ITEMS)] | None,
        Meta(description="Ids this letter answers (a receipt)."),
    ] = None
    agent: Annotated[Id | None, Meta(description="The author (default: the acting agent).")] = None
    ts: Annotated[Id | None, Meta(description="ISO-8601 UTC (default: now).")] = None
    kind: Annotated[Id | None, Meta(description="The letter kind: absent or report.")] = None
    disposition: Annotated[Disposition | None, Meta(description="A receipt's verdict.")] = None
    fingerprint: Annotated[Id | None, Meta(description="A receipt's case: fp:<tool_family>/<symptom>.")] = None
    case_id: Annotated[Id | None, Meta(description="A receipt's case id.")] = None
    commit: Annotated[Id | None, Meta(description="A receipt's fix: its commit or ref.")] = None
    sentinel: Annotated[
        Annotated[dict[Id, PathText], Meta(max_length=ITEMS)] | None,
        Meta(description="A fixed receipt's probe, e.g. {probe, expect}."),
    ] = None

    def letter(self) -> dict[str, Any]:
        """The report as a letter object: the fields given, by their letter names."""
        return {k: v for k, v in msgspec.to_builtins(self).items() if v is not None}


class Distribute(Verb, frozen=True):
    """File every spool letter into exactly one box (a re-run appends 0)."""


IncludeAll = Annotated[bool, Meta(description="Every letter, not only open ones.")]


class Sweep(Verb, frozen=True):
    """Fates across the spool and every reachable box, each letter once."""

    distribute: Annotated[bool, Meta(description="Distribute the spool first.")] = True
    include_all: IncludeAll = False


class Box(Verb, frozen=True):
    """Read one box only (a box that does not exist reads zero)."""

    address: Annotated[Id, Meta(description="home, project:NAME or entity:ID.")]
    include_all: IncludeAll = False

    def __post_init__(self) -> None:
        super().__post_init__()
        parse_address(self.address)


class Doctor(Verb, frozen=True):
    """The mailbox block: counts only."""


class Verify(Verb, frozen=True):
    """Delete and rebuild every cache; every read must be byte-identical."""

"""The verbs of case intelligence: receipt, cases, case, sentinels, claims, monitors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from msgspec import Meta

from dovecote.model.vocab import Disposition, SentinelExpect
from dovecote.verbs.base import LetterId, Name, Verb
from dovecote.verbs.limits import COMMAND, ID, ITEMS, NAME, TEXT

FingerprintText = Annotated[str, Meta(min_length=1, max_length=ID)]
Short = Annotated[str, Meta(min_length=1, max_length=NAME)]
Command = Annotated[str, Meta(min_length=1, max_length=COMMAND)]
#: A duration: a number and a unit (s, m, h, d), e.g. 90s, 15m, 1h, 2d.
Duration = Annotated[str, Meta(pattern=r"^[1-9][0-9]{0,8}[smhd]$")]


class Receipt(Verb, frozen=True):
    """A triage receipt: it closes the letters it answers and names their case."""

    answers: Annotated[
        list[LetterId], Meta(min_length=1, max_length=ITEMS, description="The letters it answers (closes).")
    ]
    disposition: Annotated[Disposition, Meta(description="The verdict.")]
    fingerprint: Annotated[
        FingerprintText | None,
        Meta(description="fp:<tool_family>/<symptom> (default: the answered letters')."),
    ] = None
    case_id: Annotated[Short | None, Meta(description="An alias of the case.")] = None
    ref: Annotated[Short | None, Meta(description="The fix: a commit or change id.")] = None
    sentinel_probe: Annotated[
        Command | None, Meta(description="A fixed receipt's probe command (no shell).")
    ] = None
    sentinel_expect: Annotated[
        SentinelExpect | None, Meta(description="absent: no output; exit0: exit status 0.")
    ] = None


class Cases(Verb, frozen=True):
    """Every case: witnesses, first and last seen, boxes, receipt, label, the one-line case receipt."""

    box: Annotated[
        Annotated[str, Meta(max_length=ID)] | None,
        Meta(description="Only cases with a letter in this box."),
    ] = None


class Case(Verb, frozen=True):
    """One case whole, by fingerprint or case id."""

    fingerprint: Annotated[FingerprintText, Meta(description="The fingerprint, or a receipt's case id.")]


class Sentinels(Verb, frozen=True):
    """Run the probe of every fixed receipt; a red probe mints one regression letter per red streak."""

    timeout: Annotated[float, Meta(gt=0, le=600, description="Seconds each probe may run.")] = 30.0


class Claims(Verb, frozen=True):
    """Claim vs measure: per fingerprint, claimed right, claimed wrong, unresolved (counts only)."""

    write_labels: Annotated[
        bool, Meta(description="Append resolved claims as labels.")
    ] = False


class MonitorAdd(Verb, frozen=True):
    """A dead-man's switch: expect a matching letter at least every period."""

    NAMES: ClassVar[Mapping[str, str]] = {"name": "monitor name"}

    name: Annotated[Name, Meta(description="The monitor's name.")]
    expect: Annotated[
        str,
        Meta(min_length=1, max_length=TEXT, description="The letters that count: key=value,..."),
    ]
    every: Annotated[Duration, Meta(description="A letter at least this often (90s, 15m, 1h, 2d).")]
    grace: Annotated[Duration | None, Meta(description="How long late before down.")] = None
    paused: Annotated[bool, Meta(description="Add it paused (never late, never down).")] = False


class Monitors(Verb, frozen=True):
    """Every monitor and its state: new, up, late, down or paused."""


class HookEvent(Verb, frozen=True):
    """A coding agent's hook event for abandonment, relayed: post-tool records a watched call, stop mints the
    session's letter when its last watched call failed (what ``dovecote hook post-tool|stop`` read on stdin)."""

    event: Annotated[Literal["post-tool", "stop"], Meta(description="The hook.")]
    payload: Annotated[dict[str, Any], Meta(max_length=ITEMS, description="The JSON the hook got on stdin.")]
    watch: Annotated[
        tuple[Annotated[str, Meta(min_length=1, max_length=NAME)], ...],
        Meta(max_length=32, description="Watched tool-name prefixes (default mcp__)."),
    ] = ()

"""``report``: validate field reports and append them to the spool.

The field-report schema is one definition, the typed verb ``verbs.Report``:
its fields, types and vocabularies decide what a report may hold, whichever
face sent it and whether ``report`` or ``receipt`` wrote it. ``check_report``
decodes through it and adds the rules that tie one field to another. A batch
is all or nothing: one bad object refuses the whole batch and nothing is written.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from dovecote.derive.cases.symptoms import check_fingerprint
from dovecote.errors import Refusal
from dovecote.model.letters import canonical_line, format_ts
from dovecote.model.results import Result
from dovecote.model.vocab import (
    ENGINE_AGENT,
    MISDELIVERY_CLASS,
    MISDELIVERY_KINDS,
    RECEIPT_CLASS,
    looks_like_engine,
)
from dovecote.util.timeutil import parse_time
from dovecote.verbs import Report, decode

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: Fields only a receipt (class triage) carries.
RECEIPT_ONLY = ("disposition", "fingerprint", "case_id", "commit", "sentinel")
_TS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|\+00:00)")


def check_ts(value: str, where: str = "ts") -> str:
    if not _TS.fullmatch(value):
        raise Refusal("invalid_field", f"{where} {value!r} is not an ISO-8601 UTC time like 2026-07-05T10:00:00Z")
    if parse_time(value) is None:
        raise Refusal("invalid_field", f"{where} {value!r} is not a real date and time")
    return value


def check_report(obj: object, *, agent: str, ts: str, max_bytes: int) -> bytes:
    """Validate one field report (a mapping, as JSON gives it); return its canonical line. Refuses, never repairs.

    Raises ``Refusal``: what ``verbs.decode(Report, ...)`` raises (``invalid_json``, ``unknown_field``,
    ``missing_field``, ``invalid_field``, ``unknown_symptom``), then ``missing_field``, ``reserved_agent``,
    ``invalid_field``, ``unknown_symptom`` (a fingerprint's) and ``too_large`` for the rules below.
    """
    if not isinstance(obj, dict):
        raise Refusal("invalid_json", "a field report must be a JSON object")
    letter = decode(Report, {k: v for k, v in obj.items() if v is not None}).letter()
    letter.setdefault("ts", ts)
    letter.setdefault("agent", agent)
    for k, v in letter.items():
        if isinstance(v, str) and "\x00" in v:
            raise Refusal("invalid_field", f"{k} contains a NUL byte")
    if not letter["agent"].strip():
        raise Refusal("missing_field", "agent is required and cannot be blank")
    if looks_like_engine(letter["agent"]):
        raise Refusal("reserved_agent", f"{ENGINE_AGENT} is reserved for letters dovecote mints")
    check_ts(letter["ts"])
    if letter.get("kind", "report") != "report":
        raise Refusal("invalid_field", f"kind {letter['kind']!r} is not one of report")
    _check_classes(letter)
    line = canonical_line(letter)
    if len(line) > max_bytes:
        raise Refusal("too_large", f"the report is {len(line)} bytes; the limit is {max_bytes}")
    return line


def _check_classes(letter: dict[str, Any]) -> None:
    """The fields one class needs and the fields only a receipt (or a fixed one) may carry."""
    if letter["class"] == MISDELIVERY_CLASS:
        if "misdelivery_kind" not in letter:
            kinds = ", ".join(MISDELIVERY_KINDS)
            raise Refusal("missing_field", f"a {MISDELIVERY_CLASS} report needs misdelivery_kind ({kinds})")
    elif "misdelivery_kind" in letter:
        raise Refusal("invalid_field", f"misdelivery_kind belongs only to class {MISDELIVERY_CLASS}")
    if letter["class"] != RECEIPT_CLASS:
        for k in RECEIPT_ONLY:
            if k in letter:
                raise Refusal("invalid_field", f"{k} belongs only to a receipt (class {RECEIPT_CLASS})")
    if "fingerprint" in letter:
        check_fingerprint(letter["fingerprint"])
    if "sentinel" in letter:
        if letter.get("disposition") != "fixed":
            raise Refusal("invalid_field", "only a receipt with disposition fixed carries a sentinel (CASE-INV-4)")
        if not letter["sentinel"]:
            raise Refusal("invalid_field", "sentinel must be an object of strings, e.g. {probe, expect}")
    if "answers" in letter and not letter["answers"]:
        raise Refusal("invalid_field", "answers must be a non-empty list of letter ids")


class FiledLetter(Result, frozen=True):
    """One field report in the spool: its id, and whether this call appended it (false: it was there)."""

    id: str
    appended: bool


class ReportsFiled(Result, frozen=True):
    """The reports a remote caller filed, in the order given (the library answers the (id, appended) pairs)."""

    letters: list[FiledLetter]

    @classmethod
    def of(cls, filed: list[tuple[str, bool]]) -> ReportsFiled:
        return cls([FiledLetter(lid, new) for lid, new in filed])


def report(ctx: Context, objs: list[Any]) -> list[tuple[str, bool]]:
    """Append field reports to the spool (one fsync). Returns (id, appended) each.

    A report without its own ``agent`` is by the context's actor (the handle's ``actor=``).
    """
    if not objs:
        raise Refusal("missing_field", "no field report was given")
    ts = format_ts(ctx.now())
    who = ctx.actor.author()
    limit = ctx.roster.limits.report_max_bytes
    lines = []
    for n, obj in enumerate(objs, 1):
        try:
            lines.append(check_report(obj, agent=who, ts=ts, max_bytes=limit))
        except Refusal as r:
            if len(objs) == 1:
                raise
            raise Refusal(r.reason, f"report {n} of {len(objs)}: {r.detail}") from None
    return ctx.store.append("spool", lines)

"""``report``: validate field reports and append them to the spool.

Every rule for what a field report may hold lives in ``check_report``; the CLI,
MCP and HTTP faces all pass their input through it. A batch is all or nothing:
one bad object refuses the whole batch and nothing is written.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from dovecote.derive.symptoms import check_fingerprint
from dovecote.errors import Refusal
from dovecote.letters import canonical_line, format_ts, is_letter_id
from dovecote.timeutil import parse_time
from dovecote.vocab import (
    DISPOSITIONS,
    ENGINE_AGENT,
    MISDELIVERY_CLASS,
    MISDELIVERY_KINDS,
    RECEIPT_CLASS,
    REPORT_CLASSES,
    SYMPTOMS,
    looks_like_engine,
)

if TYPE_CHECKING:
    from dovecote.context import Context

STRING_FIELDS = (
    "ts", "agent", "kind", "repo", "brain", "tool", "class", "what", "expected",
    "snippet", "symptom", "misdelivery_kind", "disposition", "fingerprint", "case_id", "commit",
)
REPORT_FIELDS = frozenset({*STRING_FIELDS, "answers", "sentinel"})
RECEIPT_ONLY = ("disposition", "fingerprint", "case_id", "commit", "sentinel")
_TS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|\+00:00)")


def check_ts(value: str, where: str = "ts") -> str:
    if not _TS.fullmatch(value):
        raise Refusal("invalid_field", f"{where} {value!r} is not an ISO-8601 UTC time like 2026-07-05T10:00:00Z")
    if parse_time(value) is None:
        raise Refusal("invalid_field", f"{where} {value!r} is not a real date and time")
    return value


def _one_of(obj: dict[str, Any], key: str, allowed: tuple[str, ...]) -> None:
    if key in obj and obj[key] not in allowed:
        raise Refusal("invalid_field", f"{key} {obj[key]!r} is not one of {', '.join(allowed)}")


def check_report(obj: object, *, agent: str, ts: str, max_bytes: int) -> bytes:
    """Validate one field report; return its canonical line. Refuses, never repairs."""
    if not isinstance(obj, dict):
        raise Refusal("invalid_json", "a field report must be a JSON object")
    unknown = sorted(set(obj) - REPORT_FIELDS)
    if unknown:
        raise Refusal("unknown_field", f"not part of a field report: {', '.join(unknown)}")
    obj = {k: v for k, v in obj.items() if v is not None}
    obj.setdefault("ts", ts)
    obj.setdefault("agent", agent)
    for k in STRING_FIELDS:
        if k in obj:
            v = obj[k]
            if not isinstance(v, str):
                raise Refusal("invalid_field", f"{k} must be a string, not {type(v).__name__}")
            if "\x00" in v:
                raise Refusal("invalid_field", f"{k} contains a NUL byte")
    for k in ("tool", "class", "what", "agent"):
        if not obj.get(k, "").strip():
            raise Refusal("missing_field", f"{k} is required and cannot be blank")
    if looks_like_engine(obj["agent"]):
        raise Refusal("reserved_agent", f"{ENGINE_AGENT} is reserved for letters dovecote mints")
    check_ts(obj["ts"])
    _one_of(obj, "class", REPORT_CLASSES)
    _one_of(obj, "kind", ("report",))
    if "symptom" in obj and obj["symptom"] not in SYMPTOMS:
        raise Refusal("unknown_symptom", f"symptom {obj['symptom']!r} is not one of {', '.join(SYMPTOMS)}")
    if obj["class"] == MISDELIVERY_CLASS:
        if "misdelivery_kind" not in obj:
            kinds = ", ".join(MISDELIVERY_KINDS)
            raise Refusal("missing_field", f"a {MISDELIVERY_CLASS} report needs misdelivery_kind ({kinds})")
        _one_of(obj, "misdelivery_kind", MISDELIVERY_KINDS)
    elif "misdelivery_kind" in obj:
        raise Refusal("invalid_field", f"misdelivery_kind belongs only to class {MISDELIVERY_CLASS}")
    if obj["class"] != RECEIPT_CLASS:
        for k in RECEIPT_ONLY:
            if k in obj:
                raise Refusal("invalid_field", f"{k} belongs only to a receipt (class {RECEIPT_CLASS})")
    _one_of(obj, "disposition", DISPOSITIONS)
    if "fingerprint" in obj:
        check_fingerprint(obj["fingerprint"])
    if "sentinel" in obj and obj.get("disposition") != "fixed":
        raise Refusal("invalid_field", "only a receipt with disposition fixed carries a sentinel (CASE-INV-4)")
    if "sentinel" in obj:
        s = obj["sentinel"]
        if not (isinstance(s, dict) and s and all(isinstance(k, str) and isinstance(v, str) for k, v in s.items())):
            raise Refusal("invalid_field", "sentinel must be an object of strings, e.g. {probe, expect}")
    if "answers" in obj:
        answers = obj["answers"]
        if not isinstance(answers, list) or not answers:
            raise Refusal("invalid_field", "answers must be a non-empty list of letter ids")
        bad = [a for a in answers if not is_letter_id(a)]
        if bad:
            raise Refusal("invalid_field", f"answers holds {bad[0]!r}, not a 12-digit lowercase hex id")
    line = canonical_line(obj)
    if len(line) > max_bytes:
        raise Refusal("too_large", f"the report is {len(line)} bytes; the limit is {max_bytes}")
    return line


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

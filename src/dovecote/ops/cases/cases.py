"""Cases, receipts, escalation and claims: the use cases over the case fold.

Reads (``cases``, ``case``, ``claims``, ``overlay``) never write a letter; the
writes are the receipt a person or agent files (``receipt``), the engine's
escalation at the second witness (``escalate``, run by a distributing sweep),
and the field-label rows (``claims`` with ``write_labels``). Every rule of
what a case *is* lives in ``derive.cases.book``; this module only reads the store
into it and writes what it decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dovecote import verbs
from dovecote.derive.cases.book import CaseBook
from dovecote.derive.cases.claims import claims as claims_of
from dovecote.derive.cases.claims import labels as labels_of
from dovecote.derive.cases.symptoms import check_fingerprint
from dovecote.errors import Refusal, StoreError
from dovecote.ledger import append as ledger_append
from dovecote.ledger import jsonl as ledger
from dovecote.model.addresses import parse_address
from dovecote.model.letters import canonical_line, format_ts
from dovecote.model.results import Result, typed
from dovecote.ops.cases import engine
from dovecote.ops.reports.report import check_report
from dovecote.ops.warm import cases as casebook

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Where

LABELS_FILE = "field-labels.jsonl"


class CaseReceipt(Result, frozen=True):
    """The receipt that decides a case: its letter, when, its disposition, the fix it names, its box."""

    id: str
    ts: str | None
    disposition: str | None
    ref: str | None
    box: str | None


class CaseSentinel(Result, frozen=True):
    """A fixed receipt's probe, its expectation, and how it stands (guarded or red, and for how long)."""

    probe: str
    expect: str
    state: str | None
    streak: int | None


class Case(Result, frozen=True):
    """One case: the letters sharing a fingerprint, the receipt naming it, what it answers (``derive.cases.book``)."""

    fingerprint: str
    case_id: str | None
    label: str
    witnesses: int
    witness_ids: list[str]
    unanswered: list[str]
    first_seen: str | None
    last_seen: str | None
    boxes: list[str]
    receipt: CaseReceipt | None
    answered: list[str]
    escalation: str | None
    sentinel: CaseSentinel | None
    regressions: list[str]
    line: str


class Cases(Result, frozen=True):
    """Every case, the recurrence (fingerprint -> witnesses), the letters with no kind, the boxes out of reach."""

    cases: list[Case]
    count: int
    recurrence: dict[str, int]
    kindless: int
    unreachable: list[str]


class ReceiptFiled(Result, frozen=True):
    """A triage receipt filed (``appended``: false when the very letter was there already)."""

    id: str
    appended: bool
    box: str
    fingerprint: str | None
    answers: list[str]


class Claims(Result, frozen=True):
    """Claim vs measure, counts only: per fingerprint and in total; the labels resolved and appended."""

    by_fingerprint: dict[str, dict[str, int]]
    totals: dict[str, int]
    resolved: int
    labels_path: str
    labels_appended: int


def overlay(ctx: Context, persist: bool = True) -> dict[str, Any]:
    """What the sweep and doctor show of the cases: recurrence (fingerprint -> witnesses) and kindless."""
    book = casebook.load(ctx, persist).book
    return {"recurrence": book.recurrence(), "kindless": book.kindless}


def cases(ctx: Context, box: str | None = None) -> Cases:
    loaded = casebook.load(ctx)
    rows = loaded.book.cases()
    if box is not None:
        label = str(parse_address(box))
        rows = [c for c in rows if label in c["boxes"]]
    return Cases(typed(list[Case], rows), len(rows), loaded.book.recurrence(), loaded.book.kindless,
                 loaded.unreachable)


def resolve(book: CaseBook, name: str) -> str:
    """A fingerprint from a fingerprint or a receipt's case id; ``unknown_case`` otherwise."""
    known = {c["fingerprint"] for c in book.cases()}
    if name in known:
        return name
    aliases = sorted(r.fingerprint for r in book.receipts.values() if r.case_id == name and r.fingerprint)
    if aliases:
        return aliases[-1]
    raise Refusal("unknown_case", f"no case has the fingerprint or case id {name!r}")


def case(ctx: Context, name: str) -> Case:
    book = casebook.load(ctx).book
    fp = resolve(book, name)
    return typed(Case, next(c for c in book.cases() if c["fingerprint"] == fp))


def receipt(ctx: Context, v: verbs.Receipt) -> ReceiptFiled:
    """File a triage receipt into the case's box; it closes what it answers (fired_clay)."""
    book = casebook.load(ctx).book
    unknown = [a for a in v.answers if a not in book.seen]
    if unknown:
        raise Refusal("unknown_letter", f"no field report has the id {unknown[0]} (in the spool or a reachable box)")
    fp = v.fingerprint
    family: str | None = None
    if fp is not None:
        family, _ = check_fingerprint(fp)
    else:
        fps = {book.witnesses[a].fingerprint for a in v.answers if a in book.witnesses}
        fp = fps.pop() if len(fps) == 1 else None
        family = fp[3:].rpartition("/")[0] if fp else None
    if (v.sentinel_probe or v.sentinel_expect) and v.disposition.value != "fixed":
        raise Refusal("invalid_field", "only a fixed receipt carries a sentinel (CASE-INV-4)")
    if v.sentinel_expect and not v.sentinel_probe:
        raise Refusal("missing_field", "sentinel_expect needs sentinel_probe")
    obj: dict[str, Any] = {
        "class": "triage", "tool": family or "triage", "answers": list(v.answers),
        "disposition": v.disposition.value, "fingerprint": fp, "case_id": v.case_id, "commit": v.ref,
        "what": f"receipt: {v.disposition.value} " + (fp or f"{len(v.answers)} letters"),
    }
    if v.sentinel_probe:
        obj["sentinel"] = {"probe": v.sentinel_probe, "expect": (v.sentinel_expect or "absent")}
    where, owner = _receipt_box(ctx, book, fp, list(v.answers))
    obj.update(owner)
    obj = {k: val for k, val in obj.items() if val is not None}
    line = check_report(
        obj, agent=ctx.actor.author(), ts=format_ts(ctx.now()), max_bytes=ctx.roster.limits.report_max_bytes
    )
    (lid, appended), = ctx.store.append(where, [line])
    return ReceiptFiled(lid, appended, str(where), fp, list(v.answers))


def _receipt_box(ctx: Context, book: CaseBook, fp: str | None, answers: list[str]) -> tuple[Where, dict[str, Any]]:
    """The case's box (of its first witness); else the box of the first answered letter;
    else the spool, carrying that letter's project so distribution files it where it belongs."""
    group = book.by_fingerprint().get(fp, []) if fp else []
    answered = [book.witnesses[a] for a in answers if a in book.witnesses]
    found = engine.case_box(ctx, group or answered)
    if found is not None:
        return found, {}
    for addr in ctx.roster.report_boxes():
        if ctx.store.reachable(addr) and any(a in ctx.store.read(addr).index for a in answers):
            return addr, {}
    first = (group or answered)[:1]
    return "spool", ({"brain": first[0].brain, "repo": first[0].repo} if first else {})


def escalate(ctx: Context) -> list[str]:
    """Mint the escalation of every fingerprint with two witnesses and none yet; the ids written."""
    book = casebook.load(ctx).book
    done = book.engine_of("escalation")
    minted = []
    for fp, ws in book.by_fingerprint().items():
        if len(ws) < 2 or fp in done:
            continue
        where = engine.case_box(ctx, ws)
        if where is None:
            continue  # the first witness is pending: it escalates once it is filed
        obj = engine.escalation(fp, ws[0], ws[1])
        try:
            lid, appended = engine.mint(ctx, where, obj, engine.same("escalation", fingerprint=fp))
        except StoreError:
            continue  # the case's box cannot be written here (the sweep names it unreachable): a later sweep will

        if appended:
            minted.append(lid)
    return minted


def claims(ctx: Context, write_labels: bool = False, persist: bool = True) -> Claims:
    """Claim vs measure, counts only; with ``write_labels`` the resolved claims are appended
    to ``field-labels.jsonl`` once each (by letter and receipt)."""
    book = casebook.load(ctx, persist).book
    out = claims_of(book)
    rows = labels_of(book)
    appended = _append_labels(ctx, rows) if write_labels else 0
    return Claims(out["by_fingerprint"], out["totals"], len(rows), str(ctx.layout.root / LABELS_FILE), appended)


def _append_labels(ctx: Context, rows: list[dict[str, Any]]) -> int:
    """The rows are deterministic, so the file is a ledger like any other: content-id dedup
    under its lock, fsynced (two runs at once append each row once)."""
    if not rows:
        return 0
    filed = ledger_append.append(ledger.LedgerReader(ctx.layout.root / LABELS_FILE), [canonical_line(r) for r in rows])
    return sum(1 for _, new in filed if new)

"""``doctor``: the mailbox block, counts only, and it fails open.

It uses the real roster (so a project present here is not reported pending,
unlike the seed's doctor, which passed an empty roster), never writes, and
turns any I/O error into a block marked unavailable instead of a crash. What is
pending, and why, comes from ``distribute.plan``, the function ``distribute``
itself uses, so the two always name the same letters (a write that fails on a
readable box is the one thing doctor, which never writes, cannot foresee).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from dovecote.errors import DovecoteError
from dovecote.model.results import Result, typed
from dovecote.model.vocab import MISDELIVERY_KINDS
from dovecote.ops.agents.tokens import health as tokens_health
from dovecote.ops.reports.distribute import filed, pending_detail, plan
from dovecote.util.timeutil import parse_time

if TYPE_CHECKING:
    from dovecote.ops.context import Context


def _day(ts: str | None) -> int | None:
    """The UTC day of ``ts`` (an offset can move it across midnight), or None."""
    t = parse_time(ts)
    return None if t is None else t.date().toordinal()


def in_last_7_days(ts: str | None, today: int) -> bool:
    """The seed's window: at most 7 days old, at most 1 day in the future."""
    d = _day(ts)
    return d is not None and today - d <= 7 and d <= today + 1


def misdelivery_kind(letter_data: dict[str, Any], legacy_kind: str | None) -> str | None:
    """A misdelivery's sub-kind: ``misdelivery_kind``, or a legacy ``kind``."""
    k = letter_data.get("misdelivery_kind")
    if isinstance(k, str):
        return k
    return legacy_kind if legacy_kind in MISDELIVERY_KINDS else None


class TokenHealth(Result, frozen=True):
    """The token file: where it is, whether it exists and is private, then its counts (issued, active) or the
    problem that stopped reading it (never a token)."""

    path: str
    exists: bool
    private: bool | None
    issued: int | msgspec.UnsetType = msgspec.UNSET
    active: int | msgspec.UnsetType = msgspec.UNSET
    problem: str | msgspec.UnsetType = msgspec.UNSET


class Doctor(Result, frozen=True):
    """The mailbox block (its counts, or ``available: false`` with the error that stopped it: two shapes, so
    an open row) and the token file's health."""

    mailbox: dict[str, Any]
    tokens: TokenHealth


def doctor(ctx: Context, now: datetime | None = None) -> Doctor:
    spool_path = spool_location(ctx)
    try:
        mailbox = _mailbox(ctx, now or ctx.now())
    except (OSError, DovecoteError) as e:
        mailbox = {"available": False, "error": str(e), "spool_path": spool_path}
    return Doctor(mailbox, typed(TokenHealth, tokens_health(ctx)))


def _mailbox(ctx: Context, now: datetime) -> dict[str, Any]:
    from dovecote.ops.reports.sweep import sweep

    result = sweep(ctx, do_distribute=False, persisted=False)  # it reads result.book
    book = result.book
    assert book is not None  # a sweep that is not answered from the snapshot holds its fold
    spool = ctx.store.read("spool").letters
    today = now.date().toordinal()
    by_kind = dict.fromkeys(MISDELIVERY_KINDS, 0)
    unrecognized = 0
    recent = 0
    for letter in book.entries.values():
        if not letter.is_misdelivery:
            continue
        if in_last_7_days(letter.ts, today):
            recent += 1
        k = misdelivery_kind(letter.data(), letter.kind)
        if k in by_kind:
            by_kind[k] += 1
        else:
            unrecognized += 1
    waiting = plan(ctx, spool, filed(ctx)).pending
    detail = pending_detail(waiting.values())
    return {
        "available": True,
        "spool_letters": len(spool),
        "misdelivery_total": book.misdelivery,
        "misdelivery_7d": recent,
        "misdelivery_by_kind": by_kind,
        "misdelivery_unrecognized_kind": unrecognized,
        "pending_distribution": [d["name"] for d in detail],
        "pending_letters": len(waiting),
        "pending_detail": detail,
        "unreachable": result.unreachable,
        "malformed_lines": len(result.malformed),
        **result.cases,  # recurrence and kindless
        "claims": _claims(ctx),
        "leases": _leases(ctx, now),
        "spool_path": spool_location(ctx),
    }


def spool_location(ctx: Context) -> str:
    """Where the spool is: its file, or on PostgreSQL the database's URL (no password) and the box,
    never a file path that holds nothing."""
    return ctx.store.location("spool")


def _claims(ctx: Context) -> dict[str, int]:
    """Claim vs measure's totals (counts only; ``dovecote claims`` has them per fingerprint)."""
    from dovecote.ops.cases.cases import claims

    return dict(claims(ctx, persist=False).totals)


def _leases(ctx: Context, now: datetime) -> dict[str, int]:
    """Every reachable project's leases by state at ``now`` (counts only; ``dovecote lease list`` has them whole;
    a project box out of reach is among ``unreachable`` already)."""
    from dovecote.ops.leases.read import counts

    return counts(ctx.at(now))[0]

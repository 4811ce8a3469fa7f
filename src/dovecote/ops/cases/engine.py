"""Engine letters: what dovecote itself writes (escalations, sentinel regressions and
their green markers, monitor and abandonment letters).

Law (CASE-INV-3, CASE-INV-5): an engine letter has ``agent: dovecote:engine``
(no other writer may use it), a fixed template text with ids and counts and no
adjectives, and no fresh timestamp: its content is a function of the letters
that caused it, so two runners that decide the same thing write the same bytes
and the ledger's content-id dedup keeps one. It is written straight into the
case's box under the box lock after checking again on what the lock holds
(``mint``), so two runners that would write *different* bytes for the same
decision (a letter arrived between their reads) still write one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from dovecote.derive.cases.book import engine_role
from dovecote.derive.cases.records import Witness
from dovecote.errors import Refusal
from dovecote.model.addresses import parse_address
from dovecote.model.letters import Letter, canonical_line, letter_id
from dovecote.model.vocab import ENGINE_AGENT
from dovecote.roster.routing import route

if TYPE_CHECKING:
    from dovecote.ops.context import Context
    from dovecote.store.core import Where

Already = Callable[[dict[str, Any]], bool]


def engine_letters(letters: Sequence[Letter]) -> list[dict[str, Any]]:
    """The decoded engine letters among ``letters`` (the others are never decoded)."""
    return [lt.data() for lt in letters if lt.agent == ENGINE_AGENT]


def mint(ctx: Context, where: Where, obj: dict[str, Any], already: Already) -> tuple[str, bool]:
    """Append the engine letter ``obj`` to ``where`` unless a letter the lock holds there
    satisfies ``already`` (the compare-and-swap). Returns (id, appended)."""
    line = canonical_line({**obj, "agent": ENGINE_AGENT})
    with ctx.store.guarded(where) as g:
        if any(already(d) for d in engine_letters(g.letters)):
            return letter_id(line), False
        return g.append([line])[0]


def case_box(ctx: Context, witnesses: Sequence[Witness]) -> Where | None:
    """Where a case's engine letters go: the box of its first witness, else where the
    ownership law files that witness; None while it is pending (never re-routed home)
    or that box cannot be reached on this machine."""
    for w in witnesses:
        where = None
        if w.box is not None:
            try:
                where = parse_address(w.box)
            except Refusal:
                continue
        else:
            where = route(w.brain, w.repo, ctx.index).address
        if where is not None:
            return where if ctx.store.reachable(where) else None
    return None


def same(role: str, **fields: object) -> Already:
    """The check of ``mint``: an engine letter of ``role`` whose ``fields`` are these values."""
    def check(d: dict[str, Any]) -> bool:
        return engine_role(d) == role and all(d.get(k) == v for k, v in fields.items())

    return check


def escalation(fp: str, first: Witness, second: Witness) -> dict[str, Any]:
    """The escalation at the second witness (one per fingerprint)."""
    family, _, symptom = fp[3:].rpartition("/")
    obj: dict[str, Any] = {
        "class": "triage", "tool": family, "symptom": symptom, "fingerprint": fp, "escalation": 2,
        "witnesses": [first.id, second.id],
        "what": f"escalation: {fp} has 2 witnesses: {first.id}, {second.id}",
    }
    if second.ts is not None:
        obj["ts"] = second.ts
    return obj


def regression(fp: str, receipt_id: str, probe: str, streak: int, ts: str) -> dict[str, Any]:
    """A red sentinel's letter: a new witness of the same case (class bug, same symptom).
    Dated when it was seen red: the streak number, not the bytes, makes it once per streak."""
    family, _, symptom = fp[3:].rpartition("/")
    return {
        "ts": ts, "class": "bug", "tool": family, "symptom": symptom, "fingerprint": fp, "receipt": receipt_id,
        "sentinel_streak": streak, "what": f"sentinel regression: {fp} resurfaced",
        "snippet": f"probe {probe} failed its expectation (red streak {streak})",
    }


def green(fp: str, receipt_id: str, streak: int, ts: str) -> dict[str, Any]:
    """The marker that ends a red streak (not a field report: it has no fate)."""
    return {
        "ts": ts, "kind": "sentinel_green", "fingerprint": fp, "receipt": receipt_id, "sentinel_streak": streak,
        "what": f"sentinel green: {fp} guarded again after red streak {streak}",
    }


def monitor_down(name: str, streak: int, down_at: str, last: str | None, every: str, grace: str) -> dict[str, Any]:
    """A monitor gone down: a witness of ``fp:monitor:<name>/silent_drop``, dated when it went down."""
    return {
        "ts": down_at, "class": "bug", "tool": f"monitor:{name}", "symptom": "silent_drop", "monitor": name,
        "monitor_streak": streak,
        "what": f"monitor {name} down: no matching letter since {last} (every {every}, grace {grace})",
    }


def monitor_up(name: str, streak: int, at: str | None) -> dict[str, Any]:
    """The marker that ends a down streak: a matching letter arrived (dated by that letter)."""
    obj: dict[str, Any] = {
        "kind": "monitor_up", "monitor": name, "monitor_streak": streak,
        "what": f"monitor {name} up again after down streak {streak}",
    }
    if at is not None:
        obj["ts"] = at
    return obj

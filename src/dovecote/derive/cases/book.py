"""The case fold (R11 organ 2): a derived overlay over field reports, never a third axis.

Law (CASE-INV-1): member letters are never touched. A case is computed at read
time: the witnesses (reports whose fingerprint is the case's), the latest
receipt naming the fingerprint, and what that receipt answers. The only stored
case artifacts are fields on receipts (``fingerprint``, ``case_id``,
``disposition``, ``ref``, ``sentinel``) and on engine letters (escalations,
sentinel regressions and their green markers, monitor and abandonment letters).
A case never closes a letter: members keep their own fates.

The fold is incremental and order-free: ``CaseBook.feed`` takes one source's
letters (the spool or a box, by label) in any order, any split, any number of
times, and ``cases()`` is the same (``tests/derive/test_cases_fold.py`` proves it
against a plain reference with hypothesis). Its whole state is one msgspec
value (``CaseState``, with its rows in ``derive.cases.records``), so the ops layer can snapshot it like any other cache.

Labels (no fifth fate): ``open`` (no receipt, or a witness no receipt answers),
``closed·guarded`` (every witness answered, the latest receipt is ``fixed`` and
carries a sentinel), ``answered`` (otherwise).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from dovecote.derive.cases.monitors import matches
from dovecote.derive.cases.records import CaseState, Engine, MonitorDef, Receipt, Witness
from dovecote.derive.cases.symptoms import fingerprint, symptom_rule, tool_family
from dovecote.model.letters import Letter
from dovecote.model.vocab import ENGINE_AGENT, NOT_TROUBLE, RECEIPT_CLASS, REPORT_CLASSES, REPORT_KINDS
from dovecote.util.timeutil import instant_text

#: The kind of a monitor's definition letter (in home; see ``derive.cases.monitors``).
MONITOR = "monitor"
#: Engine letter kinds outside the field reports (markers that end a streak).
SENTINEL_GREEN = "sentinel_green"
MONITOR_UP = "monitor_up"
ENGINE_KINDS = frozenset({SENTINEL_GREEN, MONITOR_UP})
#: Classes known not to be the receipt class (the fate fold's shortcut, from the same vocabulary).
_NOT_RECEIPT = frozenset(REPORT_CLASSES) - {RECEIPT_CLASS}



class _ReceiptFields(msgspec.Struct):
    """The receipt fields a case reads, decoded alone (the rest of the line is skipped)."""

    fingerprint: object = None
    case_id: object = None
    disposition: object = None
    commit: object = None
    sentinel: object = None


_decode_receipt = msgspec.json.Decoder(_ReceiptFields).decode


def _receipt_fields(lt: Letter) -> _ReceiptFields:
    try:
        return _decode_receipt(lt.raw)
    except (msgspec.DecodeError, RecursionError):
        d = lt.data()
        return _ReceiptFields(d.get("fingerprint"), d.get("case_id"), d.get("disposition"), d.get("commit"),
                              d.get("sentinel"))


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _lower_box(old: str | None, new: str | None) -> str | None:
    if new is None:
        return old
    return new if old is None or new < old else old


def engine_role(data: dict[str, Any]) -> str | None:
    """What an engine letter is, from its own fields (the templates in ``ops.cases.engine``)."""
    kind = data.get("kind")
    if kind == SENTINEL_GREEN:
        return "green"
    if kind == MONITOR_UP:
        return "monitor_up"
    if "escalation" in data:
        return "escalation"
    if "sentinel_streak" in data:
        return "regression"
    if "monitor_streak" in data:
        return "monitor_down"
    if "session" in data:
        return "abandonment"
    return None


class CaseBook:
    """The incremental case fold; see the module docstring."""

    def __init__(self, state: CaseState | None = None) -> None:
        st = state or CaseState()
        self.seen: set[str] = set(st.seen)
        self.kindless = st.kindless
        self.witnesses = {w.id: w for w in st.witnesses}
        self.receipts = {r.id: r for r in st.receipts}
        self.engine = {e.id: e for e in st.engine}
        self.closed: set[str] = set(st.closed)
        self.monitors = {m.id: m for m in st.monitors}
        self.signatures: dict[tuple[str | None, ...], tuple[str, str | None]] = {
            tuple(s): (k[0], k[1]) for s, k in st.signatures
        }

    def state(self, ordered: bool = True) -> CaseState:
        """The whole fold as one value; ordered states compare equal whenever their folds do. A snapshot
        takes it unordered: a fold rebuilt from it is the same (sorting 500k ids was a tenth of a cold sweep)."""
        if not ordered:
            return CaseState(list(self.seen), self.kindless, [*self.witnesses.values()], [*self.receipts.values()],
                             [*self.engine.values()], list(self.closed), [*self.monitors.values()],
                             [*self.signatures.items()])
        return CaseState(
            sorted(self.seen), self.kindless, sorted(self.witnesses.values(), key=lambda w: w.key),
            sorted(self.receipts.values(), key=lambda r: r.key), sorted(self.engine.values(), key=lambda e: e.id),
            sorted(self.closed), sorted(self.monitors.values(), key=lambda m: m.key),
            sorted(self.signatures.items(), key=lambda kv: (kv[1][0], repr(kv[0]))),
        )

    def feed(self, box: str | None, letters: Iterable[Letter]) -> None:
        """Fold one source's letters (``box``: its label, None for the spool).

        A cold sweep feeds every report it reads through here, so the loop is written flat: the
        tables and the vocabulary are locals, and a letter's symptom is one call."""
        seen = self.seen
        signatures = self.signatures
        closed = self.closed
        witnesses = self.witnesses
        kindless = 0
        key = instant_text
        symptom = symptom_rule
        report_kinds, not_receipt, not_trouble, engine = REPORT_KINDS, _NOT_RECEIPT, NOT_TROUBLE, ENGINE_AGENT
        for lt in letters:
            lid = lt.id
            if lid in seen:
                if box is not None:
                    self._rebox(lid, box)
                continue
            kind = lt.kind
            if kind is not None and kind not in report_kinds:
                if kind in ENGINE_KINDS and lt.agent == engine:
                    seen.add(lid)
                    self._engine(lt, box)
                elif kind == MONITOR:
                    seen.add(lid)
                    self._monitor(lt)
                continue
            seen.add(lid)
            klass, agent, ts = lt.klass, lt.agent, lt.ts
            sig = (agent, lt.brain, klass, kind, lt.repo, lt.symptom, lt.tool)
            at = key(ts) + lid
            had = signatures.get(sig)
            if had is None or at > had[0]:
                signatures[sig] = (at, ts)
            if klass is not None and klass not in not_receipt and klass.lower() == RECEIPT_CLASS:
                self._receipt(lt, box, at)
                continue
            got = symptom(lt)
            fp = fingerprint(tool_family(lt.tool), got[0]) if got is not None else None
            if agent == engine:
                self._engine(lt, box)
            if fp is None:
                if klass not in not_trouble and agent != engine:
                    kindless += 1
                if closed:
                    closed.discard(lid)
                continue
            witnesses[lid] = Witness(at, lid, ts, fp, box, lt.brain, lt.repo, klass == "honesty")
        self.kindless += kindless

    def _monitor(self, lt: Letter) -> None:
        d = lt.data()
        name, expect, every = _str(d.get("name")), _str(d.get("expect")), _str(d.get("every"))
        if name and expect and every:
            self.monitors[lt.id] = MonitorDef(
                instant_text(lt.ts) + lt.id, lt.id, lt.ts, name, expect, every, _str(d.get("grace")),
                d.get("paused") is True,
            )

    def monitor_defs(self) -> dict[str, MonitorDef]:
        """Each monitor's definition in force: the latest letter naming it."""
        out: dict[str, MonitorDef] = {}
        for m in sorted(self.monitors.values(), key=lambda m: m.key):
            out[m.name] = m
        return out

    def last_match(self, flt: dict[str, str]) -> str | None:
        """The time of the newest report matching ``flt`` (see ``derive.cases.monitors``)."""
        best: tuple[str, str | None] = ("", None)
        for sig, got in self.signatures.items():
            if got[0] > best[0] and matches(flt, sig):
                best = got
        return best[1]

    def monitor_streak(self, name: str) -> tuple[int, bool]:
        """(the last down streak's number, whether it is still open) for the monitor ``name``."""
        downs = [e.streak for e in self.engine.values() if e.role == "monitor_down" and e.subject == name]
        ups = [e.streak for e in self.engine.values() if e.role == "monitor_up" and e.subject == name]
        last = max(downs, default=0)
        return last, last > max(ups, default=0)

    def _rebox(self, lid: str, box: str) -> None:
        for table in (self.witnesses, self.receipts, self.engine):
            row = table.get(lid)
            if row is not None:
                row.box = _lower_box(row.box, box)

    def _receipt(self, lt: Letter, box: str | None, key: str) -> None:
        answers = list(lt.answers or ())
        witnesses, seen, closed = self.witnesses, self.seen, self.closed
        for a in answers:
            if a in witnesses or a not in seen:
                closed.add(a)
        if lt.agent == ENGINE_AGENT:
            self._engine(lt, box)
            return
        f = _receipt_fields(lt)
        fp, case_id, disposition = _str(f.fingerprint), _str(f.case_id), _str(f.disposition)
        if fp is None and case_id is None and disposition is None:
            return
        probe = expect = None
        if isinstance(f.sentinel, dict):
            probe, expect = _str(f.sentinel.get("probe")), _str(f.sentinel.get("expect"))
        self.receipts[lt.id] = Receipt(
            key, lt.id, lt.ts, fp, case_id, disposition, _str(f.commit), probe,
            expect, answers, box,
        )

    def _engine(self, lt: Letter, box: str | None) -> None:
        data = lt.data()
        role = engine_role(data)
        if role is None:
            return
        streak = _int(data.get("sentinel_streak")) or _int(data.get("monitor_streak"))
        subject = _str(data.get("monitor")) or _str(data.get("session"))
        self.engine[lt.id] = Engine(lt.id, role, _str(data.get("fingerprint")), streak, subject, box)

    # -- answers -------------------------------------------------------------------

    def recurrence(self) -> dict[str, int]:
        """Fingerprint -> witness count, keys sorted."""
        counts: dict[str, int] = {}
        for w in self.witnesses.values():
            counts[w.fingerprint] = counts.get(w.fingerprint, 0) + 1
        return {k: counts[k] for k in sorted(counts)}

    def by_fingerprint(self) -> dict[str, list[Witness]]:
        out: dict[str, list[Witness]] = {}
        for w in sorted(self.witnesses.values(), key=lambda w: w.key):
            out.setdefault(w.fingerprint, []).append(w)
        return out

    def latest_receipts(self) -> dict[str, Receipt]:
        """Each fingerprint's latest receipt naming it (by time, then id)."""
        out: dict[str, Receipt] = {}
        for r in self.receipts.values():
            if r.fingerprint is not None and (r.fingerprint not in out or r.key > out[r.fingerprint].key):
                out[r.fingerprint] = r
        return out

    def engine_of(self, role: str) -> dict[str, list[Engine]]:
        """Engine letters of ``role`` by fingerprint, each list by streak then id."""
        out: dict[str, list[Engine]] = {}
        for e in self.engine.values():
            if e.role == role and e.fingerprint is not None:
                out.setdefault(e.fingerprint, []).append(e)
        for rows in out.values():
            rows.sort(key=lambda e: (e.streak, e.id))
        return out

    def streak(self, fp: str, red: str = "regression", green: str = "green") -> tuple[int, bool]:
        """(the last red streak's number, whether it is still open) for ``fp``."""
        reds = [e.streak for e in self.engine.values() if e.role == red and e.fingerprint == fp]
        greens = [e.streak for e in self.engine.values() if e.role == green and e.fingerprint == fp]
        last = max(reds, default=0)
        return last, last > max(greens, default=0)

    def cases(self) -> list[dict[str, Any]]:
        """Every case (a fingerprint with a witness or a receipt), by fingerprint."""
        groups = self.by_fingerprint()
        receipts = self.latest_receipts()
        escalations = self.engine_of("escalation")
        regressions = self.engine_of("regression")
        return [
            self._case(fp, groups.get(fp, []), receipts.get(fp), escalations.get(fp, []), regressions.get(fp, []))
            for fp in sorted(set(groups) | set(receipts))
        ]

    def _case(
        self, fp: str, ws: list[Witness], receipt: Receipt | None, esc: list[Engine], reg: list[Engine]
    ) -> dict[str, Any]:
        unanswered = [w.id for w in ws if w.id not in self.closed]
        dated = [w for w in ws if w.ts is not None]
        guarded = receipt is not None and receipt.disposition == "fixed" and receipt.probe is not None
        label = "open" if receipt is None or unanswered else "closed·guarded" if guarded else "answered"
        number, red = self.streak(fp)
        boxes = {w.box for w in ws if w.box is not None}
        if receipt is not None and receipt.box is not None:
            boxes.add(receipt.box)
        sentinel = None
        if guarded:
            assert receipt is not None
            state = "red" if red else "guarded"
            sentinel = {"probe": receipt.probe, "expect": receipt.expect or "exit0", "state": state, "streak": number}
        return {
            "fingerprint": fp,
            "case_id": receipt.case_id if receipt else None,
            "label": label,
            "witnesses": len(ws),
            "witness_ids": [w.id for w in ws],
            "unanswered": unanswered,
            "first_seen": dated[0].ts if dated else None,
            "last_seen": dated[-1].ts if dated else None,
            "boxes": sorted(boxes),
            "receipt": _receipt_dict(receipt),
            "answered": sorted(set(receipt.answers)) if receipt else [],
            "escalation": esc[0].id if esc else None,
            "sentinel": sentinel,
            "regressions": [e.id for e in reg],
            "line": case_line(fp, len(ws), receipt, sentinel),
        }


def _receipt_dict(r: Receipt | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"id": r.id, "ts": r.ts, "disposition": r.disposition, "ref": r.ref, "box": r.box}


def case_line(fp: str, n: int, receipt: Receipt | None, sentinel: dict[str, Any] | None) -> str:
    """The one-line case receipt: ``case fp:north/false_absence — 3 witnesses · fixed @abc123 · sentinel: probe-7``."""
    parts = [f"case {fp} — {n} witness" + ("" if n == 1 else "es")]
    if receipt is None:
        parts.append("open")
    else:
        parts.append((receipt.disposition or "answered") + (f" @{receipt.ref}" if receipt.ref else ""))
    if sentinel is not None:
        parts.append(f"sentinel: {sentinel['probe']}" + (" (red)" if sentinel["state"] == "red" else ""))
    return " · ".join(parts)

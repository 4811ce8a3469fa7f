"""The case fold (``derive.cases.book.CaseBook``) against a plain reference, with hypothesis.

The reference reads the whole union at once, with no incremental state: each
id once (a letter held by several sources is in the first box by label), the
witnesses by fingerprint, the latest receipt naming each fingerprint, the ids
any receipt answers. The fold must give the same cases whatever the order of
sources, the split of each source into batches, and repeated feeds.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.derive.cases.book import CaseBook
from dovecote.derive.cases.claims import claims, labels
from dovecote.derive.cases.records import CaseState
from dovecote.derive.cases.symptoms import fingerprint_of
from dovecote.model.letters import Letter, make_letter
from dovecote.model.vocab import ENGINE_AGENT, REPORT_KINDS
from dovecote.util.timeutil import instant_text

TOOLS = ["north", "North (memory beat)", "north (v2)", "seek", "Seek(x)"]
WHATS = ["came back empty over existing memory", "seek crashed with a traceback", "odd", "all good"]
FPS = ["fp:north/false_absence", "fp:seek/crash", "fp:north/crash"]
BOXES = [None, "home", "project:a", "project:b"]


@st.composite
def letters(draw: st.DrawFn) -> list[tuple[str | None, Letter]]:
    out: list[tuple[str | None, Letter]] = []
    ids: list[str] = []
    for n in range(draw(st.integers(0, 24))):
        klass = draw(st.sampled_from(["honesty", "bug", "friction", "win", "triage"]))
        obj: dict[str, Any] = {
            "ts": f"2026-07-0{draw(st.integers(1, 9))}T10:00:0{draw(st.integers(0, 9))}Z",
            "agent": draw(st.sampled_from(["a", "b", ENGINE_AGENT])) if klass != "triage" else "t",
            "tool": draw(st.sampled_from(TOOLS)), "class": klass, "what": draw(st.sampled_from(WHATS)) + f" {n % 3}",
        }
        if draw(st.booleans()):
            obj["symptom"] = draw(st.sampled_from(["crash", "false_absence", "ux_confusion"]))
        if klass == "triage" and ids:
            obj["answers"] = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3, unique=True))
            if draw(st.booleans()):
                obj["fingerprint"] = draw(st.sampled_from(FPS))
            if draw(st.booleans()):
                obj["disposition"] = draw(st.sampled_from(["fixed", "declined", "moot"]))
            if obj.get("disposition") == "fixed" and draw(st.booleans()):
                obj["sentinel"] = {"probe": "grep -n bug x", "expect": "absent"}
        lt = make_letter(obj)
        ids.append(lt.id)
        for box in draw(st.lists(st.sampled_from(BOXES), min_size=1, max_size=2, unique=True)):
            out.append((box, lt))
    return out


def reference(pairs: list[tuple[str | None, Letter]]) -> dict[str, Any]:
    """Cases, recurrence, kindless and claims of the whole union, computed directly."""
    held: dict[str, Letter] = {}
    box: dict[str, str | None] = {}
    for b, lt in pairs:
        held.setdefault(lt.id, lt)
        if b is not None and (box.get(lt.id) is None or b < str(box[lt.id])):
            box[lt.id] = b
        box.setdefault(lt.id, None)
    reports = [lt for lt in held.values() if lt.kind in REPORT_KINDS]
    receipts = [lt for lt in reports if lt.is_receipt]
    closed = {a for r in receipts for a in (r.answers or ())}
    key = {lt.id: instant_text(lt.ts) + lt.id for lt in reports}
    groups: dict[str, list[Letter]] = {}
    kindless = 0
    for lt in sorted(reports, key=lambda lt: key[lt.id]):
        fp = fingerprint_of(lt)
        if fp is not None:
            groups.setdefault(fp, []).append(lt)
        elif not lt.is_receipt and lt.klass != "win" and lt.agent != ENGINE_AGENT:
            kindless += 1
    naming: dict[str, Letter] = {}
    for rc in sorted(receipts, key=lambda x: key[x.id]):
        fp = rc.data().get("fingerprint")
        if isinstance(fp, str):
            naming[fp] = rc
    cases = []
    for fp in sorted(set(groups) | set(naming)):
        ws, r = groups.get(fp, []), naming.get(fp)
        d = r.data() if r else {}
        guarded = d.get("disposition") == "fixed" and isinstance(d.get("sentinel"), dict)
        unanswered = [w.id for w in ws if w.id not in closed]
        label = "open" if r is None or unanswered else "closed·guarded" if guarded else "answered"
        boxes = {box[w.id] for w in ws} | ({box[r.id]} if r else set())
        cases.append((fp, [w.id for w in ws], label, r.id if r else None, sorted(b for b in boxes if b)))
    latest: dict[str, str] = {}
    for r in sorted(receipts, key=lambda r: key[r.id]):
        if r.data().get("disposition") is not None:
            for a in r.answers or ():
                latest[a] = str(r.data()["disposition"])
    claims: dict[str, list[int]] = {}
    for fp, ws in groups.items():
        for w in ws:
            if w.klass == "honesty":
                row = claims.setdefault(fp, [0, 0, 0])
                row[{"fixed": 0, "declined": 1}.get(latest.get(w.id, ""), 2)] += 1
    return {"cases": cases, "recurrence": {fp: len(ws) for fp, ws in sorted(groups.items())},
            "kindless": kindless, "claims": dict(sorted(claims.items()))}


def project(book: CaseBook) -> dict[str, Any]:
    counted = {fp: [r["claimed_right"], r["claimed_wrong"], r["unresolved"]]
               for fp, r in claims(book)["by_fingerprint"].items()}
    return {
        "cases": [(c["fingerprint"], c["witness_ids"], c["label"], (c["receipt"] or {}).get("id"), c["boxes"])
                  for c in book.cases()],
        "recurrence": book.recurrence(), "kindless": book.kindless, "claims": counted,
    }


@settings(max_examples=200, deadline=None)
@given(letters(), st.randoms(use_true_random=False), st.integers(1, 5))
def test_the_fold_equals_the_reference_for_any_order_and_split(
    pairs: list[tuple[str | None, Letter]], rnd: Any, cuts: int
) -> None:
    want = reference(pairs)
    by_source: dict[str | None, list[Letter]] = {}
    for b, lt in pairs:
        by_source.setdefault(b, []).append(lt)
    sources = list(by_source.items())
    rnd.shuffle(sources)
    book = CaseBook()
    for b, lts in sources:
        lts = list(lts)
        rnd.shuffle(lts)
        size = max(1, len(lts) // cuts)
        for n in range(0, len(lts), size):
            book.feed(b, lts[n : n + size])
    assert project(book) == want
    for b, lts in sources:  # every source fed again: nothing changes
        book.feed(b, lts)
    assert project(book) == want


@settings(max_examples=100, deadline=None)
@given(letters())
def test_the_state_round_trips_through_its_snapshot(pairs: list[tuple[str | None, Letter]]) -> None:
    import msgspec

    book = CaseBook()
    for b, lt in pairs:
        book.feed(b, [lt])
    again = CaseBook(msgspec.msgpack.decode(msgspec.msgpack.encode(book.state()), type=CaseState))
    assert again.cases() == book.cases() and again.state() == book.state()
    assert claims(again) == claims(book) and labels(again) == labels(book)

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
from dovecote.model.letters import Letter, decode_line, make_letter
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


def _engine(**fields: Any) -> Letter:
    return make_letter({"agent": ENGINE_AGENT, **fields})


def test_monitor_and_engine_letters_through_the_fold() -> None:
    """The letters the engine writes (and monitor definitions) are read for what they are: never a
    kindless report, each in its role, and the case, streak and monitor answers follow them."""
    fp = "fp:north/false_absence"
    w1 = make_letter({"ts": "2026-07-01T10:00:00Z", "agent": "a", "tool": "north", "class": "bug",
                      "symptom": "false_absence", "what": "w1"})
    w2 = make_letter({"ts": "2026-07-02T10:00:00Z", "agent": "b", "tool": "North (beat)", "class": "bug",
                      "symptom": "false_absence", "what": "w2"})
    fixed = make_letter({"ts": "2026-07-03T10:00:00Z", "agent": "t", "tool": "triage", "class": "triage",
                         "answers": [w1.id, w2.id], "fingerprint": fp, "disposition": "fixed",
                         "sentinel": {"probe": "grep -c absent x", "expect": "absent"}})
    esc = _engine(ts="2026-07-02T10:00:00Z", **{"class": "triage"}, tool="north", symptom="false_absence",
                  fingerprint=fp, escalation=2, witnesses=[w1.id, w2.id], what="escalation")
    red = _engine(ts="2026-07-04T10:00:00Z", **{"class": "bug"}, tool="north", symptom="false_absence",
                  fingerprint=fp, receipt=fixed.id, sentinel_streak=1, what="sentinel regression")
    defs = [make_letter({"ts": f"2026-07-0{n}T00:00:00Z", "agent": "op", "kind": "monitor", "name": "backup",
                         "expect": "tool=backup", "every": f"{n}d", "paused": n == 2}) for n in (1, 2)]
    half = make_letter({"ts": "2026-07-01T00:00:00Z", "agent": "op", "kind": "monitor", "name": "x", "expect": "e"})
    down = _engine(ts="2026-07-05T00:00:00Z", **{"class": "bug"}, tool="monitor:backup", symptom="silent_drop",
                   monitor="backup", monitor_streak=1, what="monitor backup down")
    quit_ = _engine(ts="2026-07-05T00:00:00Z", **{"class": "friction"}, tool="claude", session="s-1", what="quit")
    not_engine = make_letter({"agent": "a", "kind": "sentinel_green", "fingerprint": fp, "sentinel_streak": 1})
    book = CaseBook()
    book.feed("home", [w1, w2, fixed, esc, red, *defs, half, down, quit_, not_engine])
    roles = {e.id: (e.role, e.fingerprint, e.streak, e.subject) for e in book.engine.values()}
    assert roles == {
        esc.id: ("escalation", fp, 0, None), red.id: ("regression", fp, 1, None),
        down.id: ("monitor_down", None, 1, "backup"), quit_.id: ("abandonment", None, 0, "s-1"),
    }
    assert book.kindless == 0  # an engine letter without a fingerprint is no one's kindless report
    assert not_engine.id not in book.seen  # only the engine writes markers
    [case] = [c for c in book.cases() if c["fingerprint"] == fp]
    # a regression is a new witness of its case, which no receipt answers yet: the case is open again
    assert (case["escalation"], case["regressions"], case["label"]) == (esc.id, [red.id], "open")
    assert (case["witness_ids"], case["unanswered"]) == ([w1.id, w2.id, red.id], [red.id])
    assert case["sentinel"] == {"probe": "grep -c absent x", "expect": "absent", "state": "red", "streak": 1}
    assert book.streak(fp) == (1, True) and book.monitor_streak("backup") == (1, True)
    assert {name: (m.id, m.every, m.paused) for name, m in book.monitor_defs().items()} == {
        "backup": (defs[1].id, "2d", True)
    }
    green = _engine(ts="2026-07-06T00:00:00Z", kind="sentinel_green", fingerprint=fp, receipt=fixed.id,
                    sentinel_streak=1, what="green")
    up = _engine(ts="2026-07-06T00:00:00Z", kind="monitor_up", monitor="backup", monitor_streak=1, what="up")
    book.feed("project:a", [green, up, esc])
    assert book.engine[green.id].role == "green" and book.engine[up.id].role == "monitor_up"
    assert book.engine[esc.id].box == "home"  # the first box by label keeps it
    assert book.streak(fp) == (1, False) and book.monitor_streak("backup") == (1, False)
    [case] = [c for c in book.cases() if c["fingerprint"] == fp]
    assert case["sentinel"]["state"] == "guarded"
    assert book.last_match({"tool": "monitor:backup"}) == "2026-07-05T00:00:00Z"
    assert book.last_match({"tool": "nothing"}) is None


def test_one_case_in_full_as_every_face_shows_it() -> None:
    fp = "fp:seek/crash"
    w1 = make_letter({"ts": "2026-07-01T10:00:00Z", "agent": "a", "tool": "Seek (v2)", "class": "bug",
                      "symptom": "crash", "what": "w1", "repo": "r1"})
    w2 = make_letter({"agent": "b", "tool": "seek", "class": "bug", "symptom": "crash", "what": "undated"})
    w3 = make_letter({"ts": "2026-07-03T10:00:00Z", "agent": "c", "tool": "seek", "class": "honesty",
                      "symptom": "crash", "what": "w3", "brain": "b3"})
    older = make_letter({"ts": "2026-07-03T11:00:00Z", "agent": "t", "class": "triage", "answers": [w1.id],
                         "fingerprint": fp, "disposition": "declined"})
    latest = make_letter({"ts": "2026-07-04T10:00:00Z", "agent": "t", "class": "triage", "fingerprint": fp,
                          "answers": [w2.id, w1.id, w1.id], "disposition": "fixed", "case_id": "seek-crash",
                          "commit": "9f3c2ab", "sentinel": {"probe": "true"}})
    book = CaseBook()
    book.feed("project:b", [w1, w3, older])
    book.feed(None, [w2, latest])
    book.feed("project:a", [w3, latest])
    [case] = book.cases()
    assert case == {
        "fingerprint": fp, "case_id": "seek-crash", "label": "open", "witnesses": 3,
        "witness_ids": [w2.id, w1.id, w3.id], "unanswered": [w3.id],
        "first_seen": "2026-07-01T10:00:00Z", "last_seen": "2026-07-03T10:00:00Z",
        "boxes": ["project:a", "project:b"],
        "receipt": {"id": latest.id, "ts": "2026-07-04T10:00:00Z", "disposition": "fixed", "ref": "9f3c2ab",
                    "box": "project:a"},
        "answered": sorted({w1.id, w2.id}), "escalation": None,
        "sentinel": {"probe": "true", "expect": "exit0", "state": "guarded", "streak": 0},
        "regressions": [],
        "line": f"case {fp} — 3 witnesses · fixed @9f3c2ab · sentinel: true",
    }
    assert book.recurrence() == {fp: 3}
    assert [(r.id, r.disposition) for r in book.receipts.values()] == [(older.id, "declined"), (latest.id, "fixed")]
    book.feed("home", [make_letter({"ts": "2026-07-05T10:00:00Z", "agent": "t", "class": "triage",
                                    "answers": [w3.id]})])
    [case] = book.cases()
    assert (case["label"], case["unanswered"]) == ("closed·guarded", [])


def test_the_case_line_names_count_disposition_commit_and_sentinel() -> None:
    from dovecote.derive.cases.book import Receipt, case_line

    def receipt(disposition: str | None, ref: str | None) -> Receipt:
        return Receipt("k", "i" * 12, None, "fp:x/crash", None, disposition, ref, None, None, [], None)

    assert case_line("fp:x/crash", 1, None, None) == "case fp:x/crash — 1 witness · open"
    assert case_line("fp:x/crash", 2, receipt(None, None), None) == "case fp:x/crash — 2 witnesses · answered"
    assert case_line("fp:x/crash", 0, receipt("moot", "abc"), None) == "case fp:x/crash — 0 witnesses · moot @abc"
    red = {"probe": "p", "state": "red"}
    assert case_line("fp:x/crash", 1, receipt("fixed", None), red) == (
        "case fp:x/crash — 1 witness · fixed · sentinel: p (red)")


def test_what_the_fold_keeps_is_the_same_whatever_the_order_and_box_of_arrival() -> None:
    """The snapshot in cache/ is the fold's state: the same letters give the same bytes, and each
    letter (engine markers and monitors too) keeps the lowest box that holds it."""
    import msgspec

    from dovecote.derive.cases.book import MonitorDef

    fp = "fp:seek/crash"
    newer = make_letter({"ts": "2026-07-02T10:00:00Z", "agent": "a", "tool": "seek", "class": "bug",
                         "symptom": "crash", "what": "newer"})
    older = make_letter({"ts": "2026-07-01T10:00:00Z", "agent": "a", "tool": "seek", "class": "bug",
                         "symptom": "crash", "what": "older"})
    typed = make_letter({"ts": "2026-07-01T09:00:00Z", "agent": "a", "kind": "report", "tool": "seek",
                         "symptom": "crash", "what": "a report that says it is one"})
    classless = make_letter({"ts": "2026-07-01T08:00:00Z", "agent": "a", "tool": "north", "what": "no class"})
    early_answer = make_letter({"ts": "2026-07-03T00:00:00Z", "agent": "t", "class": "triage",
                                "answers": [classless.id, "0" * 12], "fingerprint": fp, "case_id": 7,
                                "commit": ["not", "text"]})
    green = _engine(ts="2026-07-04T00:00:00Z", kind="sentinel_green", fingerprint=fp, sentinel_streak=1, what="g")
    down = _engine(ts="2026-07-04T00:00:00Z", **{"class": "bug"}, tool="monitor:nightly", symptom="silent_drop",
                   monitor="nightly", monitor_streak=2, what="down")
    other_down = _engine(ts="2026-07-04T00:00:00Z", **{"class": "bug"}, tool="monitor:weekly",
                         symptom="silent_drop", monitor="weekly", monitor_streak=5, what="down")
    nightly = make_letter({"ts": "2026-07-02T00:00:00Z", "agent": "op", "kind": "monitor", "name": "nightly",
                           "expect": "tool=seek", "every": "1d", "grace": "2h"})
    renamed = make_letter({"ts": "2026-07-01T00:00:00Z", "agent": "op", "kind": "monitor", "name": "nightly",
                           "expect": "tool=seek", "every": "7d", "grace": 5, "paused": "yes"})
    letters = [newer, older, typed, early_answer, classless, green, down, other_down, nightly, renamed]
    states = []
    for order, boxes in ((letters, ("project:b", "project:a")), (letters[::-1], ("project:a", "project:b"))):
        book = CaseBook()
        for box in boxes:
            book.feed(box, order)
        states.append(msgspec.msgpack.encode(book.state()))
        assert {e.id: e.box for e in book.engine.values()} == dict.fromkeys((green.id, down.id, other_down.id),
                                                                             "project:a")
        assert book.monitor_defs() == {"nightly": MonitorDef(
            "2026-07-02T00:00:00.000000" + nightly.id, nightly.id, "2026-07-02T00:00:00Z", "nightly", "tool=seek", "1d",
            "2h", False)}
        assert book.monitors[renamed.id].grace is None and book.monitors[renamed.id].paused is False
        assert book.last_match({"tool": "seek", "class": "bug"}) == "2026-07-02T10:00:00Z"
        assert book.last_match({"tool": "seek"}) == "2026-07-02T10:00:00Z"
        assert book.last_match({"kind": "report"}) == "2026-07-01T09:00:00Z"
        assert (book.monitor_streak("nightly"), book.monitor_streak("never")) == ((2, True), (0, False))
        assert book.kindless == 1 and book.closed == {"0" * 12}  # the classless letter arrived: no longer "unseen"
        [case] = [c for c in book.cases() if c["fingerprint"] == fp]
        assert (case["witness_ids"], case["case_id"], case["receipt"]["ref"]) == (
            [typed.id, older.id, newer.id], None, None)
    assert states[0] == states[1]


def test_a_receipt_whose_fields_the_quick_decoder_refuses_is_read_whole() -> None:
    # bytes that are not UTF-8 in a receipt field: the fields are read from the whole line instead
    line = (b'{"ts":"2026-07-03T00:00:00Z","agent":"t","class":"triage","answers":["' + b"a" * 12 + b'"],'
            b'"fingerprint":"fp:seek/crash","case_id":"caf\xe9","disposition":"fixed","commit":"9f3c2ab",'
            b'"sentinel":{"probe":"true","expect":"absent"}}')
    receipt = decode_line(line)
    assert receipt is not None
    book = CaseBook()
    book.feed("home", [receipt])
    [case] = book.cases()
    assert (case["case_id"], case["receipt"]["ref"], case["receipt"]["disposition"]) == (
        "caf\ufffd", "9f3c2ab", "fixed")
    assert case["sentinel"] == {"probe": "true", "expect": "absent", "state": "guarded", "streak": 0}


def test_regressions_in_streak_order_and_each_case_its_own_streak() -> None:
    fp, other = "fp:seek/crash", "fp:north/crash"

    def regression(f: str, streak: int) -> Letter:
        family, _, symptom = f[3:].rpartition("/")
        return _engine(ts="2026-07-04T10:00:00Z", **{"class": "bug"}, tool=family, symptom=symptom, fingerprint=f,
                       sentinel_streak=streak, what=f"regression {streak}")

    second, first, elsewhere = regression(fp, 2), regression(fp, 1), regression(other, 3)
    only_case_id = make_letter({"ts": "2026-07-05T00:00:00Z", "agent": "t", "class": "triage",
                                "answers": [first.id], "case_id": "seek-crash"})
    book = CaseBook()
    book.feed("home", [second, elsewhere, first, only_case_id])
    [case] = [c for c in book.cases() if c["fingerprint"] == fp]
    assert case["regressions"] == [first.id, second.id]
    assert (book.streak(fp), book.streak(other), book.streak("fp:none/crash")) == ((2, True), (3, True), (0, False))
    assert list(book.receipts) == [only_case_id.id]  # a receipt naming only its case is kept
    w = book.witnesses[first.id]
    assert (w.brain, w.repo, w.box, w.fingerprint, w.honesty) == (None, None, "home", fp, False)
    placed = make_letter({"agent": "a", "tool": "seek", "class": "honesty", "symptom": "crash", "what": "w",
                          "brain": "b1", "repo": "r1"})
    book.feed(None, [placed])
    w = book.witnesses[placed.id]
    assert (w.brain, w.repo, w.box, w.honesty) == ("b1", "r1", None, True)


def test_last_match_is_the_newest_instant_and_survives_the_snapshot() -> None:
    import msgspec

    def seek(what: str, ts: str | None, agent: str = "a") -> Letter:
        return make_letter({"agent": agent, "tool": "seek", "class": "win", "what": what, **({"ts": ts} if ts else {})})

    book = CaseBook()
    # an undated letter, then a dated one of the same signature, then another signature's letter half a
    # second earlier: times are compared as instants (a fraction of a second is later than none)
    book.feed("home", [seek("undated", None), seek("later", "2026-07-02T10:00:00.5Z"),
                       seek("earlier", "2026-07-02T10:00:00Z", agent="b")])
    assert book.last_match({"tool": "seek"}) == "2026-07-02T10:00:00.5Z"
    again = CaseBook(msgspec.msgpack.decode(msgspec.msgpack.encode(book.state()), type=CaseState))
    assert again.last_match({"tool": "seek"}) == "2026-07-02T10:00:00.5Z"
    assert again.last_match({"tool": "north"}) is None

"""The sweep's fast paths answer byte for byte what the plain rendering does.

* the streamed, batch-built CLI output equals a straightforward rendering
  (every row built alone from its line, its box found by scanning the boxes,
  the whole answer serialized at once);
* a cold process answering from the fold snapshot in ``cache/`` equals one
  without it, after new letters of every kind, and reads only the new ones;
* a snapshot whose check fails (a same-size rewrite in place), or that does
  not decode, is ignored, never trusted.
"""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from dovecote.derive.fates import fold
from dovecote.handle.api import Dovecote, open_home
from dovecote.model.letters import Letter, canonical_line, make_letter
from dovecote.ops.reports.sweep import sweep as sweep_op
from dovecote.ops.reports.sweeprows import indented_chunks, make_rows
from dovecote.ops.warm import sweep as sweepcache
from dovecote.util.timeutil import instant_text, order_key
from dovecote.verbs import Sweep
from helpers import add_project, lid, new_home, rep, run_cli

SNAP = ("cache", "sweep", sweepcache.NAME)


def T(hour: int, minute: int = 0) -> str:
    return f"2026-07-05T{hour:02d}:{minute:02d}:00Z"


def home_of_every_fate(tmp: Path) -> tuple[Dovecote, dict[str, dict[str, Any]]]:
    """Letters of every fate in every box and in the spool, a letter held by two
    boxes, a receipt closing across boxes, odd times and a ``what`` that is no string."""
    dc = new_home(tmp)
    add_project(dc, tmp, "repo-a")
    add_project(dc, tmp, "repo-b")
    lt: dict[str, dict[str, Any]] = {
        "wet_a": rep("wet in a", ts=T(10)),
        "wet_b": rep("wet in b", ts=T(9), repo="repo-b"),
        "wet_home": rep("wet at home", ts="2026-07-05T10:00:00+02:00", repo="all"),
        "picked": rep("picked", ts=T(8), repo="repo-b"),
        "fixed": rep("fixed", ts=T(7)),
        "ext": rep("foreign", ts=T(6), tool="context7 docs"),
        "mis": rep("misdelivered", ts=T(11), repo="all", klass="memory_misdelivery", misdelivery_kind="leak"),
        "odd_what": {**rep("x", ts=T(12), repo="repo-b"), "what": {"nested": [1, 2]}},
        "no_ts": {k: v for k, v in rep("no time").items() if k != "ts"},
        "frac": rep("fraction", ts="2026-07-05T10:00:00.250Z"),
        "newline": rep("two\nlines \u00e9", ts=T(13)),
    }
    lt["pick"] = rep("on it", ts=T(14), repo="repo-a", klass="friction", answers=[lid(lt["picked"])])
    lt["rcpt"] = rep("done", ts=T(15), repo="repo-b", klass="triage", answers=[lid(lt["fixed"])])
    odd = {"wet_home": dc.layout.home_box(), "no_ts": dc.layout.spool, "frac": dc.layout.project_box("repo-a"),
           "odd_what": dc.layout.project_box("repo-b")}  # lines report would refuse: written as another tool would
    dc.report([v for k, v in lt.items() if k not in odd])
    dc.distribute()
    for k, path in odd.items():
        with open(path, "ab") as f:
            f.write(canonical_line(lt[k]) + b"\n")
    dc.report([rep("still in the spool", ts=T(16), repo="zephyr")])  # an unknown project: stays pending
    with open(dc.layout.project_box("repo-b"), "ab") as f:  # a letter both boxes hold
        f.write(canonical_line(lt["wet_a"]) + b"\n")
    return dc, lt


def reference_rendering(dc: Dovecote) -> bytes:
    """The sweep's JSON built the plain way: the fold's answer, each row alone."""
    d = sweep_op(open_home(dc.layout.root), do_distribute=False, persisted=False).to_dict()
    book = sweep_op(open_home(dc.layout.root), do_distribute=False, persisted=False).book
    assert book is not None
    boxes = sorted((str(a), {ln.id for ln in dc.store.read(a).letters}) for a in dc.report_boxes())

    def row(i: str) -> dict[str, Any]:
        letter = book.entries[i]
        data = letter.data()
        return {
            "id": i, "ts": letter.ts, "agent": letter.agent, "class": letter.klass, "repo": letter.repo,
            "brain": letter.brain, "tool": letter.tool,
            "what": data["what"] if isinstance(data.get("what"), str) else None,
            "answers": list(letter.answers or ()), "answered_by": book.answered_by(i), "fate": book.fate_of(i),
            "box": next((label for label, ids in boxes if i in ids), None),
        }

    opened = [i for i in book.entries if book.fate_of(i) in ("wet_ink", "in_flight")]
    opened.sort(key=lambda i: (order_key(book.entries[i].ts), i))
    d["letters"] = [row(i) for i in opened]
    return orjson.dumps(d, option=orjson.OPT_INDENT_2) + b"\n"


def cli_sweep(tmp: Path, dc: Dovecote) -> bytes:
    r = run_cli(tmp, "sweep", "--json", "--no-distribute", home=dc.layout.root)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


def test_the_streamed_output_equals_the_plain_rendering(tmp_path: Path) -> None:
    dc, _ = home_of_every_fate(tmp_path)
    expected = reference_rendering(dc)
    assert cli_sweep(tmp_path, dc) == expected  # no snapshot yet: folded from nothing
    assert dc.layout.root.joinpath(*SNAP).exists()
    assert cli_sweep(tmp_path, dc) == expected  # answered from the snapshot
    d = orjson.loads(expected)
    assert {r["fate"] for r in d["letters"]} == {"wet_ink", "in_flight"}
    assert {r["box"] for r in d["letters"]} == {"home", "project:repo-a", "project:repo-b", None}


def more_letters(dc: Dovecote, lt: dict[str, dict[str, Any]]) -> None:
    """New letters of every kind, written by another process's handle."""
    other = open_home(dc.layout.root)
    other.report([
        rep("late wet", ts=T(17)),
        rep("early wet", ts=T(1), repo="repo-b"),
        rep("picks wet", ts=T(18), repo="repo-b", answers=[lid(lt["wet_a"])]),
        rep("closes picked", ts=T(19), repo="repo-b", klass="triage", answers=[lid(lt["picked"]), lid(lt["mis"])]),
        rep("picks the future", ts=T(20), answers=["0123456789ab"]),
    ])
    other.distribute()
    with open(dc.layout.project_box("repo-a"), "ab") as f:
        f.write(canonical_line(rep("future", ts=T(2))) + b"\n{broken\n")  # not the id above: a plain wet one
        f.write(canonical_line(lt["wet_b"]) + b"\n")  # now repo-a holds it too: its box changes
    with open(dc.layout.spool, "ab") as f:
        f.write(b'{"torn":')


def test_a_cold_process_with_snapshots_answers_as_one_without(tmp_path: Path) -> None:
    dc, lt = home_of_every_fate(tmp_path)
    cli_sweep(tmp_path, dc)  # writes the snapshot
    more_letters(dc, lt)
    with_snap = cli_sweep(tmp_path, dc)
    shutil.rmtree(dc.layout.cache)
    assert with_snap == cli_sweep(tmp_path, dc) == reference_rendering(dc)


def test_only_the_new_letters_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dc, _ = home_of_every_fate(tmp_path)
    open_home(dc.layout.root).sweep(Sweep(distribute=False)).to_dict()  # folded from nothing: snapshot written
    snap = sweepcache.load(dc, sweepcache.fold_key(dc, ["spool", *dc.report_boxes()]))
    assert snap is not None
    sizes = {s.label: s.mark.position for s in snap.sources}
    assert sizes["project:repo-a"] == dc.layout.project_box("repo-a").stat().st_size
    fed: list[int] = []
    real = sweepcache.Resumed.feed
    monkeypatch.setattr(sweepcache.Resumed, "feed", lambda self, box, ls: (fed.append(len(ls)), real(self, box, ls)))
    open_home(dc.layout.root).report([rep("one", ts=T(21), repo="all"), rep("two", ts=T(22), repo="all")])
    d = open_home(dc.layout.root).sweep(Sweep(distribute=False)).to_dict()
    assert sum(fed) == 2  # the two new spool letters, nothing else
    assert len(fed) == 1 + len(dc.report_boxes())
    monkeypatch.undo()
    shutil.rmtree(dc.layout.cache)
    assert orjson.dumps(d) == orjson.dumps(open_home(dc.layout.root).sweep(Sweep(distribute=False)).to_dict())


def test_a_cold_sweep_reads_each_letters_time_once_per_fold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep folded from nothing (and writing its snapshots) keys each letter's time once in the
    case fold and each open letter's once in the fate fold: the snapshot's rows, the receipts
    and the listing reuse those keys. Reading every time again was a tenth of a cold sweep."""
    dc, _ = home_of_every_fate(tmp_path)
    calls = [0]

    def counted(value: object) -> str:
        calls[0] += 1
        return instant_text(value)

    for module in [m for name, m in sys.modules.items() if name.startswith("dovecote.")]:
        if getattr(module, "instant_text", None) is instant_text:
            monkeypatch.setattr(module, "instant_text", counted)
    d = open_home(dc.layout.root).sweep(Sweep(distribute=False)).to_dict()
    assert dc.layout.root.joinpath(*SNAP).exists() and d["open"] > 0 and d["receipts"] > 0
    assert calls[0] <= d["total"] + (d["total"] - d["receipts"])  # each letter in one fold, a non-receipt in two


def test_a_same_size_rewrite_in_place_invalidates_the_snapshot(tmp_path: Path) -> None:
    dc, _ = home_of_every_fate(tmp_path)
    cli_sweep(tmp_path, dc)
    box = dc.layout.project_box("repo-a")
    ino, data = box.stat().st_ino, box.read_bytes()
    assert b'"fraction"' in data  # a letter only this box holds
    with open(box, "r+b") as f:  # same inode, same size, other bytes
        f.write(data.replace(b'"fraction"', b'"fractiom"'))
    assert box.stat().st_ino == ino and box.stat().st_size == len(data)
    out = cli_sweep(tmp_path, dc)
    assert b'"fractiom"' in out and b'"fraction"' not in out
    assert out == reference_rendering(dc)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "other version"])
def test_a_damaged_snapshot_is_ignored(tmp_path: Path, damage: str) -> None:
    dc, lt = home_of_every_fate(tmp_path)
    cli_sweep(tmp_path, dc)
    more_letters(dc, lt)
    path = dc.layout.root.joinpath(*SNAP)
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x93garbage" * 50)
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        old = sweepcache.loads(data)
        old.version = 0
        path.write_bytes(b"".join(sweepcache.dumps(old)))
    assert cli_sweep(tmp_path, dc) == reference_rendering(dc)
    assert sweepcache.load(dc, sweepcache.fold_key(dc, ["spool", *dc.report_boxes()])) is not None  # rewritten


def test_a_roster_change_is_another_fold(tmp_path: Path) -> None:
    dc, _ = home_of_every_fate(tmp_path)
    cli_sweep(tmp_path, dc)
    add_project(dc, tmp_path, "repo-c")
    assert cli_sweep(tmp_path, dc) == reference_rendering(dc)


def test_verify_compares_the_sweep_with_and_without_snapshots(tmp_path: Path) -> None:
    dc, lt = home_of_every_fate(tmp_path)
    cli_sweep(tmp_path, dc)
    more_letters(dc, lt)
    r = open_home(dc.layout.root).verify()
    assert r.ok and "sweep" in r.checked
    assert dc.layout.root.joinpath(*SNAP).exists()  # rebuilt


# -- the resumed fold over random letters ------------------------------------------------


def random_letters(rng: random.Random, n: int) -> list[Letter]:
    out: list[Letter] = []
    for k in range(n):
        obj: dict[str, Any] = rep(f"w{k}", ts=T(rng.randrange(24), rng.randrange(60)), tool=rng.choice(
            ["seek", "context7", "trace"]), klass=rng.choice(["bug", "triage", "friction", "memory_misdelivery"]),
            misdelivery_kind="leak")
        if out and rng.random() < 0.5:
            obj["answers"] = [rng.choice(out).id for _ in range(rng.randint(1, 3))]
            if rng.random() < 0.2:
                obj["answers"].append(f"{rng.randrange(16**12):012x}")
        if rng.random() < 0.1:
            obj["kind"] = "message"
        out.append(make_letter(obj))
    # forward references too: a letter may answer one that arrives later
    return [*out[n // 2 :], *out[: n // 2]] if rng.random() < 0.5 else out


@pytest.mark.parametrize("seed", range(25))
def test_the_resumed_fold_equals_the_full_fold(seed: int) -> None:
    rng = random.Random(seed)
    letters = random_letters(rng, rng.randint(1, 80))
    cut = rng.randint(0, len(letters))
    markers = ["context7"]
    book = fold(letters[:cut], markers)
    head_rows = make_rows([book.entries[i] for i in book.open_letters()], [])
    snap = sweepcache.from_book(book, head_rows, "k", [])
    resumed = sweepcache.Resumed(sweepcache.loads(b"".join(sweepcache.dumps(snap))), markers)
    resumed.feed(None, letters[cut:] + letters[: rng.randint(0, cut)])  # and some it already has
    full = fold(letters, markers)
    assert (resumed.total, resumed.receipts, resumed.misdelivery) == (full.total, full.receipts, full.misdelivery)
    assert resumed.counts == full.counts
    rows = resumed.rows()
    assert [r["id"] for r in rows] == full.open_letters()
    assert [(r["fate"], r["answered_by"]) for r in rows] == [
        (full.fate_of(r["id"]), full.answered_by(r["id"])) for r in rows
    ]


@pytest.mark.parametrize("n", [0, 1, 2, 4095, 4096, 4097, 9000])
def test_chunked_json_is_the_whole_dump(n: int) -> None:
    head = {"schema": "s", "nested": {"a": [], "b": [1, {"c": "x\ny"}]}, "e": None}
    rows = [{"id": f"{i:012x}", "what": "line\nbreak \u00e9" if i % 3 else None, "answers": [] if i % 2 else ["a"]}
            for i in range(n)]
    whole = orjson.dumps({**head, "letters": rows}, option=orjson.OPT_INDENT_2) + b"\n"
    for size in (1, 7, 4096):
        batches = [rows[i : i + size] for i in range(0, n, size)]
        assert b"".join(indented_chunks(head, "letters", [[], *batches, []])) == whole

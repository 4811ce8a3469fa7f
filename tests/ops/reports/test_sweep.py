"""``sweep`` and ``box``: fates across every box, or within one."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.addresses import HOME, Address
from dovecote.model.letters import canonical_line
from dovecote.model.results import builtins
from dovecote.verbs import Box, EntityAdd, Move, StaleCheck, Sweep
from helpers import add_project, lid, new_home, open_home, rep, run_cli

pytestmark = pytest.mark.both_stores

SWEEP_KEYS = [
    "schema", "spool_path", "distribution", "total", "open", "counts", "receipts",
    "misdelivery", "recurrence", "kindless", "unreachable", "malformed", "letters",
]
ROW_KEYS = ["id", "ts", "agent", "class", "repo", "brain", "tool", "what", "answers", "answered_by", "fate", "box"]
COUNT_KEYS = ["wet_ink", "in_flight", "fired_clay", "external"]


def T(hour: int) -> str:
    return f"2026-07-05T{hour:02d}:00:00Z"


def corpus(tmp: Path) -> tuple[Dovecote, dict[str, dict[str, object]]]:
    """A home with one letter of every fate, a receipt, and a misdelivery."""
    dc = new_home(tmp)
    add_project(dc, tmp, "repo-a")
    add_project(dc, tmp, "repo-b")
    wet = rep("wet", ts=T(10))
    picked = rep("picked", ts=T(9), repo="repo-b")
    fixed = rep("fixed", ts=T(8))
    ext = rep("foreign", ts=T(7), tool="context7 docs")
    mis = rep("misdelivered", ts=T(11), repo="all", klass="memory_misdelivery", misdelivery_kind="leak")
    pick = rep("on it", ts=T(12), repo="all", klass="friction", answers=[lid(picked)])
    rcpt = rep("done", ts=T(13), repo="all", klass="triage", tool="triage", answers=[lid(fixed)], disposition="fixed")
    letters = {"wet": wet, "picked": picked, "fixed": fixed, "ext": ext, "mis": mis, "pick": pick, "rcpt": rcpt}
    dc.report(list(letters.values()))
    return dc, letters


def test_the_json_shape(tmp_path: Path) -> None:
    dc, _ = corpus(tmp_path)
    d = dc.sweep().to_dict()
    assert list(d) == SWEEP_KEYS
    assert d["schema"] == "dovecote-sweep-v1"
    assert d["spool_path"] == str(dc.layout.spool)
    assert list(d["distribution"]) == [
        "spool_total", "appended", "to_project", "to_home", "pending", "pending_detail", "elsewhere"
    ]
    assert list(d["counts"]) == COUNT_KEYS
    assert d["unreachable"] == [] and d["malformed"] == []
    assert all(list(row) == ROW_KEYS for row in d["letters"])
    # JSON-serializable as is
    assert orjson.loads(orjson.dumps(d)) == d


def test_counts_and_fates(tmp_path: Path) -> None:
    dc, lt = corpus(tmp_path)
    d = dc.sweep(Sweep(include_all=True)).to_dict()
    assert d["counts"] == {"wet_ink": 3, "in_flight": 1, "fired_clay": 1, "external": 1}
    # wet: the plain one, the misdelivery, and the non-receipt that picked a letter up
    assert d["open"] == 4
    assert d["receipts"] == 1
    assert d["total"] == 7 == sum(d["counts"].values()) + d["receipts"]
    assert d["misdelivery"] == 1
    fates = {r["id"]: r["fate"] for r in d["letters"]}
    assert fates == {
        lid(lt["wet"]): "wet_ink",
        lid(lt["mis"]): "wet_ink",
        lid(lt["pick"]): "wet_ink",
        lid(lt["picked"]): "in_flight",
        lid(lt["fixed"]): "fired_clay",
        lid(lt["ext"]): "external",
        lid(lt["rcpt"]): None,
    }


def test_a_row_carries_the_letter_and_its_references(tmp_path: Path) -> None:
    dc, lt = corpus(tmp_path)
    rows = {r["id"]: r for r in dc.sweep(Sweep(include_all=True)).to_dict()["letters"]}
    picked = rows[lid(lt["picked"])]
    assert picked == {
        "id": lid(lt["picked"]),
        "ts": T(9),
        "agent": "probe",
        "class": "bug",
        "repo": "repo-b",
        "brain": None,
        "tool": "seek",
        "what": "picked",
        "answers": [],
        "answered_by": [lid(lt["pick"])],
        "fate": "in_flight",
        "box": "project:repo-b",
    }
    assert rows[lid(lt["pick"])]["answers"] == [lid(lt["picked"])]
    assert rows[lid(lt["pick"])]["box"] == "home"
    assert rows[lid(lt["fixed"])]["answered_by"] == [lid(lt["rcpt"])]


def test_letters_are_open_only_oldest_first_by_default(tmp_path: Path) -> None:
    dc, lt = corpus(tmp_path)
    d = dc.sweep().to_dict()
    assert [r["id"] for r in d["letters"]] == [lid(lt[k]) for k in ("picked", "wet", "mis", "pick")]
    assert all(r["fate"] in ("wet_ink", "in_flight") for r in d["letters"])


def test_all_lists_every_letter_oldest_first(tmp_path: Path) -> None:
    dc, lt = corpus(tmp_path)
    d = dc.sweep(Sweep(include_all=True)).to_dict()
    order = ("ext", "fixed", "picked", "wet", "mis", "pick", "rcpt")
    assert [r["id"] for r in d["letters"]] == [lid(lt[k]) for k in order]
    # counts do not depend on the listing
    assert {k: v for k, v in d.items() if k not in ("letters", "distribution")} == {
        k: v for k, v in dc.sweep().to_dict().items() if k not in ("letters", "distribution")
    }


def test_no_distribute_leaves_distribution_null_and_still_counts_the_spool(tmp_path: Path) -> None:
    dc, _ = corpus(tmp_path)
    d = dc.sweep(Sweep(distribute=False)).to_dict()
    assert d["distribution"] is None
    assert d["total"] == 7
    assert all(r["box"] is None for r in d["letters"])
    assert not dc.layout.boxes.exists(), "--no-distribute must not file anything"


def test_each_letter_counts_once_wherever_it_is(tmp_path: Path) -> None:
    dc, lt = corpus(tmp_path)
    dc.distribute()
    # the same line also reached home and repo-b (e.g. by a git merge of a copied ledger)
    line = canonical_line(lt["wet"])
    dc.store.append(HOME, [line])
    dc.store.append(Address("project", "repo-b"), [line])
    d = open_home(dc.layout.root).sweep(Sweep(include_all=True)).to_dict()
    assert d["total"] == 7
    assert [r["id"] for r in d["letters"]].count(lid(lt["wet"])) == 1
    # its box is named deterministically: the first by label
    row = next(r for r in d["letters"] if r["id"] == lid(lt["wet"]))
    assert row["box"] == "home"


@pytest.mark.files_only
def test_malformed_and_torn_lines_are_reported_with_path_and_line(tmp_path: Path) -> None:
    dc, _ = corpus(tmp_path)
    dc.distribute()
    box = dc.layout.project_box("repo-a")
    with open(box, "ab") as f:
        f.write(b"{not json\n[1,2]\n")
    with open(dc.layout.spool, "ab") as f:
        f.write(b'{"tool":"seek","cla')
    n_box = box.read_bytes().count(b"\n")
    n_spool = dc.layout.spool.read_bytes().count(b"\n")
    d = open_home(dc.layout.root).sweep(Sweep(distribute=False)).to_dict()
    assert d["total"] == 7, "defects are never letters and never fatal"
    assert sorted((m["path"], m["line"], m["kind"]) for m in d["malformed"]) == sorted([
        (str(box), n_box - 1, "malformed"),
        (str(box), n_box, "malformed"),
        (str(dc.layout.spool), n_spool + 1, "torn"),
    ])
    # the next append starts on a fresh line; the fragment becomes a malformed line
    dc2 = open_home(dc.layout.root)
    dc2.report([rep("after the tear")])
    d2 = dc2.sweep(Sweep(distribute=False)).to_dict()
    assert d2["total"] == 8
    spool_defects = [(m["line"], m["kind"]) for m in d2["malformed"] if m["path"] == str(dc.layout.spool)]
    assert spool_defects == [(n_spool + 1, "malformed")]


@pytest.mark.files_only
@pytest.mark.parametrize("distribute", [True, False])
def test_a_warm_sweep_after_more_appends_equals_a_cold_sweep(tmp_path: Path, distribute: bool) -> None:
    dc, lt = corpus(tmp_path)
    dc.distribute()
    warm = dc
    warm.sweep(Sweep(distribute=distribute))
    warm.sweep(Sweep(distribute=distribute, include_all=True))
    # more letters arrive through another handle: new open letters, a pickup, a receipt
    other = open_home(dc.layout.root)
    other.report([
        rep("late wet", ts=T(14)),
        rep("early wet", ts=T(1), repo="repo-b"),
        rep("picks wet", ts=T(15), repo="all", answers=[lid(lt["wet"])]),
        rep("closes mis", ts=T(16), klass="triage", tool="triage", answers=[lid(lt["mis"])]),
        rep("unknown", ts=T(17), repo="zephyr"),
    ])
    with open(dc.layout.home_box(), "ab") as f:
        f.write(b"garbage\n")
    first = warm.sweep(Sweep(distribute=distribute)).to_dict()
    if distribute:  # the warm handle files the new letters itself; the pending one stays named
        assert first["distribution"]["appended"] == 4
        assert first["distribution"]["pending"] == ["zephyr"]
    for include_all in (False, True):
        # (a distributing sweep appends 0 from here on, warm or cold, so the receipts compare too)
        a = orjson.dumps(warm.sweep(Sweep(distribute=distribute, include_all=include_all)).to_dict())
        b = orjson.dumps(open_home(dc.layout.root).sweep(Sweep(
            distribute=distribute, include_all=include_all
        )).to_dict())
        assert a == b
    final = orjson.loads(a)
    assert final["total"] == 12
    assert final["counts"]["in_flight"] == 2 and final["receipts"] == 2


@pytest.mark.files_only
def test_a_warm_sweep_notices_a_replaced_ledger(tmp_path: Path) -> None:
    dc, _ = corpus(tmp_path)
    dc.distribute()
    dc.sweep(Sweep(distribute=False))
    box = dc.layout.project_box("repo-a")
    # a git checkout replaces the file: the warm handle must not keep what it no longer holds
    kept = box.read_bytes().split(b"\n")[0] + b"\n"
    tmp = box.with_name("new")
    tmp.write_bytes(kept)
    tmp.replace(box)
    a = orjson.dumps(dc.sweep(Sweep(distribute=False, include_all=True)).to_dict())
    b = orjson.dumps(open_home(dc.layout.root).sweep(Sweep(distribute=False, include_all=True)).to_dict())
    assert a == b


def test_progress_names_every_source(tmp_path: Path) -> None:
    dc, _ = corpus(tmp_path)
    seen: list[tuple[str, int, int]] = []
    dc.sweep(progress=lambda label, n, total: seen.append((label, n, total)))
    assert [s[0] for s in seen] == ["spool", "home", "project:repo-a", "project:repo-b"]
    assert seen[-1][1] == seen[-1][2] == 4


# -- box ----------------------------------------------------------------------------------


def test_box_reads_one_box_only(tmp_path: Path) -> None:
    dc, lt = corpus(tmp_path)
    dc.distribute()
    d = dc.box(Box(address="project:repo-a", include_all=True)).to_dict()
    assert d["box"] == "project:repo-a" and d["exists"] and d["known"]
    assert sorted(r["id"] for r in d["letters"]) == sorted(lid(lt[k]) for k in ("wet", "fixed", "ext"))
    # scoped: the receipt for "fixed" lives in home, so within this box "fixed" is still wet
    assert d["counts"] == {"wet_ink": 2, "in_flight": 0, "fired_clay": 0, "external": 1}
    assert d["total"] == 3 and d["open"] == 2 and d["receipts"] == 0
    home = dc.box(Box(address="home")).to_dict()
    assert home["total"] == 3 and home["receipts"] == 1
    assert all(r["box"] == "home" for r in home["letters"])


def test_a_missing_box_reads_zero(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    d = dc.box(Box(address="project:repo-a")).to_dict()
    assert (d["exists"], d["known"], d["total"], d["open"], d["letters"]) == (False, True, 0, 0, [])
    assert d["counts"] == dict.fromkeys(COUNT_KEYS, 0)
    assert dc.box(Box(address="home")).to_dict()["total"] == 0


def test_an_unknown_project_reads_zero_and_says_so(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    d = dc.box(Box(address="project:nope")).to_dict()
    assert (d["exists"], d["known"], d["total"]) == (False, False, 0)
    e = dc.box(Box(address="entity:nobody")).to_dict()
    assert (e["known"], e["total"]) == (False, 0)
    dc.add_entity(EntityAdd(entity_id="ops"))
    assert dc.box(Box(address="entity:ops")).to_dict()["known"] is True


def test_an_unreachable_in_repo_box_reads_zero(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    root = add_project(dc, tmp_path, "ghost", exists=False, box_in_repo=True)
    d = dc.box(Box(address="project:ghost")).to_dict()
    assert (d["exists"], d["known"], d["total"]) == (False, True, 0)
    assert not root.exists()


@pytest.mark.parametrize("bad", ["nowhere", "projects:x", "home:x", ""])
def test_box_refuses_an_invalid_address(tmp_path: Path, bad: str) -> None:
    dc = new_home(tmp_path)
    with pytest.raises(Refusal) as e:
        dc.box(Box(address=bad))
    assert e.value.reason == "invalid_address"


def test_a_warm_handle_follows_roster_changes(tmp_path: Path) -> None:
    dc, _ = corpus(tmp_path)
    z = rep("for zephyr", ts=T(20), repo="zephyr")
    dc.report([z])
    first = dc.sweep().to_dict()
    assert first["distribution"]["pending"] == ["zephyr"]
    # the owner adds the project through this same handle: the pending letter is filed
    add_project(dc, tmp_path, "zephyr")
    warm = dc.sweep().to_dict()
    assert warm["distribution"]["pending"] == [] and warm["distribution"]["appended"] == 1
    row = next(r for r in warm["letters"] if r["id"] == lid(z))
    assert row["box"] == "project:zephyr"
    cold = open_home(dc.layout.root)
    assert orjson.dumps(dc.sweep(Sweep(
        include_all=True
    )).to_dict()) == orjson.dumps(cold.sweep(Sweep(include_all=True)).to_dict())


def test_a_warm_handle_files_into_an_in_repo_box_once_it_appears(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    root = add_project(dc, tmp_path, "ghost", exists=False, box_in_repo=True)
    g = rep("g", repo="ghost")
    dc.report([g])
    before = dc.sweep().to_dict()
    assert before["unreachable"] == ["project:ghost"]
    assert before["distribution"]["pending_detail"] == [{"name": "ghost", "reason": "unreachable", "letters": 1}]
    root.mkdir(parents=True)
    after = dc.sweep().to_dict()
    assert after["unreachable"] == [] and after["distribution"]["appended"] == 1
    assert after["letters"][0]["box"] == "project:ghost"
    assert after["total"] == 1
    cold = open_home(dc.layout.root)
    assert orjson.dumps(dc.sweep().to_dict()) == orjson.dumps(cold.sweep().to_dict())


@pytest.mark.files_only
def test_an_unreadable_box_is_named_not_skipped(tmp_path: Path) -> None:
    dc, _ = corpus(tmp_path)
    dc.distribute()
    broken = dc.layout.project_box("repo-b")
    broken.unlink()
    broken.mkdir()  # a real read error, whoever runs the test
    (broken / "x").write_bytes(b"x" * 100)
    d = open_home(dc.layout.root).sweep(Sweep(distribute=False)).to_dict()
    assert d["unreachable"] == ["project:repo-b"]
    # its letter is still counted from the spool, never guessed away
    assert d["total"] == 7


def test_box_labels_a_project_as_the_roster_spells_it(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "Beacon")
    dc.report([rep("x", repo="beacon")])
    dc.distribute()
    view = dc.box(Box(address="project:beacon")).to_dict()
    assert view["box"] == "project:Beacon" and view["known"] and view["total"] == 1
    assert dc.sweep(Sweep(distribute=False)).to_dict()["letters"][0]["box"] == view["box"]


def test_box_counts_every_letter_it_holds_by_kind(tmp_path: Path) -> None:
    # issue 6, item 14: an entity box full of mail and a home holding signals said "0 letters"
    from mailhelpers import mail_home, send

    dc = mail_home(tmp_path)
    first = send(dc, "first", current_tic=1)
    send(dc, "second", current_tic=1)
    dc.move(Move(kind="seen", entity_id="ent_builder", ref=first, current_tic=2))
    dc.move(Move(kind="claim", entity_id="ent_builder", ref=first, current_tic=2))
    assert builtins(dc.stale_check(StaleCheck(current_tic=500, emit_signals=True)))["signals_emitted"] == 1
    dc.report([rep("a report", repo="all")])
    dc.distribute()
    for handle in (dc, open_home(dc.layout.root)):
        e = handle.box(Box(address="entity:ent_builder")).to_dict()
        assert e["held"] == 4 and e["by_kind"] == {"claim": 1, "message": 2, "seen": 1}
        assert (e["total"], e["open"], e["counts"]) == (0, 0, dict.fromkeys(COUNT_KEYS, 0))  # no field reports
        h = handle.box(Box(address="home")).to_dict()
        assert h["held"] == 2 and h["by_kind"] == {"report": 1, "signal": 1}
        assert (h["total"], h["open"]) == (1, 1)
    assert list(e)[:5] == ["box", "exists", "known", "held", "by_kind"]
    assert dc.box(Box(address="entity:ent_ops")).to_dict()["by_kind"] == {"sent": 2}  # the sender keeps a copy
    dc.add_entity(EntityAdd(entity_id="ent_idle"))
    empty = dc.box(Box(address="entity:ent_idle")).to_dict()
    assert (empty["held"], empty["by_kind"]) == (0, {})


@pytest.mark.files_only
def test_box_text_counts_every_letter_with_the_right_plural(tmp_path: Path) -> None:
    from mailhelpers import mail_home, send

    dc = mail_home(tmp_path)
    home = dc.layout.root
    send(dc, "only one")
    out = run_cli(tmp_path, "box", "entity:ent_builder", home=home).stdout.decode()
    assert "entity:ent_builder: 1 letter (message 1)" in out
    assert "fates: 0 field reports, 0 open" in out
    send(dc, "another")
    dc.report([rep("r", repo="all"), rep("receipt", repo="all", klass="triage", answers=["0123456789ab"])])
    dc.distribute()
    out = run_cli(tmp_path, "box", "entity:ent_builder", home=home).stdout.decode()
    assert "entity:ent_builder: 2 letters (message 2)" in out
    out = run_cli(tmp_path, "box", "home", home=home).stdout.decode()
    assert "home: 2 letters (receipt 1, report 1)" in out and "fates: 2 field reports, 1 open" in out
    dc.add_entity(EntityAdd(entity_id="ent_idle"))
    idle = run_cli(tmp_path, "box", "entity:ent_idle", home=home).stdout.decode()
    assert "entity:ent_idle (no such box: reads zero): 0 letters\n" in idle


def test_the_sweep_command_leaves_the_collector_as_it_found_it(tmp_path: Path) -> None:
    """The command pauses the cyclic collector for its own run; an in-process caller gets it back, also on error."""
    import gc

    assert gc.isenabled()
    run_cli(tmp_path, "init")
    run_cli(tmp_path, "sweep", "--json")
    assert gc.isenabled()
    run_cli(tmp_path, "sweep", "--json", home=tmp_path / "missing")
    assert gc.isenabled()

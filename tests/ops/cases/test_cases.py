"""Case intelligence end to end: the seed's founding case replayed through the CLI, receipts,
escalation exactly once (also with concurrent processes), sentinels and their streaks, claims,
monitors, refusals, and recompute after deleting every cache."""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.model.vocab import ENGINE_AGENT
from helpers import DOVECOTE_BIN, cli_env, cli_json, new_home, rep, run_cli, snapshot

pytestmark = pytest.mark.files_only

FP = "fp:north/false_absence"
TRILOGY = [
    ("north (memory beat)", "the memory beat came back empty over a non-empty store"),
    ("North (beat v2)", "empty beat again; the memory exists"),
    ("north", "REINCIDENCE: returned nothing though the memory is present"),
]


def home_letters(dc: Dovecote) -> list[dict[str, Any]]:
    path = dc.layout.root / "boxes" / "home" / "letters.jsonl"
    return [orjson.loads(x) for x in path.read_bytes().splitlines()] if path.exists() else []


def engine(dc: Dovecote, key: str) -> list[dict[str, Any]]:
    return [d for d in home_letters(dc) if d.get("agent") == ENGINE_AGENT and key in d]


def file_trilogy(tmp: Path, dc: Dovecote, n: int = 3, start: int = 0) -> list[str]:
    ids = []
    for k, (tool, what) in enumerate(TRILOGY[start:n], start):
        r = run_cli(tmp, "report", "--tool", tool, "--class", "honesty", "--what", what, home=dc.layout.root,
                    env=cli_env(tmp, dc.layout.root, DOVECOTE_AGENT=f"agent{k}"))
        assert r.returncode == 0, r.stderr
        ids.append(r.stdout.decode().split()[0])
    return ids


def test_the_founding_case_replayed(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    home = dc.layout.root
    first_two = file_trilogy(tmp_path, dc, 2)
    run_cli(tmp_path, "report", "--tool", "north", "--class", "bug", "--what", "something odd", home=home)
    swept = cli_json(tmp_path, "sweep", "--json", home=home)
    assert swept["recurrence"] == {FP: 2} and swept["kindless"] == 1
    esc = engine(dc, "escalation")
    assert len(esc) == 1 and set(esc[0]["witnesses"]) == set(first_two)
    assert esc[0]["fingerprint"] == FP and esc[0]["class"] == "triage"
    (third,) = file_trilogy(tmp_path, dc, 3, start=2)
    for _ in range(2):
        cli_json(tmp_path, "sweep", "--json", home=home)
    assert len(engine(dc, "escalation")) == 1, "escalation happens exactly once, at witness 2"
    case = cli_json(tmp_path, "case", FP, "--json", home=home)
    assert case["witnesses"] == 3 and set(case["witness_ids"]) == {*first_two, third}
    assert case["label"] == "open" and case["boxes"] == ["home"] and case["escalation"] == _id_of(dc, esc[0])
    assert case["line"] == f"case {FP} — 3 witnesses · open"
    assert cli_json(tmp_path, "doctor", "--json", home=home)["mailbox"]["recurrence"] == {FP: 3}

    # the fix, guarded by a sentinel probe run in the owner's root
    owner = tmp_path / "owner"
    (owner / "north.py").write_text("return []  # the bug\n")
    probe = "grep -n 'the bug' north.py"
    r = run_cli(tmp_path, "receipt", "--answers", ",".join(case["witness_ids"]), "--disposition", "fixed",
                "--ref", "abc123", "--sentinel-probe", probe, "--json", home=home)
    assert r.returncode == 0, r.stderr
    receipt = orjson.loads(r.stdout)
    assert receipt["box"] == "home" and receipt["fingerprint"] == FP and receipt["appended"]
    swept = cli_json(tmp_path, "sweep", "--json", "--all", home=home)
    fates = {row["id"]: row["fate"] for row in swept["letters"]}
    assert all(fates[i] == "fired_clay" for i in case["witness_ids"]), "the receipt closes; the case does not"
    red = cli_json(tmp_path, "sentinels", "--json", home=home)  # the bug is still there
    assert (red["guarded"], red["green"], red["red"]) == (1, 0, 1)
    assert len(red["minted"]) == 1
    again = cli_json(tmp_path, "sentinels", "--json", home=home)
    assert again["red"] == 1 and again["minted"] == [], "one regression letter per red streak"
    case = cli_json(tmp_path, "case", FP, "--json", home=home)
    assert case["witnesses"] == 4 and case["regressions"] == red["minted"] and case["label"] == "open"
    assert red["minted"][0] in case["witness_ids"], "the regression letter joins the same case"
    reg = engine(dc, "sentinel_streak")[0]
    assert reg["what"] == f"sentinel regression: {FP} resurfaced" and reg["class"] == "bug"
    assert reg["symptom"] == "false_absence"

    (owner / "north.py").write_text("return load()\n")  # fixed: green ends the streak
    green = cli_json(tmp_path, "sentinels", "--json", home=home)
    assert (green["green"], green["red"], len(green["minted"])) == (1, 0, 1)
    assert cli_json(tmp_path, "sentinels", "--json", home=home)["minted"] == []
    (owner / "north.py").write_text("return []  # the bug\n")  # re-broken: a new streak, a new letter
    rebroken = cli_json(tmp_path, "sentinels", "--json", home=home)
    assert rebroken["red"] == 1 and len(rebroken["minted"]) == 1
    case = cli_json(tmp_path, "case", FP, "--json", home=home)
    assert len(case["regressions"]) == 2 and case["witnesses"] == 5
    assert case["line"] == f"case {FP} — 5 witnesses · fixed @abc123 · sentinel: {probe} (red)"

    # recompute after deleting every cache is byte-identical
    reads = [("cases", "--json"), ("case", FP, "--json"), ("claims", "--json"), ("doctor", "--json")]
    before = [run_cli(tmp_path, *a, home=home).stdout for a in reads]
    shutil.rmtree(home / "cache")
    after = [run_cli(tmp_path, *a, home=home).stdout for a in reads]
    assert before == after
    assert orjson.loads(run_cli(tmp_path, "verify", "--json", home=home).stdout)["ok"] is True


def _id_of(dc: Dovecote, obj: dict[str, Any]) -> str:
    from dovecote.model.letters import canonical_line, letter_id

    return letter_id(canonical_line(obj))


def test_answering_a_case_with_every_witness_answered_labels_it(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    ids = file_trilogy(tmp_path, dc, 2)
    dc.receipt(verbs.Receipt(answers=ids, disposition=verbs.Disposition.declined, case_id="trilogy"))
    c = builtins(dc.case(verbs.Case(fingerprint="trilogy")))  # the case id is an alias
    assert c["label"] == "answered" and c["case_id"] == "trilogy" and c["unanswered"] == []
    assert c["line"] == f"case {FP} — 2 witnesses · declined"


def test_escalation_is_one_letter_with_concurrent_sweeps(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    file_trilogy(tmp_path, dc, 3)
    env = cli_env(tmp_path, dc.layout.root)
    for _ in range(3):
        procs = [subprocess.Popen([str(DOVECOTE_BIN), "sweep", "--json"], env=env, cwd=tmp_path,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(4)]
        errs = [p.communicate(timeout=60)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, errs
    assert len(engine(dc, "escalation")) == 1


def test_a_red_sentinel_mints_one_letter_with_two_runners_at_once(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    ids = file_trilogy(tmp_path, dc, 2)
    dc.receipt(verbs.Receipt(answers=ids, disposition=verbs.Disposition.fixed, sentinel_probe="echo still-broken"))
    env = cli_env(tmp_path, dc.layout.root)
    for _ in range(3):
        procs = [subprocess.Popen([str(DOVECOTE_BIN), "sentinels", "--json"], env=env, cwd=tmp_path,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        outs = [p.communicate(timeout=60) for p in procs]
        assert all(p.returncode == 0 for p in procs), outs
    assert len(engine(dc, "sentinel_streak")) == 1
    assert builtins(dc.case(verbs.Case(fingerprint=FP)))["sentinel"]["state"] == "red"


def test_sentinel_expectations_and_a_probe_that_cannot_run(tmp_path: Path) -> None:
    from dovecote.ops.cases.sentinels import probe

    assert probe("true", tmp_path, "exit0", 5)[0] == "green"
    assert probe("false", tmp_path, "exit0", 5)[0] == "red"
    assert probe("grep -n x /dev/null", tmp_path, "absent", 5)[0] == "green"  # exit 1, nothing printed
    assert probe("echo found", tmp_path, "absent", 5)[0] == "red"
    assert probe("sleep 5", tmp_path, "exit0", 0.2) == ("red", "timed out after 0.2s")
    assert probe("no-such-binary-here", tmp_path, "exit0", 5)[0] == "red"
    assert probe("echo $HOME; rm -rf /", tmp_path, "absent", 5)[0] == "red"  # no shell: printed literally
    state, why = probe("sh -c 'echo $DOVECOTE_READ_ONLY'", tmp_path, "absent", 5)
    assert state == "red" and why == "exit 0, 1 bytes of output"  # it printed "1"


def test_receipt_refusals_write_nothing(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    ids = file_trilogy(tmp_path, dc, 1)
    before = snapshot(dc.layout.root)
    for args, keyword in [
        (["--answers", "0123456789ab", "--disposition", "fixed"], "unknown_letter"),
        (["--answers", ids[0], "--disposition", "declined", "--sentinel-probe", "true"], "invalid_field"),
        (["--answers", ids[0], "--disposition", "fixed", "--fingerprint", "fp:north/other"], "unknown_symptom"),
        (["--answers", ids[0], "--disposition", "done"], "invalid_field"),
        (["--answers", ids[0], "--disposition", "fixed", "--sentinel-expect", "exit0"], "missing_field"),
    ]:
        r = run_cli(tmp_path, "receipt", *args, home=dc.layout.root)
        assert r.returncode == 2 and r.stderr.decode().startswith(f"Error: {keyword}:"), (args, r.stderr)
    r = run_cli(tmp_path, "case", "fp:nothing/crash", home=dc.layout.root)
    assert r.returncode == 2 and b"unknown_case" in r.stderr
    assert snapshot(dc.layout.root) == before


def test_claims_count_with_denominators_and_labels_are_appended_once(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    ids = file_trilogy(tmp_path, dc, 3)
    dc.report([rep("seek crashed with a traceback", tool="seek", klass="honesty")])
    dc.receipt(verbs.Receipt(answers=ids[:2], disposition=verbs.Disposition.fixed))
    dc.receipt(verbs.Receipt(answers=ids[2:], disposition=verbs.Disposition.declined))
    c = builtins(dc.claims())
    assert c["by_fingerprint"][FP] == {"claims": 3, "claimed_right": 2, "claimed_wrong": 1, "unresolved": 0}
    assert c["by_fingerprint"]["fp:seek/crash"]["unresolved"] == 1
    assert c["totals"] == {"claims": 4, "claimed_right": 2, "claimed_wrong": 1, "unresolved": 1}
    out = cli_json(tmp_path, "claims", "--write-labels", "--json", home=dc.layout.root)
    assert out["labels_appended"] == 3 and out["resolved"] == 3
    assert cli_json(tmp_path, "claims", "--write-labels", "--json", home=dc.layout.root)["labels_appended"] == 0
    rows = [orjson.loads(x) for x in (dc.layout.root / "field-labels.jsonl").read_bytes().splitlines()]
    assert sorted(r["label"] for r in rows) == ["claimed_right", "claimed_right", "claimed_wrong"]
    assert {r["signal"] for r in rows} == {"north/verdict"} and {r["letter"] for r in rows} == set(ids)
    text = run_cli(tmp_path, "claims", home=dc.layout.root).stdout.decode()
    assert f"{FP}: 2 of 3 claimed right, 1 of 3 claimed wrong, 0 of 3 unresolved" in text


SCOREISH = ("score", "rate", "ratio", "percent", "health", "quality", "confidence")


def _no_score(value: Any, path: str = "") -> list[str]:
    bad: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if any(w in str(k).lower() for w in SCOREISH):
                bad.append(f"{path}.{k}")
            bad += _no_score(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            bad += _no_score(v, f"{path}[{i}]")
    elif isinstance(value, float):
        bad.append(f"{path} = {value} (a number that is no count)")
    return bad


def test_no_output_carries_a_score(tmp_path: Path) -> None:
    """Counts only (CASE-INV-6): no score-like key and no fractional number in any case output."""
    dc = new_home(tmp_path)
    ids = file_trilogy(tmp_path, dc, 3)
    dc.receipt(verbs.Receipt(answers=ids, disposition=verbs.Disposition.fixed, sentinel_probe="true",
                             sentinel_expect=verbs.SentinelExpect.exit0))
    dc.monitor_add(verbs.MonitorAdd(name="nightly", expect="tool=north", every="1d"))
    home = dc.layout.root
    for args in (["cases"], ["case", FP], ["claims"], ["sentinels"], ["monitors"], ["sweep"], ["doctor"]):
        out = cli_json(tmp_path, *args, "--json", home=home)
        assert _no_score(out) == [], args


T0 = datetime(2026, 7, 5, 10, 0, tzinfo=UTC)


def test_monitor_states_and_one_down_letter_per_streak(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    dc.monitor_add(verbs.MonitorAdd(name="nightly", expect="tool=backup,class=win", every="1h", grace="30m"),
                   now=T0)

    def state(at: datetime) -> str:
        return str(builtins(dc.monitors(now=at))["monitors"][0]["state"])

    assert state(T0) == "new"
    dc.report([rep("done", tool="backup", klass="win", ts="2026-07-05T10:05:00Z")])
    assert state(T0 + timedelta(minutes=30)) == "up"
    assert state(T0 + timedelta(minutes=80)) == "late"
    late = T0 + timedelta(hours=3)
    assert state(late) == "down"
    dc2 = Dovecote(dc.layout.root, clock=lambda: late)
    for _ in range(2):
        dc2.sweep()
    downs = engine(dc, "monitor_streak")
    assert len(downs) == 1 and downs[0]["symptom"] == "silent_drop" and downs[0]["ts"] == "2026-07-05T11:35:00Z"
    assert dc2.cases().recurrence == {"fp:monitor:nightly/silent_drop": 1}, "a missing signal becomes a case"
    dc.report([rep("done", tool="backup", klass="win", ts="2026-07-05T13:30:00Z")])
    up = T0 + timedelta(hours=4)
    Dovecote(dc.layout.root, clock=lambda: up).sweep()
    assert [d.get("kind") for d in engine(dc, "monitor_streak")] == [None, "monitor_up"]
    Dovecote(dc.layout.root, clock=lambda: T0 + timedelta(hours=9)).sweep()
    assert len([d for d in engine(dc, "monitor_streak") if d.get("kind") is None]) == 2, "a second down streak"
    dc.monitor_add(verbs.MonitorAdd(name="nightly", expect="tool=backup", every="1h", paused=True), now=up)
    assert state(T0 + timedelta(days=3)) == "paused"


def test_monitor_filters_are_checked(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    for bad in ("tool", "colour=red", "tool=x,"):
        with pytest.raises(Refusal) as e:
            dc.monitor_add(verbs.MonitorAdd(name="m", expect=bad, every="1h"))
        assert e.value.reason == "invalid_field"
    with pytest.raises(Refusal):
        dc.monitor_add(verbs.MonitorAdd(name="m", expect="tool=x", every="0h"))


def test_cases_by_box_and_a_receipt_for_a_project_goes_to_its_box(tmp_path: Path) -> None:
    from helpers import add_project

    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "atlas")
    dc.report([rep("empty answer over data that exists", tool="north", klass="honesty", repo="atlas",
                   ts=f"2026-07-05T10:00:0{n}Z") for n in range(2)])
    dc.sweep()
    assert [c["boxes"] for c in builtins(dc.cases(verbs.Cases(box="project:atlas")))["cases"]] == [["project:atlas"]]
    assert builtins(dc.cases(verbs.Cases(box="home")))["cases"] == []
    ids = builtins(dc.cases())["cases"][0]["witness_ids"]
    assert dc.receipt(verbs.Receipt(answers=ids, disposition=verbs.Disposition.moot)).box == "project:atlas"
    assert engine(dc, "escalation") == [], "the escalation went to the case's box, not home"


def test_a_case_whose_box_is_unreachable_here_does_not_fail_the_sweep(tmp_path: Path) -> None:
    from helpers import add_project

    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "ghost", exists=False, box_in_repo=True)  # its repository is not cloned here
    dc.report([rep("empty answer over data that exists", tool="north", klass="honesty", repo="ghost",
                   ts=f"2026-07-05T10:00:0{n}Z") for n in range(2)])
    swept = dc.sweep().to_dict()
    assert swept["recurrence"] == {FP: 2} and "project:ghost" in swept["unreachable"]
    assert engine(dc, "escalation") == []

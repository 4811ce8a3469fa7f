"""The real ``dovecote`` console script, run as a subprocess.

Exit codes (cli/output.py): 0 success, 1 a check or the store failed, 2 a refusal
or a usage error, and then nothing was written.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import typer.main
from typer.testing import CliRunner

import dovecote
from dovecote.cli.app import app
from dovecote.handle.api import open_home
from dovecote.model.letters import canonical_line
from dovecote.model.results import builtins
from dovecote.verbs import Box, Sweep
from helpers import (
    BAD_CLI_NAMES,
    VECTOR,
    VECTOR_ID,
    VECTOR_LINE,
    cli_env,
    cli_json,
    lid,
    rep,
    run_cli,
    snapshot,
)


def init_home(tmp: Path, *projects: str) -> Path:
    """``dovecote init`` at tmp/owner/.dovecote, plus projects whose roots exist."""
    home = tmp / "owner" / ".dovecote"
    r = run_cli(tmp, "init", "--owner-root", str(tmp / "owner"), home=home)
    assert r.returncode == 0, r.stderr.decode()
    for name in projects:
        root = tmp / "repos" / name
        root.mkdir(parents=True, exist_ok=True)
        r = run_cli(tmp, "project", "add", name, "--root", str(root), home=home)
        assert r.returncode == 0, r.stderr.decode()
    return home


def assert_refused(r: subprocess.CompletedProcess[bytes], keyword: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr.decode())
    err = r.stderr.decode()
    assert err.startswith(f"Error: {keyword}:"), err
    assert "nothing was written" in err
    assert r.stdout == b""


# -- basics -----------------------------------------------------------------------------------


def test_version(tmp_path: Path) -> None:
    r = run_cli(tmp_path, "--version", process=True)  # the start-up path itself
    assert (r.returncode, r.stdout.decode(), r.stderr) == (0, f"dovecote {dovecote.__version__}\n", b"")


def test_help_lists_the_commands(tmp_path: Path) -> None:
    r = run_cli(tmp_path, "--help")
    assert r.returncode == 0
    for cmd in ("init", "project", "report", "distribute", "sweep", "box", "doctor", "verify", "merge-driver"):
        assert cmd in r.stdout.decode()


def test_init_creates_a_home_once(tmp_path: Path) -> None:
    home = tmp_path / "h"
    out = cli_json(tmp_path, "init", "--json", home=home)
    assert out == {"home": str(home), "created": True}
    config = (home / "config.toml").read_bytes()
    # a home not named .dovecote is its owner's root itself (a .dovecote home's owner is its parent)
    assert open_home(home).roster.owner_roots == (str(home),)
    again = cli_json(tmp_path, "init", "--json", home=home)
    assert again == {"home": str(home), "created": False}
    assert (home / "config.toml").read_bytes() == config


def test_init_with_home_flag(tmp_path: Path) -> None:
    home = tmp_path / "x" / ".dovecote"
    r = run_cli(tmp_path, "--home", str(home), "init")
    assert r.returncode == 0 and (home / "config.toml").is_file()
    # a .dovecote home's owner root is the folder that holds it
    assert open_home(home).roster.owner_roots == (str(tmp_path / "x"),)


def test_project_add_and_list(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    root = tmp_path / "repos" / "repo-a"
    root.mkdir(parents=True)
    added = cli_json(
        tmp_path, "project", "add", "repo-a", "--root", str(root) + "/", "--alias", "ra", "--alias", "alpha",
        "--json", home=home,
    )
    assert added == {"name": "repo-a", "root": str(root), "aliases": ["ra", "alpha"], "box_in_repo": False}
    r = run_cli(tmp_path, "project", "add", "ghost", "--root", str(tmp_path / "gone"), "--box-in-repo", home=home)
    assert r.returncode == 0 and b"added project ghost" in r.stdout
    rows = cli_json(tmp_path, "project", "list", "--json", home=home)
    assert rows == builtins(open_home(home).projects())
    assert [(x["name"], x["reachable"]) for x in rows] == [("repo-a", True), ("ghost", False)]
    assert rows[1]["box"] == str(tmp_path / "gone" / ".dovecote" / "letters.jsonl")
    assert rows[0]["box"] == str(home / "boxes" / "project" / "repo-a" / "letters.jsonl")
    text = run_cli(tmp_path, "project", "list", home=home)
    assert text.returncode == 0 and b"repo-a" in text.stdout and b"NO" in text.stdout


def test_project_add_relative_root_is_made_absolute(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    (tmp_path / "work" / "repo-a").mkdir(parents=True)
    out = cli_json(tmp_path, "project", "add", "repo-a", "--root", "repo-a", "--json", home=home,
                   cwd=tmp_path / "work")
    assert out["root"] == str(tmp_path / "work" / "repo-a")


# -- report ---------------------------------------------------------------------------------


def test_report_with_flags_prints_the_id(tmp_path: Path) -> None:
    home = init_home(tmp_path, "repo-a")
    r = run_cli(
        tmp_path, "report", "--tool", "seek", "--class", "bug", "--what", "empty result", "--repo", "repo-a",
        "--expected", "a hit", "--snippet", "seek('x') -> []", "--symptom", "false_absence", "--agent", "probe",
        home=home,
    )
    assert r.returncode == 0, r.stderr.decode()
    line = (home / "spool.jsonl").read_bytes().rstrip(b"\n")
    assert r.stdout.decode() == f"{lid(orjson.loads(line))}\n"
    d = orjson.loads(line)
    assert {k: d[k] for k in ("agent", "tool", "class", "what", "repo", "expected", "snippet", "symptom")} == {
        "agent": "probe", "tool": "seek", "class": "bug", "what": "empty result", "repo": "repo-a",
        "expected": "a hit", "snippet": "seek('x') -> []", "symptom": "false_absence",
    }
    assert line == canonical_line(d), "the spool holds the canonical form"


def test_report_default_agent_comes_from_the_environment(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    r = run_cli(tmp_path, "report", "--tool", "t", "--class", "win", "--what", "w",
                env=cli_env(tmp_path, home, DOVECOTE_AGENT="agent-7"))
    assert r.returncode == 0
    assert orjson.loads((home / "spool.jsonl").read_bytes())["agent"] == "agent-7"


def test_report_answers_repeated_or_comma_separated(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    a, b = "0123456789ab", "ba9876543210"
    for n, args in enumerate((("--answers", a, "--answers", b), ("--answers", f"{a},{b}"))):
        r = run_cli(tmp_path, "report", "--tool", "triage", "--class", "triage", "--what", f"fixed {n}", *args,
                    home=home)
        assert r.returncode == 0, r.stderr.decode()
    lines = (home / "spool.jsonl").read_bytes().splitlines()
    assert [orjson.loads(x)["answers"] for x in lines] == [[a, b], [a, b]]


def test_report_json_stdin_gives_the_vector_id_and_dedups(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    r = run_cli(tmp_path, "report", "--json", "-", home=home, stdin=VECTOR_LINE + b"\n")
    assert (r.returncode, r.stdout) == (0, f"{VECTOR_ID}\n".encode())
    assert (home / "spool.jsonl").read_bytes() == VECTOR_LINE + b"\n"
    again = run_cli(tmp_path, "report", "--json", "-", home=home, stdin=orjson.dumps(dict(reversed(VECTOR.items()))))
    assert (again.returncode, again.stdout) == (0, f"{VECTOR_ID} (already present)\n".encode())
    assert (home / "spool.jsonl").read_bytes() == VECTOR_LINE + b"\n"


def test_report_json_stdin_jsonl_and_array(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    batch1 = [rep("1"), rep("2"), rep("3")]
    jsonl = b"\n".join(orjson.dumps(x) for x in batch1) + b"\n\n"
    r = run_cli(tmp_path, "report", "--json", "-", home=home, stdin=jsonl)
    assert r.returncode == 0 and r.stdout.decode().split() == [lid(x) for x in batch1]
    batch2 = [rep("4"), rep("5")]
    r = run_cli(tmp_path, "report", "--json", "-", home=home, stdin=orjson.dumps(batch2, option=orjson.OPT_INDENT_2))
    assert r.returncode == 0 and r.stdout.decode().split() == [lid(x) for x in batch2]
    assert [orjson.loads(x)["what"] for x in (home / "spool.jsonl").read_bytes().splitlines()] == list("12345")


def test_report_json_stdin_takes_one_pretty_printed_object(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    r = run_cli(tmp_path, "report", "--json", "-", home=home, stdin=orjson.dumps(VECTOR, option=orjson.OPT_INDENT_2))
    assert (r.returncode, r.stdout) == (0, f"{VECTOR_ID}\n".encode())


def test_report_json_stdin_refuses_field_flags_beside_it(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    r = run_cli(tmp_path, "report", "--json", "-", "--tool", "other", home=home, stdin=VECTOR_LINE)
    assert_refused(r, "invalid_field")
    assert b"--tool" in r.stderr
    assert not (home / "spool.jsonl").exists() or (home / "spool.jsonl").read_bytes() == b""


@pytest.mark.parametrize(
    "stdin,keyword",
    [
        (b'{"tool":"t","class":"bug","what":"ok"}\n{"tool":"t","class":"bug","what":"x","hue":1}\n', "unknown_field"),
        (b'[{"tool":"t","class":"bug","what":"ok"},{"tool":"t","class":"nope","what":"x"}]', "invalid_field"),
        (b'{"tool":"t","class":"bug","what":"ok"}\nnot json\n', "invalid_json"),
        (b'[{"tool":"t"', "invalid_json"),
        (b'{"tool":"t","class":"bug","what":"ok"}\n[1]\n', "invalid_json"),
        (b"", "missing_field"),
    ],
)
def test_report_json_batch_refusals_write_nothing(tmp_path: Path, stdin: bytes, keyword: str) -> None:
    home = init_home(tmp_path)
    run_cli(tmp_path, "report", "--json", "-", home=home, stdin=VECTOR_LINE)
    spool = (home / "spool.jsonl").read_bytes()
    assert_refused(run_cli(tmp_path, "report", "--json", "-", home=home, stdin=stdin), keyword)
    assert (home / "spool.jsonl").read_bytes() == spool


@pytest.mark.parametrize(
    "args,keyword",
    [
        (["--tool", "t", "--what", "w"], "missing_field"),
        (["--tool", "t", "--class", "bugs", "--what", "w"], "invalid_field"),
        (["--tool", "t", "--class", "bug", "--what", "w", "--symptom", "other"], "unknown_symptom"),
        (["--tool", "t", "--class", "memory_misdelivery", "--what", "w"], "missing_field"),
        (["--tool", "t", "--class", "memory_misdelivery", "--what", "w", "--misdelivery-kind", "x"], "invalid_field"),
        (["--tool", "t", "--class", "bug", "--what", "w", "--answers", "nothex"], "invalid_field"),
        (["--tool", "t", "--class", "bug", "--what", "w", "--agent", "dovecote:engine"], "reserved_agent"),
        (["--json", "file.json"], "invalid_field"),
    ],
)
def test_report_flag_refusals_write_nothing(tmp_path: Path, args: list[str], keyword: str) -> None:
    home = init_home(tmp_path)
    before = snapshot(home)
    assert_refused(run_cli(tmp_path, "report", *args, home=home), keyword)
    assert snapshot(home) == before


def test_report_too_large(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    config = home / "config.toml"
    config.write_bytes(config.read_bytes() + b"\n[limits]\nreport_max_bytes = 200\n")
    assert_refused(run_cli(tmp_path, "report", "--tool", "t", "--class", "bug", "--what", "x" * 300, home=home),
                   "too_large")
    assert not (home / "spool.jsonl").exists()


# -- distribute, sweep, box, doctor -----------------------------------------------------------


def busy(tmp: Path) -> Path:
    home = init_home(tmp, "repo-a")
    letters = [
        rep("wet", ts="2026-07-05T10:00:00Z"),
        rep("home", ts="2026-07-05T09:00:00Z", repo="all"),
        rep("unknown", ts="2026-07-05T08:00:00Z", repo="zephyr"),
        rep("ext", ts="2026-07-05T07:00:00Z", tool="semgrep"),
    ]
    letters.append(rep("done", ts="2026-07-05T11:00:00Z", klass="triage", answers=[lid(letters[0])]))
    r = run_cli(tmp, "report", "--json", "-", home=home, stdin=orjson.dumps(letters))
    assert r.returncode == 0
    return home


def test_distribute_json_and_idempotence(tmp_path: Path) -> None:
    home = busy(tmp_path)
    first = cli_json(tmp_path, "distribute", "--json", home=home)
    assert first == {
        "spool_total": 5, "appended": 4, "to_project": 3, "to_home": 1, "pending": ["zephyr"],
        "pending_detail": [{"name": "zephyr", "reason": "unknown_project", "letters": 1}],
        "elsewhere": {"letters": 0, "ids": []},
    }
    boxes = snapshot(home / "boxes")
    second = cli_json(tmp_path, "distribute", "--json", home=home)
    assert second == {**first, "appended": 0}
    assert snapshot(home / "boxes") == boxes
    text = run_cli(tmp_path, "distribute", home=home)
    assert text.returncode == 0
    assert b"5 in spool, 0 appended" in text.stdout and b"pending zephyr" in text.stdout


def test_sweep_json_matches_the_library(tmp_path: Path) -> None:
    home = busy(tmp_path)
    run_cli(tmp_path, "distribute", home=home)
    for flags in ((), ("--all",)):
        out = cli_json(tmp_path, "sweep", "--no-distribute", "--json", *flags, home=home)
        lib = open_home(home).sweep(Sweep(distribute=False, include_all=bool(flags))).to_dict()
        assert out == lib
    assert out["schema"] == "dovecote-sweep-v1" and out["distribution"] is None
    assert out["counts"] == {"wet_ink": 2, "in_flight": 0, "fired_clay": 1, "external": 1}
    assert out["total"] == 5 and out["open"] == 2 and out["receipts"] == 1


def test_sweep_distributes_unless_told_not_to(tmp_path: Path) -> None:
    home = busy(tmp_path)
    no = cli_json(tmp_path, "sweep", "--no-distribute", "--json", home=home)
    assert no["distribution"] is None and not (home / "boxes").exists()
    yes = cli_json(tmp_path, "sweep", "--json", home=home)
    assert yes["distribution"]["appended"] == 4
    assert {r["box"] for r in yes["letters"]} == {"home", None}  # the open ones: home and the pending zephyr


def test_sweep_summary_for_people(tmp_path: Path) -> None:
    home = busy(tmp_path)
    r = run_cli(tmp_path, "sweep", home=home)
    assert r.returncode == 0
    out = r.stdout.decode()
    assert "5 letters, 2 open" in out
    assert "wet_ink 2" in out and "fired_clay 1" in out and "external 1" in out


def test_box_json_matches_the_library(tmp_path: Path) -> None:
    home = busy(tmp_path)
    run_cli(tmp_path, "distribute", home=home)
    out = cli_json(tmp_path, "box", "project:repo-a", "--all", "--json", home=home)
    assert out == open_home(home).box(Box(address="project:repo-a", include_all=True)).to_dict()
    assert out["total"] == 3 and out["counts"]["fired_clay"] == 1
    missing = cli_json(tmp_path, "box", "project:nope", "--json", home=home)
    assert (missing["known"], missing["exists"], missing["total"]) == (False, False, 0)
    r = run_cli(tmp_path, "box", "project:nope", home=home)
    assert r.returncode == 0 and b"not in the roster: reads zero" in r.stdout


def test_doctor_json_matches_the_library(tmp_path: Path) -> None:
    home = busy(tmp_path)
    out = cli_json(tmp_path, "doctor", "--json", home=home)
    assert out == builtins(open_home(home).doctor())
    assert out["mailbox"]["spool_letters"] == 5
    assert out["mailbox"]["pending_distribution"] == ["zephyr"]
    text = run_cli(tmp_path, "doctor", home=home)
    assert text.returncode == 0 and b"pending distribution" in text.stdout


def test_doctor_fails_open(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    (home / "spool.jsonl").mkdir()
    (home / "spool.jsonl" / "x").write_bytes(b"x" * 100)
    out = cli_json(tmp_path, "doctor", "--json", home=home)
    assert out["mailbox"]["available"] is False
    r = run_cli(tmp_path, "doctor", home=home)
    assert r.returncode == 0 and b"unavailable" in r.stdout


def test_a_store_failure_exits_1(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    (home / "spool.jsonl").mkdir()
    r = run_cli(tmp_path, "report", "--tool", "t", "--class", "bug", "--what", "w", home=home, process=True)
    assert r.returncode == 1
    assert r.stderr.decode().startswith("Error: io_error: ")
    assert b"Traceback" not in r.stderr


def test_no_command_but_report_touches_the_spool(tmp_path: Path) -> None:
    home = busy(tmp_path)
    spool = (home / "spool.jsonl").read_bytes()
    for args in (
        ["distribute"], ["sweep"], ["sweep", "--all", "--json"], ["sweep", "--no-distribute"], ["doctor"],
        ["box", "home", "--all"], ["box", "project:repo-a"], ["verify"], ["project", "list"],
    ):
        r = run_cli(tmp_path, *args, home=home)
        assert r.returncode == 0, (args, r.stderr.decode())
        assert (home / "spool.jsonl").read_bytes() == spool, args


def test_verify_ok(tmp_path: Path) -> None:
    home = busy(tmp_path)
    (home / "cache").mkdir()
    (home / "cache" / "junk").write_bytes(b"x")
    r = run_cli(tmp_path, "verify", home=home)
    assert r.returncode == 0 and b"verify: ok" in r.stdout
    assert not (home / "cache" / "junk").exists()  # deleted; what is there now verify rebuilt
    out = cli_json(tmp_path, "verify", "--json", home=home)
    assert out["ok"] is True and out["differ"] == [] and "sweep --all" in out["checked"]


def test_verify_exits_1_when_reads_differ(tmp_path: Path) -> None:
    home = busy(tmp_path)
    script = (
        "import sys\n"
        "from dovecote.ops.admin import verify as v\n"
        "real = v.answers\n"
        "calls = []\n"
        "def drift(dc, now):\n"
        "    out = real(dc, now)\n"
        "    calls.append(1)\n"
        "    if len(calls) == 2:\n"
        "        out['sweep --all'] += b' '\n"
        "    return out\n"
        "v.answers = drift\n"
        "from dovecote.cli.entry import main\n"
        "sys.argv = ['dovecote', 'verify', '--json']\n"
        "main()\n"
    )
    r = subprocess.run([sys.executable, "-c", script], env=cli_env(tmp_path, home), capture_output=True,
                       timeout=60, check=False)
    assert r.returncode == 1, r.stderr.decode()
    out = orjson.loads(r.stdout)
    assert out["ok"] is False
    assert [d["read"] for d in out["differ"]] == ["sweep --all"]
    assert out["differ"][0]["bytes_after"] == out["differ"][0]["bytes_before"] + 1


def test_demo_builds_letters_of_every_fate(tmp_path: Path) -> None:
    r = run_cli(tmp_path, "demo", str(tmp_path / "demo"))
    assert r.returncode == 0, r.stderr.decode()
    home = tmp_path / "demo" / ".dovecote"
    spool = (home / "spool.jsonl").read_bytes()
    d = cli_json(tmp_path, "sweep", "--json", home=home)
    assert all(v >= 1 for v in d["counts"].values()), d["counts"]
    assert d["receipts"] >= 1 and d["misdelivery"] >= 1
    assert d["unreachable"] == ["project:ghost"]
    assert {x["reason"] for x in d["distribution"]["pending_detail"]} == {
        "ambiguous_name", "unreachable", "unknown_project",
    }
    # building it again appends nothing
    assert run_cli(tmp_path, "demo", str(tmp_path / "demo")).returncode == 0
    assert (home / "spool.jsonl").read_bytes() == spool


# -- finding the home ---------------------------------------------------------------------------


def test_home_from_the_environment(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    out = cli_json(tmp_path, "doctor", "--json", home=home, cwd=tmp_path / "owner")
    assert out["mailbox"]["spool_path"] == str(home / "spool.jsonl")


def test_home_flag_beats_the_environment(tmp_path: Path) -> None:
    a = tmp_path / "a"
    b = tmp_path / "b"
    run_cli(tmp_path, "init", home=a)
    run_cli(tmp_path, "init", home=b)
    r = run_cli(tmp_path, "--home", str(b), "doctor", "--json", home=a)
    assert orjson.loads(r.stdout)["mailbox"]["spool_path"] == str(b / "spool.jsonl")


def test_home_is_the_nearest_dovecote_upward(tmp_path: Path) -> None:
    outer = tmp_path / "w" / ".dovecote"
    run_cli(tmp_path, "--home", str(outer), "init")
    deep = tmp_path / "w" / "proj" / "src" / "pkg"
    deep.mkdir(parents=True)
    # an in-repo box folder (no config.toml) on the way up is not a home
    (tmp_path / "w" / "proj" / ".dovecote").mkdir()
    (tmp_path / "w" / "proj" / ".dovecote" / "letters.jsonl").write_bytes(VECTOR_LINE + b"\n")
    out = cli_json(tmp_path, "doctor", "--json", cwd=deep)
    assert out["mailbox"]["spool_path"] == str(outer / "spool.jsonl")
    # a nearer real home wins
    inner = tmp_path / "w" / "proj" / "src" / ".dovecote"
    run_cli(tmp_path, "--home", str(inner), "init")
    out = cli_json(tmp_path, "doctor", "--json", cwd=deep)
    assert out["mailbox"]["spool_path"] == str(inner / "spool.jsonl")


def test_home_falls_back_to_the_users_dovecote(tmp_path: Path) -> None:
    env = cli_env(tmp_path, None)
    user_home = Path(env["HOME"])
    (tmp_path / "anywhere").mkdir()
    r = run_cli(tmp_path, "init", "--json", cwd=tmp_path / "anywhere", env=env)
    assert orjson.loads(r.stdout) == {"home": str(user_home / ".dovecote"), "created": True}
    assert not (tmp_path / "anywhere" / ".dovecote").exists()
    r = run_cli(tmp_path, "doctor", "--json", cwd=tmp_path / "anywhere", env=env)
    assert orjson.loads(r.stdout)["mailbox"]["spool_path"] == str(user_home / ".dovecote" / "spool.jsonl")


def test_a_dovecote_folder_without_config_is_not_a_home(tmp_path: Path) -> None:
    work = tmp_path / "repo"
    (work / ".dovecote").mkdir(parents=True)
    (work / ".dovecote" / "letters.jsonl").write_bytes(VECTOR_LINE + b"\n")
    before = snapshot(tmp_path)
    r = run_cli(tmp_path, "sweep", "--json", cwd=work)
    assert_refused(r, "no_home")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "args", [["sweep"], ["distribute"], ["doctor"], ["box", "home"], ["project", "list"], ["verify"],
             ["report", "--tool", "t", "--class", "bug", "--what", "w"]]
)
def test_no_home_exits_2(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "empty").mkdir()
    before = snapshot(tmp_path)
    assert_refused(run_cli(tmp_path, *args, cwd=tmp_path / "empty"), "no_home")
    assert snapshot(tmp_path) == before


# -- refusals write nothing -----------------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_CLI_NAMES)
def test_project_add_refuses_a_bad_name(tmp_path: Path, bad: str) -> None:
    home = init_home(tmp_path)
    config = (home / "config.toml").read_bytes()
    assert_refused(run_cli(tmp_path, "project", "add", bad, "--root", str(tmp_path), home=home), "invalid_name")
    assert (home / "config.toml").read_bytes() == config
    assert sorted(p.name for p in home.iterdir()) == ["config.toml"]


@pytest.mark.parametrize("bad", BAD_CLI_NAMES)
def test_project_add_refuses_a_bad_alias(tmp_path: Path, bad: str) -> None:
    home = init_home(tmp_path)
    config = (home / "config.toml").read_bytes()
    r = run_cli(tmp_path, "project", "add", "ok", "--root", str(tmp_path), "--alias", "fine", "--alias", bad, home=home)
    assert_refused(r, "invalid_name")
    assert (home / "config.toml").read_bytes() == config


@pytest.mark.parametrize("bad", BAD_CLI_NAMES)
def test_entity_add_refuses_a_bad_name(tmp_path: Path, bad: str) -> None:
    home = init_home(tmp_path)
    config = (home / "config.toml").read_bytes()
    assert_refused(run_cli(tmp_path, "entity", "add", bad, home=home), "invalid_name")
    assert (home / "config.toml").read_bytes() == config
    assert sorted(p.name for p in home.iterdir()) == ["config.toml"]


@pytest.mark.parametrize("bad", BAD_CLI_NAMES)
def test_box_refuses_a_bad_name(tmp_path: Path, bad: str) -> None:
    home = init_home(tmp_path)
    before = snapshot(tmp_path)
    assert_refused(run_cli(tmp_path, "box", f"project:{bad}", home=home), "invalid_name")
    assert_refused(run_cli(tmp_path, "box", f"entity:{bad}", home=home), "invalid_name")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("bad", ["nowhere", "projects:x", "home:x"])
def test_box_refuses_an_invalid_address(tmp_path: Path, bad: str) -> None:
    home = init_home(tmp_path)
    assert_refused(run_cli(tmp_path, "box", bad, home=home), "invalid_address")


def test_duplicate_project_is_refused(tmp_path: Path) -> None:
    home = init_home(tmp_path, "repo-a")
    config = (home / "config.toml").read_bytes()
    r = run_cli(tmp_path, "project", "add", "Repo-A", "--root", str(tmp_path / "other"), home=home)
    assert_refused(r, "duplicate_project")
    assert (home / "config.toml").read_bytes() == config


def test_a_broken_config_is_refused_not_guessed(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    config = home / "config.toml"
    config.write_bytes(config.read_bytes() + b"\n[[projects]]\nname = 'a'\nroot = '/a'\nalias = ['x']\n")
    assert_refused(run_cli(tmp_path, "sweep", home=home), "invalid_config")


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    config = (home / "config.toml").read_bytes()
    r = run_cli(tmp_path, "project", "add", "repo-a", home=home)  # --root is required
    assert r.returncode == 2
    assert (home / "config.toml").read_bytes() == config
    assert run_cli(tmp_path, "no-such-command", home=home).returncode == 2


# -- what people read: help, plurals, the options each command takes ---------------------------

TYPE_NAME = re.compile(r"<(?:str|int|float|bool|path|datetime|list\[[^>]*\]|[\w-]+(?:\|[\w-]+)+)>")


def every_command() -> list[list[str]]:
    def walk(cmd: Any, path: list[str]) -> list[list[str]]:
        subs = getattr(cmd, "commands", {})
        return [path] + [p for name, sub in subs.items() for p in walk(sub, [*path, name])]

    return walk(typer.main.get_command(app), [])


@pytest.mark.parametrize("path", every_command(), ids=" ".join)
def test_help_names_no_python_types(path: list[str]) -> None:
    res = CliRunner().invoke(app, [*path, "--help"], prog_name="dovecote", env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    assert not TYPE_NAME.findall(res.output), res.output


VERB_OPTIONS = {
    "claim": set(), "seen": set(), "complete": {"--result-ref", "--reason"}, "undefer": {"--reason"},
    "nack": {"--reason"}, "defer": {"--until-tic", "--until", "--reason"},
}


@pytest.mark.parametrize("verb", sorted(VERB_OPTIONS))
def test_each_lifecycle_verb_takes_only_its_own_options(verb: str) -> None:
    cmd = typer.main.get_command(app).commands[verb]
    opts = {o for p in cmd.params if p.param_type_name == "option" for o in p.opts} - {"--help"}
    assert opts == VERB_OPTIONS[verb] | {"--current-tic", "--actor", "--json"}


def test_a_verb_refuses_another_verbs_option(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    run_cli(tmp_path, "entity", "add", "ent_a", home=home)
    run_cli(tmp_path, "entity", "add", "ent_b", home=home)
    item = run_cli(tmp_path, "send", "--from", "ent_a", "--to", "ent_b", "--subject", "s", home=home)
    item_id = item.stdout.decode().strip()
    ledger = (home / "boxes" / "entity" / "ent_b" / "letters.jsonl").read_bytes()
    r = run_cli(tmp_path, "claim", "ent_b", item_id, "--until-tic", "9", home=home)
    assert r.returncode == 2 and b"--until-tic" in r.stderr
    assert (home / "boxes" / "entity" / "ent_b" / "letters.jsonl").read_bytes() == ledger


def test_inbox_json_is_format_json(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    run_cli(tmp_path, "entity", "add", "ent_b", home=home)
    a = run_cli(tmp_path, "inbox", "ent_b", "--json", "--current-tic", "3", home=home)
    b = run_cli(tmp_path, "inbox", "ent_b", "--format", "json", "--current-tic", "3", home=home)
    assert a.returncode == 0 and a.stdout == b.stdout and orjson.loads(a.stdout)["entity"] == "ent_b"
    assert_refused(run_cli(tmp_path, "inbox", "ent_b", "--json", "--format", "injection", home=home), "invalid_field")


def test_one_letter_is_singular_and_sweep_says_it_distributed(tmp_path: Path) -> None:
    home = init_home(tmp_path, "repo-a")
    run_cli(tmp_path, "report", "--tool", "t", "--class", "bug", "--what", "w", "--repo", "repo-a", home=home)
    out = run_cli(tmp_path, "sweep", home=home).stdout.decode()
    assert "1 letter, 1 open" in out and "1 letters" not in out
    assert "distributed first" in out
    assert "distributed first" not in run_cli(tmp_path, "sweep", "--no-distribute", home=home).stdout.decode()
    assert "1 letter, oldest first" in out


def test_the_compact_audit_says_where_the_unflagged_ids_are(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    run_cli(tmp_path, "entity", "add", "ent_a", home=home)
    run_cli(tmp_path, "entity", "add", "ent_b", home=home)
    run_cli(tmp_path, "send", "--from", "ent_a", "--to", "ent_b", "--subject", "s", "--current-tic", "1", home=home)
    out = run_cli(tmp_path, "inbox", "ent_b", "--current-tic", "2", home=home).stdout.decode()
    assert "(1 more without flags: `dovecote inbox ent_b --detailed` lists their ids" in out
    assert "more without flags" not in run_cli(
        tmp_path, "inbox", "ent_b", "--current-tic", "2", "--detailed", home=home
    ).stdout.decode()

"""No traceback reaches a user, whatever the arguments (issue 6, items 16 and 18).

The commands are enumerated from the CLI's own click tree, so a command added
later is covered without editing this file. Each one runs in-process through
the real entry point (``cli.entry.main``, which maps errors to exit codes)
with hostile values in every argument and option in turn; a few run as real
processes with non-UTF-8 bytes in argv. Every run must exit 0, 1 or 2 with no
traceback and no ``internal_error`` (the last-resort handler hides a bug from
a user, not from this test).
"""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import typer.main
from hypothesis import given
from hypothesis import strategies as st

from dovecote.cli import entry
from dovecote.cli.app import app
from dovecote.cli.boundary import MAX_INT, check_value
from dovecote.errors import Refusal
from dovecote.handle.api import init, open_home
from dovecote.util.timeutil import parse_time
from dovecote.verbs import EntityAdd, Message, ProjectAdd
from helpers import DOVECOTE_BIN, cli_env

SURROGATE = "\udcff"  # what Python makes of the argv byte 0xff
HOSTILE_TEXT = (
    f"ok{SURROGATE}ok",
    "../../../etc/passwd",
    "a\x01\x1b[31mred\x7f",
    "",
    "x" * 5000,
    "9999-12-31T23:59:59-05:00",
)
HOSTILE_INT = (str(MAX_INT + 1), "99999999999999999999999", "-99999999999999999999", "-1")


def leaves(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    subs = getattr(cmd, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from leaves(sub, [*path, name])
    else:
        yield path, cmd


COMMANDS = list(leaves(typer.main.get_command(app), []))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("hostile")
    home = tmp / "h"
    init(home, str(tmp))
    dc = open_home(home)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    dc.add_project(ProjectAdd(name="pa", root=str(tmp / "pa")))
    item = dc.send(Message(sender="ent_a", recipient="ent_b", subject="s", current_tic=1)).id
    afile = tmp / "afile"
    afile.write_text("x\n")
    return {"tmp": tmp, "home": home, "item": item, "afile": afile}


def plausible(name: str, w: dict[str, Any]) -> str:
    """A value a person would pass, so the hostile one is the only thing wrong."""
    tmp = w["tmp"]
    return {
        "entity_id": "ent_b", "item": w["item"], "address": "home", "name": "newproj", "query": "s",
        "ancestor": str(w["afile"]), "theirs": str(w["afile"]), "ours": str(tmp / "ours"),
        "path": str(tmp / "demo"), "root": str(tmp / "r"), "to": "ent_b", "subject": "s",
    }.get(name, "x")


def base_argv(path: list[str], cmd: Any, w: dict[str, Any]) -> list[str]:
    argv = list(path)
    for p in cmd.params:
        if p.param_type_name == "argument" and p.required:
            argv.append(plausible(p.name, w))
        elif p.param_type_name == "option" and p.required:
            argv += [p.opts[0], plausible(p.name, w)]
    return argv


def with_value(path: list[str], cmd: Any, w: dict[str, Any], target: Any, value: str) -> list[str]:
    argv = list(path)
    for p in cmd.params:
        if p.param_type_name == "argument" and (p.required or p is target):
            argv.append(value if p is target else plausible(p.name, w))
    for p in cmd.params:
        if p.param_type_name == "option" and (p.required or p is target):
            argv += [p.opts[0], value if p is target else plausible(p.name, w)]
    return argv


def home_values(w: dict[str, Any]) -> tuple[str, ...]:
    return (SURROGATE, str(w["afile"]), str(w["afile"] / "x"), "x" * 5000, str(w["tmp"] / "missing"))


def pick(values: tuple[str, ...], turn: int, full: bool) -> tuple[str, ...]:
    """Every value when ``full``; else the first (the one the checks below key on: a surrogate, an
    overflow) and one more in turn, so the sample still passes each value through some command."""
    return values if full else (values[0], values[1 + turn % (len(values) - 1)])


def hostile_runs(path: list[str], cmd: Any, w: dict[str, Any], *, full: bool) -> Iterator[list[str]]:
    yield [*base_argv(path, cmd, w), "--no-such-option"]
    turn = sum(map(ord, " ".join(path)))  # a command's own rotation, stable from run to run
    for p in cmd.params:
        if p.name == "help" or getattr(p, "is_flag", False):
            continue
        is_int = p.param_type_name == "option" and "int" in p.bare_type()
        turn += 1
        for value in pick(HOSTILE_INT if is_int else HOSTILE_TEXT, turn, full):
            yield with_value(path, cmd, w, p, value)
    for value in home_values(w) if full else home_values(w)[turn % 5:][:1]:
        yield ["--home", value, *base_argv(path, cmd, w)]


def run_in_process(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["dovecote", *argv])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    code: Any = 0
    try:
        entry.main()
    except SystemExit as e:
        code = e.code or 0
    out = capsys.readouterr()
    return code, out.out + out.err


def survive(world: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
            path: list[str], cmd: Any, *, full: bool) -> None:
    monkeypatch.setenv("DOVECOTE_HOME", str(world["home"]))
    monkeypatch.setenv("HOME", str(world["tmp"]))
    monkeypatch.chdir(world["tmp"])
    # `serve` would listen until Ctrl-C: its arguments are what this test is about (tests/http/test_serve.py runs it).
    monkeypatch.setattr("uvicorn.Server.run", lambda self, sockets=None: None)
    runs = 0
    for argv in hostile_runs(path, cmd, world, full=full):
        code, text = run_in_process(argv, monkeypatch, capsys)
        runs += 1
        assert code in (0, 1, 2), (argv, code, text)
        assert "Traceback" not in text and "internal_error" not in text, (argv, text)
        if (argv[2:] if argv[0] == "--home" else argv)[:1] == ["hook"]:  # an agent's hook fails open: exit 0
            assert code == 0 and "dovecote hook:" in text, (argv, text)
            continue
        if argv[-1] == "--no-such-option":
            assert code == 2, (argv, text)
        if any(SURROGATE in a for a in argv) or any(a in HOSTILE_INT[:3] for a in argv):
            assert code == 2 and ("invalid_field" in text or "Invalid value" in text), (argv, text)
    assert runs >= 2  # the unknown option and a hostile home, at least


IDS = [" ".join(path) for path, _ in COMMANDS]


#: A third of the product in make test (every command, every argument, two hostile values each); all of it,
#: every hostile value in every argument and every hostile home, in make stress.
DEPTHS = [pytest.param(False, id="sample"), pytest.param(True, id="full", marks=pytest.mark.stress)]


@pytest.mark.parametrize("full", DEPTHS)
@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=IDS)
def test_every_command_survives_hostile_arguments(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], path: list[str],
    cmd: Any, full: bool,
) -> None:
    survive(world, monkeypatch, capsys, path, cmd, full=full)


@pytest.mark.parametrize("argv", [
    ["copy", "--to", "../../../etc/passwd"], ["copy", "--from", "host=x dbname=y"],
    ["db", "migrate", "--url", "x" * 300],
])
def test_a_store_option_that_is_no_url_is_refused_before_any_connection(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """libpq reads anything as a connection string and the pool retried it for its whole timeout (15 s a
    run, 2 minutes of this file): a value that is not a postgresql:// URL is refused first, by its keyword."""
    monkeypatch.setenv("DOVECOTE_HOME", str(world["home"]))
    monkeypatch.setattr("psycopg.connect", lambda *a, **k: pytest.fail("a connection was tried"))
    code, text = run_in_process(argv, monkeypatch, capsys)
    assert code == 2 and "invalid_field" in text and "postgresql://" in text, text


def test_the_command_list_is_the_whole_cli() -> None:
    """The enumeration reaches the nested commands too (so new ones are covered)."""
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"init", "send", "claim", "project add", "outbox send", "import inbox-tree"} <= names


# -- real processes: argv bytes, and the last resort ---------------------------------------------


def run_bytes(tmp: Path, home: Path, *args: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [bytes(DOVECOTE_BIN), *args], cwd=tmp, env=cli_env(tmp, home),
        capture_output=True, timeout=60, check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        [b"report", b"--tool", b"seek", b"--class", b"bug", b"--what", b"\xff", b"--repo", b"pa"],
        [b"send", b"--to", b"ent_b", b"--from", b"ent_a", b"--subject", b"caf\xe9"],
        [b"--home", b"\xfe\xff", b"sweep"],
        [b"send", b"--to", b"ent_b", b"--from", b"ent_a", b"--subject", b"s", b"--expires-tic", b"9" * 30],
        [b"search", b"s", b"--limit", b"9" * 25],
        [b"defer", b"ent_b", b"ITEM", b"--until", b"9999-12-31T23:59:59-05:00"],
    ],
)
def test_real_process_refuses_bad_bytes_and_numbers(world: dict[str, Any], args: list[bytes]) -> None:
    home = world["home"]
    before = {p: p.read_bytes() for p in home.rglob("*.jsonl")}
    args = [a.replace(b"ITEM", world["item"].encode()) for a in args]
    r = run_bytes(world["tmp"], home, *args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(b"Error: invalid_field:"), r.stderr
    assert b"Traceback" not in r.stderr + r.stdout
    assert {p: p.read_bytes() for p in home.rglob("*.jsonl")} == before  # nothing was written


def test_non_utf8_environment_is_refused(world: dict[str, Any]) -> None:
    env = cli_env(world["tmp"], world["home"])
    r = subprocess.run(
        [str(DOVECOTE_BIN), "report", "--tool", "t", "--class", "bug", "--what", "w"],
        cwd=world["tmp"], env={**{k.encode(): v.encode() for k, v in env.items()}, b"DOVECOTE_AGENT": b"\xff"},
        capture_output=True, timeout=60, check=False,
    )
    assert r.returncode == 2 and r.stderr.startswith(b"Error: invalid_field: $DOVECOTE_AGENT"), r.stderr


def test_a_bug_prints_one_line_not_a_traceback(world: dict[str, Any]) -> None:
    code = (
        "import sys; import dovecote.handle.api as a\n"
        "a.Dovecote.doctor = lambda self, now=None: {}['boom']\n"
        "sys.argv = ['dovecote', 'doctor']\n"
        "from dovecote.cli.entry import main; main()\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=world["tmp"], env=cli_env(world["tmp"], world["home"]),
        capture_output=True, timeout=60, check=False,
    )
    assert r.returncode == 1
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: internal_error: KeyError:"), lines
    debug = subprocess.run(
        [sys.executable, "-c", code], cwd=world["tmp"],
        env={**cli_env(world["tmp"], world["home"]), "DOVECOTE_DEBUG": "1"},
        capture_output=True, timeout=60, check=False,
    )
    assert b"Traceback" in debug.stderr  # a developer can still see where


@pytest.mark.parametrize("what", ["file", "inside-a-file", "too-long"])
def test_home_that_cannot_be_a_directory_is_refused(world: dict[str, Any], what: str) -> None:
    target = {
        "file": world["afile"], "inside-a-file": world["afile"] / "h", "too-long": world["tmp"] / ("x" * 300),
    }[what]
    for args in (["init"], ["sweep"], ["inbox", "ent_b"]):
        r = run_bytes(world["tmp"], world["home"], b"--home", bytes(target), *(a.encode() for a in args))
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith(b"Error: no_home:"), r.stderr
    assert world["afile"].read_text() == "x\n"


# -- the boundary's rules, as properties -----------------------------------------------------------


@given(st.text(alphabet=st.characters(codec=None)))
def test_text_is_refused_exactly_when_it_is_not_utf8(text: str) -> None:
    try:
        text.encode("utf-8")
        encodable = True
    except UnicodeEncodeError:
        encodable = False
    try:
        check_value("--what", text)
        refused = False
    except Refusal as r:
        assert r.reason == "invalid_field" and "--what" in r.detail
        refused = True
    assert refused is not encodable


@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_integers_are_refused_exactly_beyond_the_json_safe_range(n: int) -> None:
    try:
        check_value("--expires-tic", [n])
        refused = False
    except Refusal as r:
        assert r.reason == "invalid_field"
        refused = True
    assert refused is (abs(n) > MAX_INT)


@given(st.text(max_size=40) | st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}[+-][0-9]{2}:[0-9]{2}\Z"))
def test_parse_time_never_raises_and_what_it_returns_has_a_utc_instant(value: str) -> None:
    t = parse_time(value)
    if t is None:
        return
    assert t.tzinfo is not None and t.utcoffset() == timedelta(0)  # aware, in UTC: comparable with every other
    try:
        written = datetime.fromisoformat(value)
    except ValueError:
        return
    # the instant the text names (a time without a zone is UTC), not the wall clock shifted
    assert t == (written if written.tzinfo is not None else written.replace(tzinfo=UTC))

"""Missions on the command line, in real processes: post from a file and stdin, the two human gestures
with the gesture passphrase typed at a real terminal (a pty), refused without one, from a program driving a
pseudo-terminal (``script``), or from the environment; ``gesture-key set``; and N processes racing to post the
next letter of one chain."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from dovecote.handle.api import Dovecote
from helpers import DOVECOTE_BIN, cli_env, cli_json, run_cli, snapshot
from missionhelpers import PASSPHRASE, VECTOR, VECTOR_ID, for_phase, letter
from ptyhelpers import at_terminal as pty_run

pytestmark = pytest.mark.files_only
MID = VECTOR["mission_id"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / ".dovecote"
    assert run_cli(tmp_path, "init", "--owner-root", str(tmp_path), home=home).returncode == 0
    (tmp_path / "repo-a").mkdir()
    assert run_cli(tmp_path, "project", "add", "repo-a", "--root", str(tmp_path / "repo-a"), home=home).returncode == 0
    assert run_cli(tmp_path, "block", "add", "sb_alpha", "--project", "repo-a", home=home).returncode == 0
    return home


def post(tmp: Path, home: Path, data: dict[str, Any], *more: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli(tmp, "mission", "post", "--as-project", "repo-a", "--agent", "agent-a", "--json", *more,
                   home=home, stdin=orjson.dumps(data))


def walk(tmp: Path, home: Path, phases: list[str]) -> list[str]:
    ids: list[str] = []
    for seq, phase in enumerate(phases, 1):
        r = post(tmp, home, for_phase(phase, seq, ids[-1] if ids else None))
        assert r.returncode == 0, r.stderr
        ids.append(orjson.loads(r.stdout)["letter_id"])
    return ids


def test_post_from_a_file_and_stdin_the_vector_and_a_refusal(tmp_path: Path, home: Path) -> None:
    f = tmp_path / "letter.json"
    f.write_bytes(orjson.dumps(VECTOR))
    r = run_cli(tmp_path, "mission", "post", "--file", str(f), "--as-project", "repo-a", "--agent", "agent-a",
                home=home)
    assert r.returncode == 0 and r.stdout.decode() == (
        f"posted {VECTOR_ID}: {MID} seq 1 judging in project:repo-a\n")
    assert orjson.loads(post(tmp_path, home, VECTOR).stdout)["deduped"] is True
    before = snapshot(home)
    bad = post(tmp_path, home, letter(2, "0123456789ab", "executing"))
    assert bad.returncode == 2 and bad.stderr.startswith(b"Error: stale_head: ")
    assert b"expected_head=" + VECTOR_ID.encode() in bad.stderr
    assert run_cli(tmp_path, "mission", "post", home=home, stdin=b"{not json").returncode == 2
    assert snapshot(home) == before
    listed = cli_json(tmp_path, "missions", "--json", home=home)
    assert listed["count"] == 1 and listed["missions"][0]["head_letter_id"] == VECTOR_ID


def keyed(home: Path) -> None:
    """The person's gesture passphrase set in ``home`` (the CLI's own way needs a terminal: see below)."""
    Dovecote(home).gesture_key_set(PASSPHRASE)


def detached(tmp: Path, home: Path, argv: list[str], stdin: bytes, **env: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` in a new session: no controlling terminal, as an agent's tool call has none."""
    return subprocess.run(argv, cwd=tmp, env=cli_env(tmp, home, USER="ada", **env), input=stdin,
                          capture_output=True, timeout=60, check=False, start_new_session=True)


def test_the_gestures_without_a_terminal_refuse_and_write_nothing(tmp_path: Path, home: Path) -> None:
    keyed(home)
    walk(tmp_path, home, ["judging", "executing", "gate", "merge_wait"])
    before = snapshot(home)
    for args in (("receipt", "import", MID), ("mission", "archive", MID)):
        r = detached(tmp_path, home, [str(DOVECOTE_BIN), *args], PASSPHRASE.encode() + b"\n")
        assert r.returncode == 2 and r.stderr.startswith(b"Error: human_gesture_required: "), r.stderr
        assert b"no terminal" in r.stderr
    assert snapshot(home) == before


def test_a_program_driving_a_pseudo_terminal_is_no_person(tmp_path: Path, home: Path) -> None:
    """``script`` gives the command a pseudo-terminal and feeds it the pipe: the old confirmation (the mission
    id) passed for a person's; without the passphrase it is refused now, nothing appended, key set or not."""
    ids = walk(tmp_path, home, ["judging", "executing", "gate", "merge_wait"])
    before = snapshot(home)

    def scripted(args: str, piped: bytes) -> subprocess.CompletedProcess[bytes]:
        return detached(tmp_path, home, ["script", "-qec", f"{DOVECOTE_BIN} {args}", "/dev/null"], piped)

    r = scripted(f"receipt import {MID}", MID.encode() + b"\n")
    assert r.returncode == 2 and b"human_gesture_required" in r.stdout and b"gesture-key set" in r.stdout, r
    assert snapshot(home) == before
    keyed(home)
    before = snapshot(home)
    r = scripted(f"receipt import {MID}", MID.encode() + b"\n")  # (getpass may flush what came before its prompt)
    assert r.returncode == 2 and b"Error: human_gesture_required: receipt import" in r.stdout, r
    assert snapshot(home) == before
    post(tmp_path, home, for_phase("failed", 5, ids[-1]))
    before = snapshot(home)
    r = scripted(f"mission archive {MID}", MID.encode() + b"\n")
    assert r.returncode == 2 and b"human_gesture_required" in r.stdout, r
    assert snapshot(home) == before


def test_the_passphrase_is_never_read_from_the_environment_or_an_option(tmp_path: Path, home: Path) -> None:
    keyed(home)
    walk(tmp_path, home, ["judging", "executing", "gate", "merge_wait"])
    before = snapshot(home)
    names = ("DOVECOTE_PASSPHRASE", "DOVECOTE_GESTURE_PASSPHRASE", "DOVECOTE_GESTURE_KEY", "PASSPHRASE")
    r = detached(tmp_path, home, [str(DOVECOTE_BIN), "receipt", "import", MID], b"", **dict.fromkeys(names, PASSPHRASE))
    assert r.returncode == 2 and r.stderr.startswith(b"Error: human_gesture_required: "), r.stderr
    for option in ("--passphrase", "--gesture-passphrase", "--password"):  # refused before anything is read
        r = run_cli(tmp_path, "receipt", "import", MID, option, PASSPHRASE, home=home)
        assert r.returncode == 2 and b"No such option" in r.stderr, r.stderr
    assert snapshot(home) == before


def at_terminal(tmp: Path, home: Path, args: list[str], *answers: tuple[bytes, str]) -> tuple[int, str]:
    """Run ``dovecote ARGS`` with a pty as its controlling terminal (``ptyhelpers``); type each answer once its
    prompt shows; (exit code, output)."""
    return pty_run([str(DOVECOTE_BIN), *args], cli_env(tmp, home, USER="ada"), tmp, *answers)


PROMPT = b"gesture passphrase: "


def test_the_full_flow_at_a_terminal(tmp_path: Path, home: Path) -> None:
    ids = walk(tmp_path, home, ["judging", "executing", "gate", "merge_wait"])
    code, out = at_terminal(tmp_path, home, ["gesture-key", "set"], (b"new gesture passphrase: ", PASSPHRASE),
                            (b"again: ", PASSPHRASE))
    assert code == 0 and "gesture passphrase set" in out and PASSPHRASE not in out, out  # echo off
    before = snapshot(home)
    code, out = at_terminal(tmp_path, home, ["receipt", "import", MID], (PROMPT, "kestrel over the weir"))
    assert code == 2 and "human_gesture_required" in out and snapshot(home) == before, out
    code, out = at_terminal(tmp_path, home, ["receipt", "import", MID], (PROMPT, PASSPHRASE))
    assert code == 0 and "store version 1" in out and PASSPHRASE not in out, out
    blocks = cli_json(tmp_path, "blocks", "--json", home=home)
    assert blocks["blocks"][0]["store_version"] == 1
    r = post(tmp_path, home, for_phase("landed", 5, ids[-1]))
    assert r.returncode == 0, r.stderr
    code, out = at_terminal(tmp_path, home, ["mission", "archive", MID], (PROMPT, PASSPHRASE))
    assert code == 0 and "archived" in out, out
    chain = cli_json(tmp_path, "mission", "show", MID, "--json", home=home)["chain"]
    assert [e["phase"] for e in chain] == ["judging", "executing", "gate", "merge_wait", "landed", "archived"]
    assert chain[-1]["agent"] == "human.ada"
    assert cli_json(tmp_path, "missions", "--json", home=home)["by_phase"]["archived"] == 1


def test_gesture_key_set_at_a_terminal(tmp_path: Path, home: Path) -> None:
    """Typed twice, echo off; empty or mismatched is refused; changing it needs the current one."""
    key = home / "gesture-key.json"
    code, out = at_terminal(tmp_path, home, ["gesture-key", "set"], (b"new gesture passphrase: ", ""))
    assert code == 2 and "missing_field" in out and not key.exists(), out
    code, out = at_terminal(tmp_path, home, ["gesture-key", "set"], (b"new gesture passphrase: ", PASSPHRASE),
                            (b"again: ", PASSPHRASE + "!"))
    assert code == 2 and "differ" in out and not key.exists(), out
    code, out = at_terminal(tmp_path, home, ["gesture-key", "set"], (b"new gesture passphrase: ", PASSPHRASE),
                            (b"again: ", PASSPHRASE))
    assert code == 0 and (key.stat().st_mode & 0o777) == 0o600, out
    first = key.read_bytes()
    code, out = at_terminal(tmp_path, home, ["gesture-key", "set"], (b"current gesture passphrase: ", "guess"),
                            (b"new gesture passphrase: ", "mine now"), (b"again: ", "mine now"))
    assert code == 2 and "human_gesture_required" in out and key.read_bytes() == first, out
    code, out = at_terminal(tmp_path, home, ["gesture-key", "set"], (b"current gesture passphrase: ", PASSPHRASE),
                            (b"new gesture passphrase: ", "a second long one"), (b"again: ", "a second long one"))
    assert code == 0 and "gesture passphrase changed" in out and key.read_bytes() != first, out
    r = detached(tmp_path, home, [str(DOVECOTE_BIN), "gesture-key", "set"], b"x\nx\n")  # no terminal: refused
    assert r.returncode == 2 and b"human_gesture_required" in r.stderr


def test_racing_processes_never_fork_a_chain(tmp_path: Path, home: Path) -> None:
    first = orjson.loads(post(tmp_path, home, VECTOR).stdout)["letter_id"]
    env = cli_env(tmp_path, home, DOVECOTE_AGENT="agent-a")
    n = 6
    procs = []
    for i in range(n):  # each posts a different next letter (its own runner), all naming the same head
        data = orjson.dumps(letter(2, first, "executing", runner_id=f"runner-{i}"))
        p = subprocess.Popen([str(DOVECOTE_BIN), "mission", "post", "--as-project", "repo-a", "--json"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             cwd=tmp_path)
        procs.append((p, data))
    results = [(*p.communicate(data, timeout=120), p.returncode) for p, data in procs]
    codes = sorted(code for _, _, code in results)
    assert codes == [0] + [2] * (n - 1), results
    assert all(err.startswith(b"Error: stale_head: ") for _, err, code in results if code == 2)
    shown = cli_json(tmp_path, "mission", "show", MID, "--json", home=home)
    assert shown["forks"] == [] and [e["mission_seq"] for e in shown["chain"]] == [1, 2]
    lines = (tmp_path / "repo-a" / ".dovecote" / "letters.jsonl")
    box = lines if lines.exists() else home / "boxes" / "project" / "repo-a" / "letters.jsonl"
    assert sum(b'"kind":"mission"' in x for x in box.read_bytes().splitlines()) == 2

"""Every command's help ends with an example that runs as printed (``cli.examples``).

Each example is read back from the command's own ``--help`` in a real ``dovecote`` process, then its lines
run in order in one ``bash`` (``set -e``), with the installed ``dovecote`` first on PATH, in a home that
``dovecote demo`` built (``$DOVECOTE_HOME``), restored before each example so none depends on another. The
human gestures ask for the passphrase at the terminal with echo off, so every example runs with a pty as its
controlling terminal and the passphrase is typed at each prompt. ``serve`` never ends: it is started, must
answer over HTTP, and is stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
import typer.main

from dovecote.cli.app import app
from helpers import DOVECOTE_BIN
from missionhelpers import PASSPHRASE, VECTOR, for_phase, keyed
from ptyhelpers import at_terminal

MID = VECTOR["mission_id"]
EXAMPLE_DB = "dovecote_example"


def _paths(cmd: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    for name, sub in getattr(cmd, "commands", {}).items():
        out += _paths(sub, (*path, name))
    return out


PATHS = _paths(typer.main.get_command(app))


def _env(home: Path, user: Path) -> dict[str, str]:
    return {"PATH": f"{DOVECOTE_BIN.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(user),
            "LANG": "C.UTF-8", "USER": "ada", "DOVECOTE_AGENT": "tester", "DOVECOTE_HOME": str(home),
            "COLUMNS": "80"}


def example_of(path: tuple[str, ...], env: dict[str, str], cwd: Path) -> list[str]:
    """The example lines at the end of ``dovecote PATH --help`` (the help must end with them)."""
    res = subprocess.run([str(DOVECOTE_BIN), *path, "--help"], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.rstrip("\n").splitlines()
    heads = [n for n, line in enumerate(lines) if line in ("Example:", "Examples:")]
    assert heads, f"dovecote {' '.join(path)} --help ends with no example:\n{res.stdout}"
    body = lines[heads[-1] + 1:]
    assert body and all(line.startswith("  ") for line in body), res.stdout
    assert any("dovecote" in line for line in body), res.stdout
    return [line[2:] for line in body]


def _post(home: Path, env: dict[str, str], cwd: Path, phases: list[str]) -> None:
    subprocess.run([str(DOVECOTE_BIN), "block", "add", "sb_alpha", "--project", "atlas"], cwd=cwd, env=env,
                   check=True, capture_output=True, timeout=60)
    prev = None
    for seq, phase in enumerate(phases, 1):
        r = subprocess.run([str(DOVECOTE_BIN), "mission", "post", "--as-project", "atlas", "--agent", "agent-a",
                            "--json"], input=orjson.dumps(for_phase(phase, seq, prev, brain_ref="atlas")), cwd=cwd,
                           env=env, capture_output=True, timeout=60, check=False)
        assert r.returncode == 0, r.stderr
        prev = orjson.loads(r.stdout)["letter_id"]


def _gesture(phases: list[str]) -> Callable[[Path, dict[str, str], Path], None]:
    def setup(home: Path, env: dict[str, str], cwd: Path) -> None:
        from dovecote.handle.api import Dovecote

        _post(home, env, cwd, phases)
        keyed(Dovecote(home))
    return setup


def _database(home: Path, env: dict[str, str], cwd: Path) -> None:
    """A fresh database of the examples' own on the test server (CI fails, elsewhere skips, without one)."""
    from pghelpers import reach

    with reach() as conn:
        conn.autocommit = True
        conn.execute(f"DROP DATABASE IF EXISTS {EXAMPLE_DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {EXAMPLE_DB}")


def _agent_mail(home: Path, env: dict[str, str], cwd: Path) -> None:
    """An mcp_agent_mail storage root in their schema at ``~/agent-mail`` (``agentmail_archive.sample``)."""
    from agentmail_archive import sample

    sample(Path(env["HOME"]) / "agent-mail")


#: The prompts of the human gestures, answered at the terminal with the passphrase (``missionhelpers.keyed``
#: set it in the homes these run in; ``gesture-key set`` sets it, typed twice, in a home that has none).
ASKED: dict[str, tuple[bytes, ...]] = {
    "gesture-key": (b"new gesture passphrase: ", b"again: "),
    "gesture-key set": (b"new gesture passphrase: ", b"again: "),
    "mission archive": (b"gesture passphrase: ",),
    "receipt import": (b"gesture passphrase: ",),
}

#: The examples that use one fixed thing on this machine (the example database, the example port): one at a
#: time, across the workers of this run and any other run here.
SHARED = {"copy", "db", "db migrate", "serve"}

#: What a home needs before an example of a command that acts on a mission or a database can run.
SETUPS: dict[str, Callable[[Path, dict[str, str], Path], None]] = {
    "mission": _gesture(["judging"]),
    "mission show": _gesture(["judging"]),
    "mission archive": _gesture(["judging", "failed"]),
    "receipt import": _gesture(["judging", "executing", "gate", "merge_wait"]),
    "copy": _database,
    "import agent-mail": _agent_mail,
    "db": _database,
    "db migrate": _database,
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A demo home built once (``dovecote demo``) and a pristine copy of it to restore before each example."""
    root = tmp_path_factory.mktemp("examples")
    r = subprocess.run([str(DOVECOTE_BIN), "demo", "w"], cwd=root, capture_output=True, timeout=120, check=False,
                       env={**_env(root / "w" / ".dovecote", root), "DOVECOTE_HOME": ""})
    assert r.returncode == 0, r.stderr
    shutil.copytree(root / "w", root / "pristine", symlinks=True)
    yield root / "w", root / "pristine"


def _restore(work: Path, pristine: Path) -> None:
    shutil.rmtree(work)
    shutil.copytree(pristine, work, symlinks=True)
    (work / "letter.json").write_bytes(orjson.dumps({**VECTOR, "brain_ref": "atlas"}))


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "dovecote")
def test_every_example_runs_as_printed(path: tuple[str, ...], demo: tuple[Path, Path]) -> None:
    work, pristine = demo
    _restore(work, pristine)
    user = work.parent / "user-home"
    user.mkdir(exist_ok=True)
    env = _env(work / ".dovecote", user)
    lines = example_of(path, env, work)
    key = " ".join(path)
    with _one_at_a_time() if key in SHARED else contextlib.nullcontext():
        if key in SETUPS:
            SETUPS[key](work / ".dovecote", env, work)
        if key == "serve":
            _serves(lines, env, work)
            return
        script = ["bash", "-e", "-o", "pipefail", "-c", "\n".join(lines)]
        code, out = at_terminal(script, env, work, *((p, PASSPHRASE) for p in ASKED.get(key, ())), timeout=90)
    assert code == 0, f"dovecote {key}: the example exits {code}:\n" + "\n".join(lines) + f"\n---\n{out}"
    assert PASSPHRASE not in out  # typed with echo off


@contextlib.contextmanager
def _one_at_a_time() -> Iterator[None]:
    with open(Path(tempfile.gettempdir()) / "dovecote-cli-examples.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _serves(lines: list[str], env: dict[str, str], cwd: Path) -> None:
    """``serve`` runs until stopped: started as printed, it must answer its REST API, then it is stopped."""
    assert lines == ["dovecote serve --port 8765"]
    log = cwd / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(["bash", "-c", f"exec {lines[0]}"], cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, answer = time.monotonic() + 60, None
        while time.monotonic() < deadline and answer is None and proc.poll() is None:
            try:
                with urllib.request.urlopen("http://127.0.0.1:8765/api/v1/sweep", timeout=5) as resp:
                    answer = (resp.status, resp.read())
            except OSError:
                time.sleep(0.2)
        assert answer is not None, log.read_text(errors="replace")
        assert answer[0] == 200 and b"letters" in answer[1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)

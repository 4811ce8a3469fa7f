"""The README's tour, the site's longer tour and the demo's hints run as printed, so they cannot drift.

Each tour's ``sh`` block runs in an empty folder with a fresh home and the
installed ``dovecote`` on PATH (what ``. .venv/bin/activate`` gives); the demo's
"Look around" lines run with PATH *not* finding ``dovecote``, as right after
``make run``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import orjson

from helpers import DOCS, DOVECOTE_BIN, cli_env, tour_block


def _run_tour(tmp_path: Path, script: str) -> tuple[str, str, dict[str, str], Path]:
    """Run a tour with ``bash -e``; answer the ids it kept in ``$bug`` and ``$msg``, its env and its home."""
    assert "<id>" not in script  # nothing a reader must fill in
    work = tmp_path / "work"
    work.mkdir()
    env = cli_env(tmp_path, None)
    env["PATH"] = f"{DOVECOTE_BIN.parent}{os.pathsep}{env['PATH']}"
    # -e: every command must exit 0; -x: name the one that did not.
    r = subprocess.run(
        ["bash", "-e", "-u", "-o", "pipefail", "-x", "-c", script + '\necho "TOUR_OK $bug $msg"\n'],
        cwd=work, env=env, capture_output=True, timeout=120, check=False,
    )
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == 0, err[-3000:]
    assert "Traceback" not in out + err
    _, bug, msg = out.strip().splitlines()[-1].split()
    return bug, msg, {**env, "DOVECOTE_HOME": str(work / ".dovecote")}, work


def _read(env: dict[str, str], *args: str) -> Any:
    return orjson.loads(subprocess.run([str(DOVECOTE_BIN), *args, "--json"], env=env, capture_output=True,
                                       check=True).stdout)


def test_the_readme_tour_runs_as_printed(tmp_path: Path) -> None:
    script = tour_block()
    assert len([ln for ln in script.splitlines() if ln.strip()]) <= 10  # the README's tour is ten lines
    bug, msg, env, _ = _run_tour(tmp_path, script)
    box = _read(env, "box", "project:atlas", "--all")
    # the tour's promises: the sweep filed the report into its project's box, open; the message was worked
    assert {x["id"]: x["fate"] for x in box["letters"]}[bug] == "wet_ink" and box["open"] == 1
    inbox = _read(env, "inbox", "ent_builder", "--all")
    assert {i["id"]: i["state"] for i in inbox["items"]}[msg] == "DONE"


def test_the_sites_tour_runs_as_printed(tmp_path: Path) -> None:
    bug, msg, env, _ = _run_tour(tmp_path, tour_block(DOCS / "getting-started.md"))
    box = _read(env, "box", "project:atlas", "--all")
    # the tour's promise: the receipt was distributed, so the bug shows as answered
    assert {x["id"]: x["fate"] for x in box["letters"]}[bug] == "fired_clay" and box["receipts"] == 1
    inbox = _read(env, "inbox", "ent_builder", "--all")
    assert {i["id"]: i["state"] for i in inbox["items"]}[msg] == "DONE"


def test_the_demo_hints_run_as_printed(tmp_path: Path) -> None:
    env = cli_env(tmp_path, None)
    env["PATH"] = "/usr/bin:/bin"  # as after `make run`: the venv is not on PATH
    r = subprocess.run(
        [str(DOVECOTE_BIN), "demo", "d"], cwd=tmp_path, env=env, capture_output=True, timeout=120, check=False,
    )
    assert r.returncode == 0, r.stderr.decode()
    text = r.stdout.decode()
    block = text[text.index("Look around:"):text.index("Ledgers:")].splitlines()  # the commands, up to the ledgers
    lines = [ln.removeprefix("Look around:").strip() for ln in block]
    script = "\n".join(ln for ln in lines if ln)
    assert "show ent_builder" in script
    run = subprocess.run(
        ["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, timeout=120, check=False,
    )
    assert run.returncode == 0, (script, run.stderr.decode()[-2000:])

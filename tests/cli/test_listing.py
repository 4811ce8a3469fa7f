"""Long text listings (``cli.listing``): the counts, the first rows, then a last line naming how many
were left out and the exact command that lists them; ``--limit N``, ``--no-limit``; the JSON whole;
and the rows written at once, never one terminal write a row."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from dovecote.cli import render
from dovecote.cli.listing import DEFAULT_LIMIT
from dovecote.handle.api import Dovecote
from dovecote.verbs import Sweep
from helpers import add_project, cli_env, new_home, rep, run_cli
from mailhelpers import ENTITY, mail_home, send

FOOTER = re.compile(r"  \((\d+) more left out: `(.+)` lists them\)")


def reports_home(tmp: Path, n: int) -> Dovecote:
    dc = new_home(tmp)
    add_project(dc, tmp, "repo-a")
    dc.report([rep(f"letter {i}", ts=f"2026-07-05T{10 + i // 60:02d}:{i % 60:02d}:00Z") for i in range(n)])
    dc.distribute()
    return dc


def text(tmp: Path, dc: Dovecote, *args: str) -> list[str]:
    r = run_cli(tmp, *args, home=dc.layout.root)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode().splitlines()


def rows(lines: list[str]) -> list[str]:
    """The ids of a sweep's or box's letter rows."""
    return [line.split()[1] for line in lines if line.startswith("  ● ")]


def test_a_text_sweep_shows_the_oldest_rows_and_the_command_for_the_rest(tmp_path: Path) -> None:
    dc = reports_home(tmp_path, DEFAULT_LIMIT + 3)
    every = [r["id"] for r in orjson.loads(run_cli(tmp_path, "sweep", "--json", "--no-distribute",
                                                    home=dc.layout.root).stdout)["letters"]]
    assert len(every) == DEFAULT_LIMIT + 3  # --json is never cut
    lines = text(tmp_path, dc, "sweep", "--no-distribute")
    assert rows(lines) == every[:DEFAULT_LIMIT]
    m = FOOTER.fullmatch(lines[-1])
    assert m is not None and m[1] == "3" and m[2].endswith(" sweep --no-distribute --no-limit")
    ran = subprocess.run(m[2], shell=True, cwd=tmp_path, env=cli_env(tmp_path, dc.layout.root), capture_output=True,
                         timeout=60, check=False)  # the command as printed, pasted into a shell
    assert ran.returncode == 0, ran.stderr.decode()
    rest = ran.stdout.decode().splitlines()
    assert rows(rest) == every and not any(FOOTER.fullmatch(line) for line in rest)


def test_limit_n_and_no_limit(tmp_path: Path) -> None:
    dc = reports_home(tmp_path, 5)
    lines = text(tmp_path, dc, "sweep", "--no-distribute", "--limit", "2")
    m = FOOTER.fullmatch(lines[-1])
    assert len(rows(lines)) == 2 and m is not None and m[1] == "3" and "--limit" not in m[2]
    assert len(rows(text(tmp_path, dc, "sweep", "--no-distribute", "--limit", "5"))) == 5
    assert not any(FOOTER.fullmatch(line) for line in text(tmp_path, dc, "sweep", "--no-distribute", "--limit", "5"))
    assert len(rows(text(tmp_path, dc, "box", "project:repo-a", "--limit=1"))) == 1
    assert len(rows(text(tmp_path, dc, "box", "project:repo-a", "--no-limit"))) == 5
    assert len(orjson.loads(run_cli(tmp_path, "box", "project:repo-a", "--json", "--limit", "1",
                                    home=dc.layout.root).stdout)["letters"]) == 5
    r = run_cli(tmp_path, "sweep", "--no-distribute", "--limit", "0", home=dc.layout.root)
    assert r.returncode == 2 and r.stdout == b""  # a usage error, nothing printed


def test_inbox_detailed_search_and_cases_list_at_most_limit(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    for s in ("one", "two", "three"):
        send(dc, s)
    dc.report([rep("seek crashed with a traceback", tool=t, symptom="crash") for t in ("seek", "trace", "north")])
    lines = text(tmp_path, dc, "inbox", ENTITY, "--detailed", "--limit", "1", "--current-tic", "100")
    m = next(m for m in map(FOOTER.fullmatch, lines) if m)
    assert len([line for line in lines if line.startswith("  WAIT_")]) == 1 and m[1] == "2"
    assert m[2].endswith(f" inbox {ENTITY} --detailed --current-tic 100 --no-limit")
    assert len([line for line in text(tmp_path, dc, "inbox", ENTITY, "--detailed", "--no-limit")
                if line.startswith("  WAIT_")]) == 3
    found = text(tmp_path, dc, "search", "body", "--limit", "1")
    m = FOOTER.fullmatch(found[-2])
    assert m is not None and m[1] == "2" and m[2].endswith(" search body --limit 3")
    assert found[-1] == "3 matches for 'body'"
    cases = text(tmp_path, dc, "cases", "--limit", "2")
    assert len([line for line in cases if line.startswith("case fp:")]) == 2
    assert FOOTER.fullmatch(cases[-2]) is not None and cases[-1].startswith("3 cases")


def test_the_rows_are_written_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One write for the rows, not one a row (Rich's print per row was most of a text sweep's time)."""
    dc = reports_home(tmp_path, 300)
    d = dc.sweep(Sweep(distribute=False)).to_dict()

    class Counting(io.StringIO):
        writes = 0

        def write(self, s: str) -> int:
            Counting.writes += 1
            return super().write(s)

    out = Counting()
    monkeypatch.setattr(sys, "stdout", out)
    render.sweep(d)  # every row
    assert len(rows(out.getvalue().splitlines())) == 300
    assert Counting.writes <= 5

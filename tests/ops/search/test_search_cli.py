"""The ``search`` fast path (no Typer, no Rich) prints what the Typer command prints, byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dovecote.cli import searchpath
from helpers import cli_env
from searchhelpers import T, finish, mail_home, put_message

pytestmark = pytest.mark.files_only

TYPER_ONLY = (
    "import sys\nimport dovecote.cli.searchpath as s\ns.try_search = lambda argv: False\n"
    "from dovecote.cli.entry import main\nmain()\n"
)
FAST = (
    "import sys\nfrom dovecote.cli.entry import main\ntry:\n    main()\n"
    "finally:\n    sys.stderr.write(f'typer:{\"typer\" in sys.modules}')\n"
)

PLAIN = [
    ("search", "kittiwake", "colony", "--json"),
    ("search", "colony"),
    ("search", "kittiwake", "--entity", "ent_a", "--json"),
    ("search", "--entity=ent_b", "kittiwake"),
    ("search", "colony", "--include-terminal", "--limit", "1", "--json"),
    ("search", "--limit=1", "colony", "--include-terminal"),
    ("search", ""),
    ("search", '"', "*"),
    ("search", "x", "--entity", "ent_nobody"),
    ("search", "x", "--entity", "../etc"),
    ("search", "x", "--limit", "0"),
]
ODD = [
    ("search",),
    ("search", "--help"),
    ("search", "x", "--limit", "abc"),
    ("search", "x", "--limit", "99999999999999999999"),
    ("search", "x", "--bogus"),
    ("search", "x", "--json", "--json"),
    ("search", "--", "-x"),
    ("search", "-alpha"),
    ("search", "x", "--home", "elsewhere"),
]


def _run(tmp: Path, home: Path, code: str, args: tuple[str, ...]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=tmp, env=cli_env(tmp, home), capture_output=True,
                          timeout=60, check=False)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    dc = mail_home(tmp_path)
    a = put_message(dc, "ent_a", "kittiwake colony", ts=T(hour=1), sender="ent_b")
    put_message(dc, "ent_b", "kittiwake count", body="colony of forty", ts=T(hour=2))
    put_message(dc, "ent_b", "the colony again", body="a **marked** word", ts=T(hour=3))
    finish(dc, "ent_a", a)
    return dc.layout.root


@pytest.mark.parametrize("args", PLAIN + ODD)
def test_the_fast_path_and_the_typer_command_print_the_same(tmp_path: Path, home: Path, args: tuple[str, ...]) -> None:
    typer_only = _run(tmp_path, home, TYPER_ONLY, args)
    fast = _run(tmp_path, home, FAST, args)
    assert fast.returncode == typer_only.returncode
    assert fast.stdout == typer_only.stdout
    err, _, flag = fast.stderr.rpartition(b"typer:")
    assert err == typer_only.stderr
    assert flag == (b"False" if args in PLAIN else b"True")  # the plain forms never load Typer


def test_the_home_option_is_read_the_same(tmp_path: Path, home: Path) -> None:
    expected = _run(tmp_path, home, TYPER_ONLY, ("search", "colony", "--json")).stdout
    assert b'"count": 2' in expected
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for case in (("--home", str(home), "search", "colony", "--json"), (f"--home={home}", "search", "colony", "--json")):
        assert _run(elsewhere, tmp_path / "nohome", FAST, case).stdout == expected


def test_the_parse_of_a_plain_search() -> None:
    got = searchpath.parse(["--home=/h", "search", "a", "--limit", "7", "b", "--json", "--entity", "e"])
    assert got == searchpath.SearchArgs(home="/h", words=["a", "b"], entity="e", include_terminal=False, limit=7,
                                        json=True)
    assert searchpath.parse(["inbox", "ent_a"]) is None
    assert searchpath.parse(["search", "caf\udce9"]) is None  # bytes that are not UTF-8: the boundary refuses them

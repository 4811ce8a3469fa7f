"""Shared helpers for the functional tests (a plain module, imported by name).

Fixtures are plain functions here so that this file never competes with a
``conftest.py``: a test builds what it needs from ``tmp_path``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec.structs
import orjson

from dovecote.handle import api
from dovecote.handle.api import Dovecote, init
from dovecote.model.letters import canonical_line, letter_id
from dovecote.roster import config as roster_mod
from dovecote.roster.home import find_home
from dovecote.store.core import Store, Where
from dovecote.store.memory import MemoryStore
from dovecote.store.postgres.store import PostgresStore
from dovecote.verbs import ProjectAdd

#: While a test runs on the memory store (or PostgreSQL): each home's one store, shared by
#: every handle the test opens on it (as processes share a home's files). None: files.
_MEMORY: dict[Path, Store] | None = None
#: While a test runs on PostgreSQL: the schemas its homes live in (one each), dropped at its end.
_SCHEMAS: contextlib.ExitStack | None = None


@contextmanager
def stores(kind: str) -> Iterator[None]:
    """Open every home on ``kind`` ("file", "memory" or "postgres") until the block ends (see conftest)."""
    global _MEMORY, _SCHEMAS
    _MEMORY = {} if kind != "file" else None
    with contextlib.ExitStack() as schemas:
        _SCHEMAS = schemas if kind == "postgres" else None
        try:
            yield
        finally:
            for st in (_MEMORY or {}).values():
                if isinstance(st, PostgresStore):
                    st.close()
            _MEMORY, _SCHEMAS = None, None


#: How many PostgreSQL stores (one pool each) a test keeps open: a property test makes a home per
#: example, and only the newest are still in use; the server's connections are shared by everyone.
OPEN_STORES = 6


def _store_for(home: Path) -> Store:
    """A new home's store: a memory store, or a PostgreSQL schema of its own."""
    if _SCHEMAS is None:
        return MemoryStore()
    from pghelpers import schema

    assert _MEMORY is not None
    opened = [st for st in _MEMORY.values() if isinstance(st, PostgresStore)]
    for old in opened[: max(0, len(opened) + 1 - OPEN_STORES)]:
        old.close()
    return PostgresStore(_SCHEMAS.enter_context(schema()))


def open_home(root: str | os.PathLike[str] | None = None, **options: Any) -> Dovecote:
    """``api.open_home`` on the store the test runs on: a cold handle on the same ledgers."""
    if _MEMORY is None:
        return api.open_home(root, **options)
    home = find_home(root).resolve()
    store = _MEMORY.get(home)
    if store is None:
        store = _MEMORY[home] = _store_for(home)
    return api.open_home(root, store=store, **options)

#: The m1nd test vector (reference notes section 2; issue 2).
VECTOR: dict[str, str] = {
    "ts": "2026-07-05T10:00:00Z",
    "agent": "probe",
    "repo": "repo-a",
    "tool": "seek",
    "class": "bug",
    "what": "w1",
}
VECTOR_LINE = b'{"ts":"2026-07-05T10:00:00Z","agent":"probe","repo":"repo-a","tool":"seek","class":"bug","what":"w1"}'
VECTOR_ID = "e59b1adb1c4b"

#: Names a path trick could hide in; every one must be refused with invalid_name.
BAD_NAMES: tuple[str, ...] = ("../x", "a/b", "/abs", "a\x00b", "..", "", ".hidden", "x" * 200, "a\\b")
#: The same, minus what cannot travel through argv (NUL) or parses as an option.
BAD_CLI_NAMES: tuple[str, ...] = tuple(n for n in BAD_NAMES if "\x00" not in n)

DOVECOTE_BIN = Path(sys.executable).parent / "dovecote"


def rep(
    what: str = "w",
    *,
    ts: str = "2026-07-05T10:00:00Z",
    agent: str = "probe",
    repo: str | None = "repo-a",
    tool: str = "seek",
    klass: str = "bug",
    **more: Any,
) -> dict[str, Any]:
    """A valid field report (``class`` is spelled ``klass`` here)."""
    obj: dict[str, Any] = {"ts": ts, "agent": agent, "tool": tool, "class": klass, "what": what, **more}
    if repo is not None:
        obj["repo"] = repo
    return obj


def lid(obj: dict[str, Any]) -> str:
    """The id ``report`` gives ``obj`` (its canonical line hashed)."""
    return letter_id(canonical_line(obj))


def new_home(tmp: Path) -> Dovecote:
    """A fresh home at ``tmp/owner/.dovecote`` whose owner root is ``tmp/owner``."""
    owner = tmp / "owner"
    owner.mkdir(parents=True, exist_ok=True)
    home, created = init(owner / ".dovecote", owner_root=str(owner))
    assert created
    return open_home(home)


def add_project(
    dc: Dovecote,
    tmp: Path,
    name: str,
    *,
    exists: bool = True,
    aliases: tuple[str, ...] = (),
    box_in_repo: bool = False,
) -> Path:
    """Add a project whose root is ``tmp/repos/<name>`` (created unless ``exists`` is False)."""
    root = tmp / "repos" / name
    if exists:
        root.mkdir(parents=True, exist_ok=True)
    dc.add_project(ProjectAdd(name=name, root=str(root), aliases=aliases, box_in_repo=box_in_repo))
    return root


def rewrite_roster(dc: Dovecote, **changes: Any) -> Dovecote:
    """Write the roster with ``changes`` applied; return a fresh (cold) handle."""
    new = msgspec.structs.replace(dc.roster, **changes)
    dc.layout.config.write_bytes(roster_mod.dump(new))
    return open_home(dc.layout.root)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes), except a home's ``cache/``: a
    cache (a fold snapshot a read wrote, say) is deletable at any time, never state."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).parts[0] != "cache"}


def ledger_lines(path: Path) -> list[bytes]:
    """The complete lines of a ledger (empty if it does not exist)."""
    if not path.exists():
        return []
    return [ln for ln in path.read_bytes().split(b"\n") if ln]


def ledger_ids(path: Path) -> list[str]:
    return [letter_id(ln) for ln in ledger_lines(path)]


def box_ids(dc: Dovecote, where: Where) -> list[str]:
    """The ids of a box's letters in order, read through the store (any store)."""
    return [x.id for x in dc.store.read(where).letters]


def box_bytes(dc: Dovecote, where: Where) -> bytes:
    """A box's letters as ledger bytes, read through the store (any store)."""
    return b"".join(x.raw + b"\n" for x in dc.store.read(where).letters)


def cli_env(tmp: Path, home: Path | None, **extra: str) -> dict[str, str]:
    """A clean environment: HOME is a scratch dir so ``~/.dovecote`` is never the real one."""
    user = tmp / "user-home"
    user.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(user),
        "LANG": "C.UTF-8",
        "DOVECOTE_AGENT": "tester",
        "COLUMNS": "200",
    }
    if home is not None:
        env["DOVECOTE_HOME"] = str(home)
    env.update(extra)
    return env


def run_cli(
    tmp: Path,
    *args: str,
    home: Path | None = None,
    cwd: Path | None = None,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    process: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """Run the CLI as a user would, and return what a process would have: exit code, stdout, stderr.

    By default it runs in this process through the console script's own entry
    (``cli.entry.main``) with the same argv, working directory, environment and
    stdin, which is what makes the suite fast; ``process=True`` (or a call off
    the main thread) runs the real console script, for tests where processes
    matter: concurrency, start-up, signals.
    """
    environ = env or cli_env(tmp, home)
    if process or threading.current_thread() is not threading.main_thread():
        return subprocess.run(
            [str(DOVECOTE_BIN), *args],
            cwd=cwd or tmp,
            env=environ,
            input=stdin if stdin is not None else b"",
            capture_output=True,
            timeout=60,
            check=False,
        )
    return _in_process(list(args), cwd or tmp, environ, stdin or b"")


def _in_process(
    args: list[str], cwd: Path, environ: dict[str, str], stdin: bytes
) -> subprocess.CompletedProcess[bytes]:
    """``cli.entry.main`` with this argv, cwd, environment and stdin; streams as a UTF-8 process has them."""
    from dovecote.cli import entry

    saved = (sys.argv, sys.stdin, sys.stdout, sys.stderr, dict(os.environ), os.getcwd())
    out, err = _Captured(), _Captured()
    sys.argv = [str(DOVECOTE_BIN), *args]
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    os.environ.clear()
    os.environ.update(environ)
    code: int = 0
    try:
        os.chdir(cwd)
        entry.main()
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            sys.stderr.write(f"{e.code}\n")
            code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(ValueError):  # closed (a broken pipe)
                stream.flush()
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved[:4]
        os.environ.clear()
        os.environ.update(saved[4])
        os.chdir(saved[5])
    return subprocess.CompletedProcess([str(DOVECOTE_BIN), *args], code, out.data, err.data)


class _Captured(io.BytesIO):
    """A stream's bytes, still readable after the stream is closed (as a pipe keeps what was written)."""

    def close(self) -> None:
        return None  # the bytes are the result: never release them

    @property
    def data(self) -> bytes:
        return self.getvalue()


def cli_json(tmp: Path, *args: str, home: Path | None = None, cwd: Path | None = None) -> Any:
    """Run a command that prints JSON; assert it succeeded and parse the output."""
    r = run_cli(tmp, *args, home=home, cwd=cwd)
    assert r.returncode == 0, r.stderr.decode()
    return orjson.loads(r.stdout)


#: The README, whose quick tour runs as a test (``tests/cli/test_readme_tour.py``).
README = Path(__file__).resolve().parent.parent / "README.md"
#: The documentation site's pages (``mkdocs.yml``): commands they print run as tests too.
DOCS = README.parent / "docs"


def sh_block(page: Path, heading: str) -> str:
    """The first ``sh`` block under ``heading`` (a line of ``page``, e.g. ``## A quick tour``)."""
    section = page.read_text().split(heading + "\n", 1)[1]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, f"{page.name}: no sh block under {heading!r}"
    return match.group(1)


def tour_block(page: Path = README) -> str:
    """A quick tour: the ``sh`` block under "A quick tour" of the README, or of the site's Getting started."""
    return sh_block(page, "## A quick tour")

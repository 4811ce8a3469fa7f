"""The package as a user gets it: the sdist and the wheel built by ``python -m build``, the wheel installed
into a fresh virtualenv (no system site packages, no extras), and that install's own ``dovecote`` run as
a user runs it: ``demo``, ``serve`` (a real process on a free port), ``mcp`` on stdio through the MCP
SDK's client, and a PostgreSQL store refused ``driver_missing`` because the driver is an extra.

The build and the install happen once per test run, whichever worker asks first (a file lock in the
run's shared temporary folder); the other workers wait for it and share the virtualenv.
"""

from __future__ import annotations

import email.parser
import fcntl
import re
import subprocess
import sys
import tarfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

import httpx2 as httpx
import pytest
from mcp import Client, StdioServerParameters

from dovecote._version import __version__
from helpers import cli_env
from serverhelpers import serving

ROOT = Path(__file__).resolve().parents[2]
#: The store URL a home without the driver names; nothing ever connects to it.
PG_URL = "postgresql://127.0.0.1:5432/test"


@dataclass(frozen=True)
class Installed:
    """The built distributions and the fresh virtualenv the wheel is installed in."""

    wheel: Path
    sdist: Path
    venv: Path

    @property
    def dovecote(self) -> Path:
        return self.venv / "bin" / "dovecote"

    def run(self, tmp: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.dovecote), *args], env=cli_env(tmp, home), cwd=tmp, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=120, check=False)


def _build_and_install(where: Path) -> Installed:
    """``python -m build`` (the sdist, then the wheel from the sdist), then the wheel into a new venv.

    The venv is made without pip, and this interpreter's pip installs into it (``--python``): the same
    resolver and the same wheel a user's ``pip install`` takes, without ensurepip's three seconds.
    """
    dist = where / "dist"
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], check=True,
                   capture_output=True, timeout=600)
    (wheel,) = dist.glob("dovecote-*.whl")
    (sdist,) = dist.glob("dovecote-*.tar.gz")
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--disable-pip-version-check", str(wheel)], check=True, capture_output=True, timeout=600)
    return Installed(wheel, sdist, venv)


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Installed:
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent  # one folder for every worker of this run
    where = shared / "packaging"
    where.mkdir(exist_ok=True)
    with open(shared / "packaging.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ready = where / "ready"
        if not ready.exists():
            for old in ("dist", "venv"):  # a worker that failed halfway: start again
                subprocess.run(["rm", "-rf", str(where / old)], check=True)
            built = _build_and_install(where)
            ready.write_text("ok")
            return built
    (wheel,) = (where / "dist").glob("dovecote-*.whl")
    (sdist,) = (where / "dist").glob("dovecote-*.tar.gz")
    return Installed(wheel, sdist, where / "venv")


def _metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode())


def test_the_installed_version_the_metadata_and_the_changelog_agree(installed: Installed, tmp_path: Path) -> None:
    shown = installed.run(tmp_path, "--version")
    assert shown.returncode == 0, shown.stderr
    meta = _metadata(installed.wheel)
    assert shown.stdout.strip() == f"dovecote {meta['Version']}" == f"dovecote {__version__}"
    assert installed.wheel.name == f"dovecote-{__version__}-py3-none-any.whl"
    assert installed.sdist.name == f"dovecote-{__version__}.tar.gz"
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(__version__)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M), \
        f"CHANGELOG.md has no entry for {__version__}"


def test_the_metadata_says_what_a_package_index_shows(installed: Installed) -> None:
    meta = _metadata(installed.wheel)
    assert meta["Name"] == "dovecote" and meta["Requires-Python"] == ">=3.11"
    assert meta["License-Expression"] == "MIT" and meta.get_all("License-File") == ["LICENSE"]
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Repository", "Issues", "Changelog"} <= set(urls), urls
    classifiers = meta.get_all("Classifier") or []
    assert "License :: OSI Approved :: MIT License" not in classifiers  # the SPDX expression says it once
    assert "Programming Language :: Python :: 3.11" in classifiers and "Typing :: Typed" in classifiers
    requires = meta.get_all("Requires-Dist") or []
    driver = [r for r in requires if r.startswith(("psycopg", "psycopg-pool"))]
    assert driver and all(re.search(r"extra == .(postgres|test).$", r) for r in driver), requires  # extras only
    assert set(meta.get_all("Provides-Extra") or []) >= {"postgres", "test"}
    with zipfile.ZipFile(installed.wheel) as z:
        names = z.namelist()
    assert "dovecote/py.typed" in names and any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert any(n.startswith("dovecote/http/templates/") for n in names)  # the Human View's pages and assets
    assert any(n.startswith("dovecote/http/static/") for n in names)
    assert not any(n.startswith(("tests/", "bench/")) for n in names)


def test_the_sdist_carries_the_license_the_changelog_and_the_sources(installed: Installed) -> None:
    top = f"dovecote-{__version__}"
    with tarfile.open(installed.sdist) as t:
        names = set(t.getnames())
    for path in ("LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "src/dovecote/_version.py",
                 "src/dovecote/py.typed", "plugins/dovecote/.claude-plugin/plugin.json"):
        assert f"{top}/{path}" in names, path
    assert any(n.startswith(f"{top}/src/dovecote/http/templates/") for n in names)


def test_the_fresh_install_has_no_database_driver_and_builds_the_demo(installed: Installed, tmp_path: Path) -> None:
    py = installed.venv / "bin" / "python"
    probe = subprocess.run([str(py), "-c", "import importlib.util as u; print(u.find_spec('psycopg'))"],
                           capture_output=True, text=True, timeout=60, check=True)
    assert probe.stdout.strip() == "None", "the wheel pulled in psycopg: the driver must stay in the extra"
    demo = installed.run(tmp_path, "demo", str(tmp_path / "demo"))
    assert demo.returncode == 0, demo.stderr
    assert f"demo home: {tmp_path / 'demo' / '.dovecote'}" in demo.stdout
    assert "INBOX: ent_builder" in demo.stdout and "sweep: " in demo.stdout
    home = tmp_path / "demo" / ".dovecote"
    inbox = installed.run(tmp_path, "inbox", "ent_builder", "--json", home=home)
    assert inbox.returncode == 0, inbox.stderr
    assert '"entity"' in inbox.stdout


def test_the_fresh_install_serves_the_api(installed: Installed, tmp_path: Path) -> None:
    assert installed.run(tmp_path, "demo", str(tmp_path / "demo")).returncode == 0
    with serving(tmp_path, tmp_path / "demo" / ".dovecote", exe=installed.dovecote) as server:
        r = httpx.get(f"{server.url}/openapi.json", timeout=30)
        page = httpx.get(f"{server.url}/", timeout=30)  # the Human View: templates and assets from the wheel
        css = httpx.get(f"{server.url}/static/app.css", timeout=30)
    assert page.status_code == 200 and "<title>Overview · dovecote</title>" in page.text, page.text[:300]
    assert css.status_code == 200 and css.text.strip()
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["openapi"].startswith("3.") and doc["info"]["version"] == __version__
    assert any(p.startswith("/api/v1/") for p in doc["paths"]), list(doc["paths"])[:5]


@pytest.mark.anyio
async def test_the_fresh_install_answers_mcp_on_stdio(installed: Installed, tmp_path: Path) -> None:
    assert installed.run(tmp_path, "demo", str(tmp_path / "demo")).returncode == 0
    home = tmp_path / "demo" / ".dovecote"
    params = StdioServerParameters(command=str(installed.dovecote), args=["--home", str(home), "mcp", "--as",
                                   "ent_builder"], env=cli_env(tmp_path, home))
    async with Client(params) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
        assert {"inbox", "send", "report", "sweep"} <= tools, tools
        inbox = await c.call_tool("inbox", {})
        assert not inbox.is_error and inbox.structured_content is not None
        assert inbox.structured_content["entity"] == "ent_builder"


def _pg_home(installed: Installed, tmp: Path) -> Path:
    """A home whose roster names a PostgreSQL store (as ``init --store`` writes it)."""
    home = tmp / "pg" / ".dovecote"
    made = installed.run(tmp, "--home", str(home), "init")
    assert made.returncode == 0, made.stderr
    config = home / "config.toml"
    config.write_text(f'store = "{PG_URL}"\n' + config.read_text())
    return home


def test_a_postgres_store_without_the_extra_is_refused_naming_it(installed: Installed, tmp_path: Path) -> None:
    home = _pg_home(installed, tmp_path)
    calls = [
        ("sweep",), ("inbox", "ent_builder"), ("verify",), ("db", "migrate"),  # the home's own store
        ("db", "migrate", "--url", PG_URL), ("copy", "--to", PG_URL),
        ("--home", str(tmp_path / "new" / ".dovecote"), "init", "--store", PG_URL),
    ]
    with ThreadPoolExecutor(4) as pool:  # each a cold process that waits on its imports: run them side by side
        results = list(pool.map(lambda args: installed.run(tmp_path, *args, home=home), calls))
    for args, r in zip(calls, results, strict=True):
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.startswith("Error: driver_missing: ") and "install dovecote[postgres]" in r.stderr, (
            args, r.stderr)
        assert "Traceback" not in r.stderr and "ImportError" not in r.stderr, (args, r.stderr)
    assert not (tmp_path / "new" / ".dovecote" / "config.toml").exists()  # init wrote no roster
    served = subprocess.run([str(installed.dovecote), "serve", "--port", "0"], env=cli_env(tmp_path, home),
                            cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert served.returncode == 2 and "driver_missing" in served.stderr and "Traceback" not in served.stderr
    hook = subprocess.run([str(installed.dovecote), "hook", "session-start"], env=cli_env(tmp_path, home),
                          cwd=tmp_path, capture_output=True, text=True, input="{}", timeout=60)
    assert hook.returncode == 0 and hook.stdout == "" and "driver_missing" in hook.stderr  # a hook fails open


def test_the_file_store_needs_no_driver_even_beside_a_postgres_url(installed: Installed, tmp_path: Path) -> None:
    """Only a command that names the database needs the driver: the home's own files never do."""
    home = tmp_path / "files" / ".dovecote"
    assert installed.run(tmp_path, "--home", str(home), "init").returncode == 0
    for args in (("sweep", "--json"), ("doctor",), ("verify",)):
        r = installed.run(tmp_path, *args, home=home)
        assert r.returncode == 0, (args, r.stderr)


"""The PostgreSQL driver is an extra: without it the file store works, and a PostgreSQL store is refused
``driver_missing`` naming ``dovecote[postgres]``, never an ImportError. The driver's absence is simulated in
a child process (``None`` in ``sys.modules`` makes its import fail, as on an install without the extra);
tests/packaging/test_wheel.py checks the same on a real install without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import cli_env

#: Run the CLI as an install without the driver would: psycopg and its pool cannot be imported.
WITHOUT_DRIVER = """
import sys
sys.modules["psycopg"] = None
sys.modules["psycopg_pool"] = None
from dovecote.cli.entry import script
sys.argv[0] = "dovecote"
script()
"""


def _run(tmp: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_DRIVER, *args], env=cli_env(tmp, home), cwd=tmp,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60, check=False)


def test_without_the_driver_files_work_and_a_database_is_refused_naming_the_extra(tmp_path: Path) -> None:
    home = tmp_path / ".dovecote"
    assert _run(tmp_path, home, "init").returncode == 0
    files = _run(tmp_path, home, "sweep", "--json")
    assert files.returncode == 0 and '"total"' in files.stdout, files.stderr
    config = home / "config.toml"
    config.write_text('store = "postgresql://127.0.0.1:5432/test"\n' + config.read_text())
    for args in (("sweep",), ("db", "migrate"), ("init", "--store", "postgresql://127.0.0.1/x")):
        r = _run(tmp_path, tmp_path / "other" if args[0] == "init" else home, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith("Error: driver_missing: ") and "install dovecote[postgres]" in r.stderr
        assert "Traceback" not in r.stderr, r.stderr


def test_the_store_package_is_the_one_door_to_the_driver() -> None:
    """Importing any module of the PostgreSQL store without the driver raises the refusal, not ImportError."""
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from dovecote.errors import Refusal\n"
        "try:\n    import dovecote.store.postgres.store\nexcept Refusal as e:\n    print(e.reason, e.status)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert r.stdout.split() == ["driver_missing", "500"], r.stderr


def test_only_the_driver_module_imports_psycopg() -> None:
    """Every other module reaches the driver through ``store/postgres/driver.py``, so none can fail with a bare
    ImportError on an install without the extra."""
    import ast

    src = Path(__file__).resolve().parents[2] / "src" / "dovecote"
    found = []
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(src)}: {n}" for n in names if n.split(".")[0] in ("psycopg", "psycopg_pool")]
    assert found and all(f.startswith("store/postgres/driver.py: ") for f in found), found

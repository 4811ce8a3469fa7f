"""A search index build killed part way (a real process, SIGKILL) leaves the old index or none.

The build runs in one SQLite transaction with ``synchronous=OFF``: a process
that dies before the commit leaves only an uncommitted write-ahead log, which
the next opener rolls back; the next search then builds again and answers as
a home that never had an index.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from dovecote.model.addresses import entity
from dovecote.model.envelope import build_message
from dovecote.model.letters import canonical_line, letter_id
from helpers import DOVECOTE_BIN, cli_env, run_cli
from searchhelpers import mail_home

pytestmark = pytest.mark.files_only

MESSAGES = 10000


def _big_home(tmp: Path) -> Path:
    dc = mail_home(tmp)
    lines: list[bytes] = []
    for i in range(MESSAGES):
        ts = f"2026-07-{1 + i // 1000:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00Z"
        line = canonical_line(build_message(ts=ts, sender="ent_b", recipient="ent_a", subject=f"kestrel n{i}",
                                            body=f"body words w{i % 97} and more words"))
        lines.append(line)
        if i % 4 == 0:
            lines.append(canonical_line({"ts": ts, "agent": "ent_a", "kind": "seen", "ref": letter_id(line)}))
    path = dc.store.path(entity("ent_a"))
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return dc.layout.root


def test_a_killed_build_leaves_a_usable_index(tmp_path: Path) -> None:
    home = _big_home(tmp_path)
    args = ("search", "kestrel", "w5", "--json", "--limit", "3")
    expected = run_cli(tmp_path, *args, home=home)
    assert expected.returncode == 0, expected.stderr
    assert orjson.loads(expected.stdout)["count"] == len(range(5, MESSAGES, 97))
    killed = 0
    for delay in (0.0, 0.02, 0.05, 0.1):
        shutil.rmtree(home / "cache")
        proc = subprocess.Popen([str(DOVECOTE_BIN), *args], env=cli_env(tmp_path, home), cwd=tmp_path,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        index = home / "cache" / "search.sqlite"
        while proc.poll() is None and not index.exists():  # the index is open: the build starts now
            time.sleep(0.002)
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait(timeout=60)
        after = run_cli(tmp_path, *args, home=home)
        assert after.returncode == 0, after.stderr
        assert after.stdout == expected.stdout
        again = run_cli(tmp_path, *args, home=home)  # and the index it left (or rebuilt) keeps answering
        assert again.stdout == expected.stdout
    assert killed >= 2, "no build was caught in the middle"

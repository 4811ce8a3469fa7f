"""One search index file shared by several connections: two server workers, a warm server
beside cold CLI calls. SQLite refuses a journal-mode switch at once (no busy wait) while
another connection has the file, so every such switch is best-effort: a search answers
whatever the other connections hold, and the file goes back to WAL as soon as it can."""

from __future__ import annotations

import sqlite3
import subprocess
import threading
from pathlib import Path

import orjson
import pytest

from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.ops.search import index as search_index
from dovecote.ops.search import open as search_open
from dovecote.verbs import Search
from helpers import DOVECOTE_BIN, cli_env, open_home
from searchhelpers import mail_home, put_message

pytestmark = pytest.mark.files_only


def index_file(dc: Dovecote) -> Path:
    return dc.layout.cache / "search.sqlite"


def journal_mode(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    return str(mode)


def home_with_mail(tmp_path: Path, n: int = 5) -> Dovecote:
    dc = mail_home(tmp_path)
    for i in range(n):
        put_message(dc, "ent_a" if i % 2 else "ent_b", f"loon {i}", body=f"heron number {i}")
    return dc


def test_a_first_build_beside_another_open_connection_answers(tmp_path: Path) -> None:
    """The other worker has opened the empty index: the build cannot leave WAL, and goes on through it."""
    first = home_with_mail(tmp_path)
    other = open_home(first.layout.root)
    search_open.open_index(other._ctx())  # the second worker's connection: tables made, nothing indexed
    answer = builtins(first.search(Search(query="heron")))
    assert answer["count"] == 5
    assert first.warm[search_index.WARM_KEY].stats["indexed"] == 5
    assert other.search(Search(query="loon")).count == 5
    assert other.warm[search_index.WARM_KEY].stats["indexed"] == 0  # it read the rows the first one wrote
    assert journal_mode(index_file(first)) == "wal"


def test_a_connection_opened_while_another_holds_the_write_lock_waits_for_it(tmp_path: Path) -> None:
    """The index in rollback mode with a writer inside (another's first build): opening it is not
    'stayed locked'; the search waits for the writer, answers, and puts the file back in WAL."""
    dc = home_with_mail(tmp_path)
    assert dc.search(Search(query="heron")).count == 5
    warm = dc.warm.pop(search_index.WARM_KEY)
    assert warm is not None
    warm.close()
    path = index_file(dc)
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    assert writer.execute("PRAGMA journal_mode=DELETE").fetchone() == ("delete",)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('probe', 'x')")
    release = threading.Timer(0.4, lambda: writer.execute("COMMIT"))
    release.start()
    try:
        cold = open_home(dc.layout.root)
        assert cold.search(Search(query="loon")).count == 5
    finally:
        release.join()
    assert cold.warm[search_index.WARM_KEY].stats["rebuilds"] == 0  # the index was kept, not thrown away
    assert cold.search(Search(query="loon 3")).count == 1
    assert cold.warm[search_index.WARM_KEY].wal
    writer.close()
    assert journal_mode(path) == "wal"


def test_cold_searches_started_together_on_a_new_index_all_answer(tmp_path: Path) -> None:
    """Real processes, as hooks and scripts call it: six cold searches at once on a home with no
    index, three times over; each answers the full count, none is a 503 or a lock error."""
    dc = home_with_mail(tmp_path, 40)
    env = cli_env(tmp_path, dc.layout.root)
    for _ in range(3):
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{index_file(dc)}{suffix}").unlink(missing_ok=True)
        procs = [
            subprocess.Popen([str(DOVECOTE_BIN), "search", "heron", "--json"], env=env, cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(6)
        ]
        for p in procs:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err.decode()
            assert orjson.loads(out)["count"] == 40
    assert journal_mode(index_file(dc)) == "wal"

"""One warm search index shared by many threads of one server (issue 7, the soak's 503s).

A thread that finds the index file deleted or replaced opens a new one, and a
thread whose index went bad rebuilds it; neither may close a connection another
thread is inside (SQLite: "Cannot operate on a closed database", a 503). The
warm index is opened, replaced and closed under one lock, a closed one is never
handed out, and the last user of a retired one closes it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.ops.search import index as search_index
from dovecote.ops.search import open as search_open
from dovecote.verbs import Search
from searchhelpers import mail_home, put_message

pytestmark = pytest.mark.files_only

MESSAGES = 60


def home_with_mail(tmp_path: Path) -> Dovecote:
    dc = mail_home(tmp_path)
    for i in range(MESSAGES):
        put_message(dc, "ent_a" if i % 2 else "ent_b", f"loon {i}", body=f"heron number {i}")
    return dc


def index_file(dc: Dovecote) -> Path:
    return dc.layout.cache / search_index.INDEX_FILE


def run_beside(
    dc: Dovecote, meddle: Callable[[], object], *, searchers: int = 4, seconds: float = 1.5,
    tolerated: Callable[[BaseException], bool] = lambda e: False,
) -> list[BaseException]:
    """``searchers`` threads search ``dc`` while ``meddle()`` runs again and again; their errors
    (a ``tolerated`` one is left out, and its thread goes on)."""
    errors: list[BaseException] = []
    stop = threading.Event()

    def search() -> None:
        while not stop.is_set():
            try:
                answer = builtins(dc.search(Search(query="heron")))
                assert answer["count"] == MESSAGES, answer["count"]
            except BaseException as e:  # every failure is the test's finding
                if not tolerated(e):
                    errors.append(e)
                    return

    threads = [threading.Thread(target=search) for _ in range(searchers)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and not errors:
            meddle()
            time.sleep(0.002)
    finally:
        stop.set()
        for t in threads:
            t.join()
    return errors


def test_threads_search_while_the_index_file_is_deleted_again_and_again(tmp_path: Path) -> None:
    """Each deletion makes the next opener replace the warm index while others are inside it."""
    dc = home_with_mail(tmp_path)
    assert dc.search(Search(query="heron")).count == MESSAGES
    errors = run_beside(dc, lambda: search_index.discard(index_file(dc)))
    assert errors == []
    assert dc.warm[search_index.WARM_KEY].stats["rebuilds"] > 1  # the file really went, and came back


def test_threads_search_while_the_index_goes_bad_and_is_rebuilt(tmp_path: Path) -> None:
    """A thread that meets a foreign file rebuilds the index under the others' feet."""
    dc = home_with_mail(tmp_path)
    assert dc.search(Search(query="heron")).count == MESSAGES

    def spoil() -> None:
        idx = dc.warm.get(search_index.WARM_KEY)
        if idx is not None:
            with idx.lock, contextlib.suppress(sqlite3.ProgrammingError):  # closed meanwhile: spoil the next
                idx.conn.execute("DELETE FROM docs")  # the full-text rows now name messages it has no row for

    # a search rebuilds once: one whose new index was spoiled too before it answered says so,
    # as a bad index (the spoiler's doing); never as a connection closed beneath it
    errors = run_beside(dc, spoil, seconds=1.0,
                        tolerated=lambda e: isinstance(e, sqlite3.Error) and search_index.unusable(e))
    assert errors == []
    assert dc.warm[search_index.WARM_KEY].stats["rebuilds"] > 1


def test_a_retired_index_is_closed_by_its_last_user_not_under_it(tmp_path: Path) -> None:
    """Deterministic: one thread is inside the index when another finds its file gone."""
    dc = home_with_mail(tmp_path)
    assert dc.search(Search(query="heron")).count == MESSAGES
    ctx = dc._ctx()
    with search_open.held(ctx) as inside:
        search_index.discard(index_file(dc))
        other: list[int] = []
        t = threading.Thread(target=lambda: other.append(dc.search(Search(query="heron")).count))
        t.start()
        t.join(10)
        assert other == [MESSAGES]  # it did not wait for this thread to leave
        assert inside.conn.execute("SELECT count(*) FROM docs").fetchone() == (MESSAGES,)  # still open here
        assert not inside.closed
    assert inside.closed  # its last user closed it on the way out
    with search_open.held(ctx) as now:
        assert now is not inside and not now.closed


def test_a_search_whose_index_is_deleted_beneath_every_attempt_answers_from_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Something deletes the cache inside every attempt: the answer still comes, from the letters."""
    from dovecote.ops.search import query as search_op

    dc = home_with_mail(tmp_path)
    real_sync = search_op.sync
    attempts: list[Path | None] = []

    def yanking_sync(ctx: Any, idx: search_index.SearchIndex, *a: Any, **k: Any) -> None:
        attempts.append(idx.path)
        real_sync(ctx, idx, *a, **k)
        if idx.path is not None:
            search_index.discard(idx.path)  # deleted beneath the open connection, mid-answer
            idx.conn.execute("INSERT INTO meta(key, value) VALUES ('x', 'y')")  # SQLite notices

    monkeypatch.setattr(search_op, "sync", yanking_sync)
    answer = builtins(dc.search(Search(query="heron")))
    assert attempts[:-1] == [index_file(dc)] * search_op._ATTEMPTS and attempts[-1] is None
    monkeypatch.setattr(search_op, "sync", real_sync)
    assert answer["count"] == MESSAGES
    assert answer == builtins(dc.search(Search(query="heron")))  # the same answer the file index (back again) gives


def test_an_index_file_gone_before_its_inode_is_read_is_never_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file went between SQLite opening it and the look at its inode: the next search opens anew."""
    dc = home_with_mail(tmp_path)
    assert dc.search(Search(query="heron")).count == MESSAGES
    ctx = dc._ctx()
    real_connect = search_open.connect

    def connect_then_delete(path: Path | None) -> tuple[sqlite3.Connection, bool]:
        made = real_connect(path)
        if path is not None:
            search_index.discard(path)
        return made

    search_index.discard(index_file(dc))
    monkeypatch.setattr(search_open, "connect", connect_then_delete)
    gone = search_open.open_index(ctx)
    monkeypatch.setattr(search_open, "connect", real_connect)
    assert gone.path == index_file(dc) and not index_file(dc).exists()
    assert search_open.moved(gone)
    again = search_open.open_index(ctx)
    assert again is not gone and index_file(dc).exists()
    assert dc.search(Search(query="heron")).count == MESSAGES

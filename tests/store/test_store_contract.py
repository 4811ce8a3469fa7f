"""What every store promises (``store.Store``), run against each backend.

PostgreSQL is the third backend, each test on a schema of its own (``pghelpers``). Torn and
malformed lines on disk are the file store's own trouble and are tested on it
alone; everything else holds for every store.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec
import orjson
import pytest

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.addresses import HOME, Address
from dovecote.model.letters import canonical_line, letter_id
from dovecote.model.results import builtins
from dovecote.roster import config as roster_mod
from dovecote.roster.home import Layout
from dovecote.store.core import Cursor, Mark, Store, Where
from dovecote.store.files import FileStore
from dovecote.store.memory import MemoryStore
from dovecote.store.postgres.store import PostgresStore
from dovecote.verbs import EntityAdd, Inbox, Message, Sweep
from helpers import add_project, new_home
from pghelpers import schema

KINDS = ("file", "memory", "postgres")
BOX = Address("entity", "ent_a")


def line(**obj: object) -> bytes:
    return canonical_line({"ts": "2026-07-05T10:00:00Z", "agent": "probe", **obj})


@dataclass
class StoreCase:
    """One backend: a store over a home, another handle on the same ledgers, and a way to replace a box."""

    kind: str
    store: Store
    other: Callable[[], Store]
    replace: Callable[[Where, Sequence[bytes]], None]
    root: Path
    url: str = ""


@pytest.fixture(params=KINDS)
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreCase]:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    add_project(dc, tmp_path, "gone", exists=False, box_in_repo=True)
    roster = dc.roster
    if request.param == "file":
        fs = FileStore(dc.layout, roster)

        def replace_file(where: Where, lines: Sequence[bytes]) -> None:
            path = fs.path(where)
            assert path is not None
            tmp = path.with_name("replacement")
            tmp.write_bytes(b"".join(ln + b"\n" for ln in lines))
            os.replace(tmp, path)  # another file in its place: a restore, a checkout

        yield StoreCase("file", fs, lambda: FileStore(Layout(dc.layout.root), roster), replace_file, dc.layout.root)
    elif request.param == "memory":
        ms = MemoryStore(roster)
        yield StoreCase("memory", ms, lambda: ms.for_roster(roster), ms.replace, dc.layout.root)
    else:
        with schema() as url:
            opened: list[PostgresStore] = [PostgresStore(url, roster)]

            def other() -> PostgresStore:  # a cold handle: its own pool, nothing warm
                opened.append(PostgresStore(url, roster))
                return opened[-1]

            try:
                yield StoreCase("postgres", opened[0], other, opened[0].replace, dc.layout.root, url)
            finally:
                for st in opened:
                    st.close()


def ids(letters: Sequence[object]) -> list[str]:
    return [getattr(x, "id") for x in letters]  # noqa: B009


# -- append ---------------------------------------------------------------------


def test_append_is_durable_and_idempotent(case: StoreCase) -> None:
    a, b = line(what="a"), line(what="b")
    assert case.store.append(BOX, [a, b]) == [(letter_id(a), True), (letter_id(b), True)]
    assert case.store.append(BOX, [a]) == [(letter_id(a), False)], "a replay appends nothing"
    seen = case.other().read(BOX)  # another handle, cold: what was acknowledged is there
    assert ids(seen.letters) == [letter_id(a), letter_id(b)]
    assert seen.exists and set(seen.index) == {letter_id(a), letter_id(b)}


def test_batch_append_dedups_within_the_batch_and_against_the_box(case: StoreCase) -> None:
    a, b, c = line(what="a"), line(what="b"), line(what="c")
    case.store.append(BOX, [a])
    got = case.store.append(BOX, [b, a, c, b])
    assert got == [(letter_id(b), True), (letter_id(a), False), (letter_id(c), True), (letter_id(b), False)]
    assert ids(case.store.read(BOX).letters) == [letter_id(x) for x in (a, b, c)]


def test_a_line_with_a_newline_is_refused_and_nothing_is_written(case: StoreCase) -> None:
    with pytest.raises(ValueError):
        case.store.append(BOX, [line(what="ok"), b'{"a":1}\n{"b":2}'])
    assert list(case.store.read(BOX).letters) == []


def test_a_line_that_is_not_a_letter_is_reported_never_read_as_one(case: StoreCase) -> None:
    ((_, appended),) = case.store.append(BOX, [b"not json"])
    r = case.other().read(BOX)
    assert appended and list(r.letters) == []
    assert [(d.line, d.kind) for d in r.defects] == [(1, "malformed")]


# -- reads and cursors ----------------------------------------------------------


def test_a_missing_box_reads_as_zero(case: StoreCase) -> None:
    r = case.store.read(BOX)
    assert (list(r.letters), r.exists, r.torn, r.defects) == ([], False, None, [])
    assert case.store.reachable(BOX)


def test_read_after_a_cursor_returns_only_what_came_after(case: StoreCase) -> None:
    a, b, c = line(what="a"), line(what="b"), line(what="c")
    case.store.append(BOX, [a])
    first = case.store.read(BOX)
    assert first.fresh and ids(first.letters) == [letter_id(a)]
    case.store.append(BOX, [b, c])
    case.store.append(BOX, [a])  # a duplicate is not news
    later = case.store.read(BOX, after=first.cursor)
    assert not later.fresh and later.generation == first.generation
    assert ids(later.letters) == [letter_id(b), letter_id(c)]
    assert letter_id(a) in later.index, "the index still holds the whole box"
    again = case.store.read(BOX, after=later.cursor)
    assert (list(again.letters), again.fresh, again.cursor) == ([], False, later.cursor)


def test_every_cursor_handed_out_resumes_exactly_there(case: StoreCase) -> None:
    cursors: list[tuple[Cursor, int]] = [(case.store.read(BOX).cursor, 0)]
    for n in range(1, 6):
        case.store.append(BOX, [line(what=str(i)) for i in range(n * (n - 1) // 2, n * (n + 1) // 2)])
        cursors.append((case.store.read(BOX).cursor, n * (n + 1) // 2))
    total = len(case.store.read(BOX).letters)
    for cursor, count in cursors:
        r = case.store.read(BOX, after=cursor)
        assert not r.fresh and len(r.letters) == total - count


def test_a_cursor_the_store_did_not_hand_out_reads_everything_fresh(case: StoreCase) -> None:
    case.store.append(BOX, [line(what="a"), line(what="b")])
    mine = case.store.read(BOX)
    for foreign in (Cursor(mine.generation + 7, 0), Cursor(mine.generation, 3), Cursor(mine.generation, 10**9)):
        r = case.store.read(BOX, after=foreign)
        assert r.fresh and len(r.letters) == 2, foreign


def test_a_replaced_box_changes_its_generation(case: StoreCase) -> None:
    a, b, c = line(what="a"), line(what="b"), line(what="c")
    case.store.append(BOX, [a, b])
    before = case.store.read(BOX)
    case.replace(BOX, [c])
    after = case.store.read(BOX, after=before.cursor)
    assert after.generation != before.generation and after.cursor.generation == after.generation
    assert after.fresh and ids(after.letters) == [letter_id(c)], "the whole new box, for the caller to start over"
    assert set(after.index) == {letter_id(c)}
    case.store.append(BOX, [a])
    assert ids(case.store.read(BOX, after=after.cursor).letters) == [letter_id(a)]


# -- boxes the roster decides -----------------------------------------------------


def test_a_project_the_roster_does_not_know_has_no_box(case: StoreCase) -> None:
    nowhere = Address("project", "nowhere")
    assert not case.store.reachable(nowhere)
    assert not case.store.read(nowhere).exists
    for write in (lambda: case.store.append(nowhere, [line()]), lambda: case.store.guarded(nowhere).__enter__()):
        with pytest.raises(Refusal) as e:
            write()
        assert e.value.reason == "unknown_box"


def test_a_box_in_an_absent_repository_is_named_unreachable_and_refuses_writes(case: StoreCase) -> None:
    gone = Address("project", "gone")
    assert not case.store.reachable(gone)
    with pytest.raises(Refusal) as e:
        case.store.append(gone, [line()])
    assert e.value.reason == "unknown_box"
    assert "gone" in case.store.location(gone)


def test_the_spool_home_and_projects_are_separate_boxes(case: StoreCase) -> None:
    boxes: list[Where] = ["spool", HOME, Address("project", "repo-a"), Address("project", "REPO-A"), BOX]
    for i, where in enumerate(boxes):
        case.store.append(where, [line(what=f"in {i}")])
    counts = [len(case.store.read(w).letters) for w in boxes]
    assert counts == [1, 1, 2, 2, 1], "a project is one box whatever the case of its name"


# -- guarded compare-and-swap ------------------------------------------------------


def test_a_guard_holds_what_was_read_under_the_lock(case: StoreCase) -> None:
    case.store.append(BOX, [line(what="a")])
    warm = case.store.read(BOX)
    other = case.other()
    other.append(BOX, [line(what="b")])  # written behind the warm store's back
    with case.store.guarded(BOX) as g:
        assert [x.id for x in g.letters] == [*ids(warm.letters), letter_id(line(what="b"))]
        since = g.read(warm.cursor)
        assert not since.fresh and ids(since.letters) == [letter_id(line(what="b"))]
        assert g.append([line(what="c"), line(what="a")]) == [
            (letter_id(line(what="c")), True), (letter_id(line(what="a")), False)
        ]
        assert len(g.letters) == 3 and g.cursor == g.read().cursor, "the holder sees its own append"
    assert case.store.read(BOX, after=warm.cursor).letters[-1].id == letter_id(line(what="c"))


ROUNDS = 12
WORKERS = 4


def _count_up(store: Store, who: int) -> None:
    """Append the next number, as a compare-and-swap: without the lock two workers take the same one."""
    for _ in range(ROUNDS):
        with store.guarded(BOX) as g:
            n = len(g.letters)
            time.sleep(0.002)  # widen the window between the read and the write
            ((_, appended),) = g.append([line(n=n)])
            assert appended, f"worker {who} took {n}, already taken"


def _count_up_in_a_process(root: str, who: int, url: str) -> None:
    layout = Layout(Path(root))
    roster = roster_mod.load(layout.config)
    store: Store = PostgresStore(url, roster, pool_size=1) if url else FileStore(layout, roster)
    _count_up(store, who)


def test_guarded_writes_are_a_compare_and_swap_under_real_concurrency(case: StoreCase) -> None:
    """Threads share the memory store; processes share the files, or the database."""
    if case.kind != "memory":
        ctx = mp.get_context("fork")
        args = [(str(case.root), w, case.url) for w in range(WORKERS)]
        procs = [ctx.Process(target=_count_up_in_a_process, args=a) for a in args]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0] * WORKERS
    else:
        errors: list[BaseException] = []

        def run(w: int) -> None:
            try:
                _count_up(case.other(), w)
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=run, args=(w,)) for w in range(WORKERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors
    numbers = [orjson.loads(x.raw)["n"] for x in case.store.read(BOX).letters]
    assert numbers == list(range(WORKERS * ROUNDS)), "every number taken once, in order"


# -- the file store's own trouble ---------------------------------------------------


def test_torn_and_malformed_lines_are_reported_and_the_next_append_starts_fresh(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    store = FileStore(dc.layout, dc.roster)
    path = store.path(BOX)
    assert path is not None
    path.parent.mkdir(parents=True)
    a = line(what="a")
    path.write_bytes(a + b"\nnot json\n" + b'{"what":"to')
    r = store.read(BOX)
    assert ids(r.letters) == [letter_id(a)]
    assert [(d.line, d.kind) for d in r.defects] == [(2, "malformed")]
    assert r.torn is not None and r.torn.line == 3
    b = line(what="b")
    store.append(BOX, [b])
    assert path.read_bytes().endswith(b'{"what":"to\n' + b + b"\n"), "the torn tail is fenced off, not extended"
    after = store.read(BOX, after=r.cursor)
    assert ids(after.letters) == [letter_id(b)] and after.torn is None
    assert [(d.line, d.kind) for d in FileStore(dc.layout, dc.roster).read(BOX).defects] == [
        (2, "malformed"), (3, "malformed")
    ]


# -- the handle over a store ----------------------------------------------------------


def test_a_handle_over_the_memory_store_writes_no_ledger(tmp_path: Path) -> None:
    owner = new_home(tmp_path)
    owner.add_entity(EntityAdd(entity_id="ent_a"))
    owner.add_entity(EntityAdd(entity_id="ent_b"))
    store = MemoryStore()
    dc = Dovecote(owner.layout.root, store=store)
    sent = dc.send(Message(recipient="ent_a", sender="ent_b", subject="hello", body="hi", current_tic=1))
    dc.report([{"ts": "2026-07-05T10:00:00Z", "agent": "probe", "tool": "t", "class": "bug", "what": "w"}])
    assert builtins(dc.inbox(Inbox(entity_id="ent_a")))["items"][0]["id"] == sent.id
    assert not dc.layout.boxes.exists() and not dc.layout.spool.exists()
    cold = Dovecote(owner.layout.root, store=store)  # a second handle on the same store sees it all
    assert builtins(cold.inbox(Inbox(entity_id="ent_a")))["items"][0]["id"] == sent.id
    assert cold.sweep(Sweep(distribute=False)).to_dict()["total"] == 1
    assert Dovecote(owner.layout.root).inbox(Inbox(entity_id="ent_a")).items == [], "the files never saw it"


# -- marks: cursors that outlive the process ---------------------------------------


def test_a_tail_from_no_mark_is_the_whole_box_and_its_mark_resumes_exactly_there(case: StoreCase) -> None:
    a, b, c = line(what="a"), line(what="b"), line(what="c")
    case.store.append(BOX, [a, b])
    whole = case.store.tail(BOX)
    assert whole.fresh and ids(whole.letters) == [letter_id(a), letter_id(b)]
    case.store.append(BOX, [c])
    later = case.store.tail(BOX, whole.mark)
    assert not later.fresh and ids(later.letters) == [letter_id(c)]
    assert ids(case.store.tail(BOX, later.mark).letters) == [], "nothing new: nothing read"
    assert list(case.store.read(BOX).index) == [letter_id(x) for x in (a, b, c)], "the store's own reads stay whole"


def test_a_mark_survives_an_encode_decode_round_trip(case: StoreCase) -> None:
    case.store.append(BOX, [line(what="a")])
    mark = case.store.tail(BOX).mark
    back = msgspec.msgpack.decode(msgspec.msgpack.encode(mark), type=Mark)
    case.store.append(BOX, [line(what="b")])
    assert ids(case.other().tail(BOX, back).letters) == [letter_id(line(what="b"))], "another handle resumes it"


def test_a_mark_on_a_replaced_box_reads_the_whole_new_box(case: StoreCase) -> None:
    a, b, c = line(what="a"), line(what="b"), line(what="c")
    case.store.append(BOX, [a, b])
    mark = case.store.tail(BOX).mark
    case.replace(BOX, [c, a])
    again = case.store.tail(BOX, mark)
    assert again.fresh and ids(again.letters) == [letter_id(c), letter_id(a)]


def test_a_mark_from_another_store_or_a_forged_one_is_not_trusted(case: StoreCase) -> None:
    case.store.append(BOX, [line(what="a"), line(what="b")])
    for forged in (Mark("elsewhere", 10, 1, 1, "x"), Mark(case.store.tail(BOX).mark.origin, 10**9, 5, 7, "bad")):
        got = case.store.tail(BOX, forged)
        assert got.fresh and len(got.letters) == 2


def test_a_guard_tails_under_its_lock(case: StoreCase) -> None:
    a, b = line(what="a"), line(what="b")
    case.store.append(BOX, [a])
    mark = case.store.tail(BOX).mark
    with case.store.guarded(BOX) as g:
        g.append([b])
        got = g.tail(mark)
    assert ids(got.letters) == [letter_id(b)] and not got.fresh


def test_a_missing_box_tails_as_empty(case: StoreCase) -> None:
    got = case.store.tail(BOX)
    assert list(got.letters) == [] and not got.exists


def test_a_file_mark_fails_when_the_bytes_before_it_are_rewritten(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    fs = FileStore(dc.layout, dc.roster)
    a, b = line(what="aaaa"), line(what="bbbb")
    fs.append(BOX, [a])
    mark = fs.tail(BOX).mark
    path = fs.path(BOX)
    assert path is not None
    path.write_bytes(line(what="zzzz") + b"\n")  # same size, same inode, other bytes
    got = fs.tail(BOX, mark)
    assert got.fresh and ids(got.letters) == [letter_id(line(what="zzzz"))]
    fs.append(BOX, [b])

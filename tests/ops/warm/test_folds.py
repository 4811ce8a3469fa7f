"""The warm-fold registry and the persisted inbox folds.

* Restoring is folding: a book snapshotted after any prefix of a box's letters,
  restored and fed the rest, answers exactly what a book fed every letter
  answers (hypothesis, random splits, repeated lines, orphans and drafts).
* A cold process answers from ``cache/folds`` and reads only what is new; a
  snapshot that is garbage, of another version or roster, or whose ledger was
  rewritten, is ignored; a symlinked cache is never followed.
* One handle serves many threads: inbox reads and transitions from 8 threads
  at once end where a cold read of the same ledger ends.
"""

from __future__ import annotations

import os
import shutil
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.derive.inbox import snapshot as inbox_snapshot
from dovecote.derive.inbox.book import Clock, InboxBook
from dovecote.derive.inbox.view import inbox_audit
from dovecote.handle.api import Dovecote, open_home
from dovecote.model.letters import Letter, make_letter
from dovecote.model.results import builtins
from dovecote.ops.mail.wait import cursor_of, cursor_text
from dovecote.roster.config import Limits
from dovecote.store.memory import MemoryStore
from dovecote.verbs import EntityAdd, Inbox, Move
from inboxhelpers import _ITEM, at, letters_of
from mailhelpers import ENTITY, SENDER, mail_home, send

NOW = datetime(2026, 7, 8, tzinfo=UTC)


def _extras(letters: list[Letter], n: int) -> list[Letter]:
    """Drafts, their sent records and a reply: the other letters the book folds."""
    out: list[Letter] = []
    for k in range(n):
        d = make_letter({"ts": at(k), "agent": ENTITY, "kind": "draft", "n": k,
                         "recipient": {"entity_id": SENDER}, "content": {"subject": f"draft {k}", "body": "b"}})
        out.append(d)
        if k % 2:
            out.append(make_letter({"ts": at(k + 1), "agent": ENTITY, "kind": "sent", "message": f"m{k}",
                                    "ref": d.id, "to": SENDER}))
    return out


def answers(book: InboxBook, tic: int | None, include_terminal: bool) -> list[Any]:
    """What every face reads of a book: its views at two instants, its drafts, each item's replay."""
    out: list[Any] = []
    for now in (NOW, NOW + timedelta(days=3)):
        out.append(inbox_audit(book, Clock(tic, now), limits=Limits(), include_terminal=include_terminal)[0])
    out.append([d.id for d in book.pending_drafts()])
    for iid in sorted(book.items):
        r = book.replay_of(book.items[iid])
        out.append((iid, str(r.state), r.head, r.seen, [lk.id for lk in r.applied],
                    [(lk.id, why) for lk, why in r.conflicts], [lk.id for lk in book.items[iid].links]))
    out.append(sorted(book.alias.items()))
    out.append(cursor_of(book.count, book.last))  # the box's cursor, counted by the fold
    return out


@settings(max_examples=120, deadline=None)
@given(
    specs=st.lists(_ITEM, min_size=0, max_size=6),
    drafts=st.integers(min_value=0, max_value=3),
    tic=st.sampled_from([None, 7]),
    include_terminal=st.booleans(),
    data=st.data(),
)
def test_a_restored_book_fed_the_rest_answers_like_one_fed_everything(
    specs: list[dict[str, Any]], drafts: int, tic: int | None, include_terminal: bool, data: st.DataObject
) -> None:
    letters, _ = letters_of(specs)
    notes = [make_letter({"ts": at(k), "agent": ENTITY, "kind": "note", "n": k}) for k in range(data.draw(
        st.integers(min_value=0, max_value=2)))]  # letters of a kind the book does not fold still move the cursor
    letters = data.draw(st.permutations([*letters, *_extras(letters, drafts), *notes]))  # links may come first
    split = data.draw(st.integers(min_value=0, max_value=len(letters)))
    again = data.draw(st.lists(st.sampled_from(letters), max_size=3)) if letters else []  # lines read twice
    viewed = data.draw(st.booleans())

    full = InboxBook(ENTITY)
    full.add(letters)
    head = InboxBook(ENTITY)
    head.add(letters[:split])
    if viewed:  # the snapshot then carries a view, its rows ready
        inbox_audit(head, Clock(tic, NOW), limits=Limits(), include_terminal=include_terminal)
    data_bytes = inbox_snapshot.dumps(head)
    restored = inbox_snapshot.loads(data_bytes)
    assert inbox_snapshot.dumps(restored) == data_bytes  # untouched items are written back as they were
    restored.add([*letters[split:], *again])  # a resumed read cannot know the ids before its mark
    assert answers(restored, tic, include_terminal) == answers(full, tic, include_terminal)
    assert cursor_of(restored.count, restored.last) == cursor_text(letters)  # what a whole read of the box says


# -- the snapshot files ---------------------------------------------------------------

def snap_path(dc: Dovecote, entity: str = ENTITY) -> Path:
    return dc.layout.cache / "folds" / f"entity:{entity}.msgpack"


def read(dc: Dovecote) -> bytes:
    v = Inbox(entity_id=ENTITY, current_tic=120, include_terminal=True, direction="both")
    return orjson.dumps(builtins(dc.inbox(v, now=NOW)))


def filled(tmp: Path, n: int = 6) -> Dovecote:
    dc = mail_home(tmp)
    for k in range(n):
        send(dc, f"subject {k}", priority="high" if k % 2 else "normal")
    item = builtins(dc.inbox(Inbox(entity_id=ENTITY), now=NOW))["items"][0]["id"]
    dc.move(Move(kind="claim", entity_id=ENTITY, ref=item), now=NOW)
    return dc


def fresh_answer(dc: Dovecote) -> bytes:
    """The answer folded from nothing: a new handle on the home with no cache."""
    folder = dc.layout.cache / "folds"
    saved = {p: p.read_bytes() for p in folder.glob("*")} if folder.is_dir() else {}
    for p in saved:
        p.unlink()
    try:
        return read(open_home(dc.layout.root))
    finally:
        for p, b in saved.items():
            p.write_bytes(b)


def counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    fed: list[int] = []
    real = InboxBook.add

    def add(self: InboxBook, letters: Any) -> None:
        letters = list(letters)
        fed.append(len(letters))
        real(self, letters)

    monkeypatch.setattr(InboxBook, "add", add)
    return fed


def test_a_cold_handle_answers_from_the_snapshot_reading_only_what_is_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dc = filled(tmp_path)
    read(dc)
    assert snap_path(dc).is_file()
    other = open_home(dc.layout.root)
    item = builtins(other.inbox(Inbox(entity_id=ENTITY), now=NOW))["items"][-1]["id"]
    other.move(Move(kind="seen", entity_id=ENTITY, ref=item), now=NOW)  # one new letter behind the snapshot
    fed = counting(monkeypatch)
    cold = read(open_home(dc.layout.root))
    assert fed == [1]  # the snapshot, then the one letter after its mark
    monkeypatch.undo()
    assert cold == fresh_answer(dc)


def test_a_book_folded_from_nothing_is_replaced_by_its_snapshot_decoded(tmp_path: Path) -> None:
    """After the read that folded the box from nothing and wrote the snapshot, the handle keeps the
    snapshot's book (its rows packed until read, laid out together), and answers as before, as a cold
    handle does, and as a fold from nothing does after one more letter."""
    from dovecote.model.addresses import entity
    from dovecote.ops.warm import inbox as foldcache

    def book(dc: Dovecote) -> InboxBook:
        return dc.context.warm.entry(entity(ENTITY)).folds[foldcache.INBOX].fold  # no read: the handle's own

    dc = filled(tmp_path)
    shutil.rmtree(dc.layout.cache / "folds")
    warm = open_home(dc.layout.root)
    first = read(warm)  # folded from nothing: the snapshot is written, and decoded in the fold's place
    assert snap_path(warm).is_file()
    vs = book(warm).view_state
    assert vs is not None and vs.rows
    assert not any(isinstance(held, dict) for _, held, _ in vs.rows.values())  # still packed: the snapshot's
    assert read(warm) == first == read(open_home(dc.layout.root))
    item = builtins(warm.inbox(Inbox(entity_id=ENTITY), now=NOW))["items"][-1]["id"]
    warm.move(Move(kind="seen", entity_id=ENTITY, ref=item), now=NOW)
    assert read(warm) == fresh_answer(warm) != first


@pytest.mark.parametrize("spoil", ["garbage", "truncated", "version", "entity", "roster", "rewritten"])
def test_a_snapshot_that_cannot_be_trusted_is_ignored(tmp_path: Path, spoil: str) -> None:
    dc = filled(tmp_path)
    read(dc)
    path = snap_path(dc)
    data = path.read_bytes()
    if spoil == "garbage":
        path.write_bytes(b"\x00not a snapshot" * 10)
    elif spoil == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif spoil in ("version", "entity"):
        from dovecote.ops.warm import inbox as foldcache

        size = int.from_bytes(data[:4], "little")
        head = foldcache._decode_head(data[4 : 4 + size])
        head = foldcache.Head(head.version + 1, head.roster, head.entity, head.mark, head.view_key) \
            if spoil == "version" else foldcache.Head(head.version, head.roster, "ent_other", head.mark, "")
        new = foldcache._encode(head)
        path.write_bytes(len(new).to_bytes(4, "little") + new + data[4 + size :])
    elif spoil == "roster":
        dc.add_entity(EntityAdd(entity_id="ent_late"))  # another roster: the snapshot was folded for the old one
    else:  # the ledger rewritten in place, same size: the mark's check fails
        ledger = dc.layout.entity_box(ENTITY)
        raw = ledger.read_bytes()
        ledger.write_bytes(raw.replace(b"subject 5", b"subject X"))  # within the window the mark hashes
    got = read(open_home(dc.layout.root))
    assert got == fresh_answer(dc)
    if spoil == "rewritten":
        assert b"subject X" in got


def test_a_symlinked_fold_cache_is_never_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dc = filled(tmp_path)
    real = snap_path(dc).read_bytes()
    shutil.rmtree(dc.layout.cache / "folds")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, dc.layout.cache / "folds")
    first = read(open_home(dc.layout.root))
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    (elsewhere / f"entity:{ENTITY}.msgpack").write_bytes(real)
    loaded: list[int] = []
    monkeypatch.setattr(inbox_snapshot, "loads", lambda data: loaded.append(1))
    assert read(open_home(dc.layout.root)) == first
    assert loaded == []  # the planted snapshot was never read


def test_a_memory_store_writes_no_snapshot(tmp_path: Path) -> None:
    home = mail_home(tmp_path).layout.root
    dc = Dovecote(home, store=MemoryStore())
    send(dc, "in memory")
    read(dc)
    assert not (dc.layout.cache / "folds").exists()


def test_a_read_that_changed_nothing_writes_nothing(tmp_path: Path) -> None:
    dc = filled(tmp_path)
    read(dc)
    before = snap_path(dc).stat().st_mtime_ns, snap_path(dc).read_bytes()
    snap_path(dc).chmod(0o444)
    for _ in range(3):
        read(open_home(dc.layout.root))
        read(dc)
    assert (snap_path(dc).stat().st_mtime_ns, snap_path(dc).read_bytes()) == before


# -- one handle, many threads ------------------------------------------------------------

def test_one_handle_serves_eight_threads_reading_and_transitioning(tmp_path: Path) -> None:
    dc = mail_home(tmp_path, ENTITY, SENDER)
    for k in range(24):
        send(dc, f"work {k}", recipient=ENTITY if k % 2 else SENDER, sender=SENDER if k % 2 else ENTITY)
    items = {e: [r["id"] for r in builtins(dc.inbox(Inbox(entity_id=e), now=NOW))["items"]] for e in (ENTITY, SENDER)}
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def mover(entity: str, mine: list[str]) -> None:
        start.wait()
        for iid in mine:
            dc.move(Move(kind="seen", entity_id=entity, ref=iid), now=NOW)
            dc.move(Move(kind="claim", entity_id=entity, ref=iid), now=NOW)

    def reader(entity: str) -> None:
        start.wait()
        for _ in range(30):
            view = builtins(dc.inbox(Inbox(entity_id=entity), now=NOW))
            assert sum(view["counts"][b] for b in ("inbound", "processing")) == 12

    def guard(fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except BaseException as e:  # reported below, with every other thread's
            errors.append(e)

    threads = [threading.Thread(target=guard, args=(mover, e, items[e][k::2])) for e in items for k in (0, 1)]
    threads += [threading.Thread(target=guard, args=(reader, e)) for e in items for _ in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread is stuck (a lock order broken?)"
    assert errors == []
    for e in items:
        warm = builtins(dc.inbox(Inbox(entity_id=e), now=NOW))
        assert warm == builtins(open_home(dc.layout.root).inbox(Inbox(entity_id=e), now=NOW))
        assert warm["counts"]["processing"] == 12


def test_verify_answers_every_inbox_from_its_snapshot_and_catches_a_lying_one(tmp_path: Path) -> None:
    from dovecote.ops.warm import inbox as foldcache

    dc = filled(tmp_path)
    result = dc.verify(now=NOW)
    assert result.ok and f"inbox {ENTITY} --all, from its snapshot" in result.checked
    read(dc)
    loaded = foldcache.load_inbox(dc.context, ENTITY)
    assert loaded is not None
    book, mark = loaded
    book.items.pop(next(iter(book.items)))  # a snapshot that forgot an item, its mark still good
    foldcache.save(dc.context, book, mark)
    result = open_home(dc.layout.root).verify(now=NOW)
    assert not result.ok
    assert f"inbox {ENTITY} --all" in [d["read"] for d in result.differ]


def test_verify_reads_the_hooks_block_from_the_snapshot_and_catches_lying_lines(tmp_path: Path) -> None:
    from dovecote.ops.warm import inbox as foldcache

    dc = filled(tmp_path)
    text, _ = dc.injection_until(Inbox(entity_id=ENTITY), now=NOW)  # the hook's read leaves its view in the snapshot
    assert open_home(dc.layout.root).verify(now=NOW).ok
    loaded = foldcache.load_inbox(dc.context, ENTITY)
    assert loaded is not None and loaded[0].view_state is not None
    book, mark = loaded
    rows = book.view_state.rows  # type: ignore[union-attr]
    iid, (order, row, lines) = next((k, v) for k, v in rows.items() if v[2][1] is not None)
    rows[iid] = (order, row, (lines[0], "  - [ACTIVE] a line no row says", lines[2]))  # rows right, a line wrong
    foldcache.save(dc.context, book, mark)
    assert open_home(dc.layout.root).injection_until(Inbox(entity_id=ENTITY), now=NOW)[0] != text
    result = open_home(dc.layout.root).verify(now=NOW)
    assert not result.ok
    assert [d["read"] for d in result.differ] == [f"inbox {ENTITY} --format injection, from its snapshot"]


def test_a_tic_less_hook_after_one_new_letter_does_not_write_the_snapshot_again(tmp_path: Path) -> None:
    """A session-start hook reads with no tic: its view holds only until some row's age
    ticks over (seconds, in a big box). Writing the whole book again for it on every
    call was the hook's slow path (16 MB and 200x ``python -c pass`` at 10,000 messages)."""
    from dovecote.util.timeutil import parse_time
    from dovecote.verbs import Message

    dc = filled(tmp_path)
    born = parse_time(builtins(dc.inbox(Inbox(entity_id=ENTITY), now=NOW))["items"][0]["created_at"])
    assert born is not None
    hour = timedelta(hours=1)
    open_home(dc.layout.root).hook("session-start", ENTITY, {"session_id": "s1"}, now=born + hour * 1.1)
    before = snap_path(dc).stat().st_mtime_ns, snap_path(dc).read_bytes()
    new = dc.send(Message(recipient=ENTITY, sender=SENDER, subject="one more", body="b", priority="urgent"),
                  now=born + hour * 1.2).id
    later = born + hour * 2.1  # the snapshot's view is stale; the one rebuilt holds until the new row turns 1 hour old
    told = open_home(dc.layout.root).hook("session-start", ENTITY, {"session_id": "s2"}, now=later)
    assert new in told.announce and "one more" in told.stdout
    assert (snap_path(dc).stat().st_mtime_ns, snap_path(dc).read_bytes()) == before
    shutil.rmtree(dc.layout.cache / "folds")  # and the answer is the one folded from nothing
    again = open_home(dc.layout.root).hook("session-start", ENTITY, {"session_id": "s3"}, now=later)
    assert again.stdout == told.stdout

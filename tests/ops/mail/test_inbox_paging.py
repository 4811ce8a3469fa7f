"""An inbox a page at a time (``derive.inbox.paging``): the pages put together are the inbox, in its order; a
row that moves out while a person pages neither repeats a row nor skips one; a cursor that was not written by
a page is ``invalid_field``."""

from __future__ import annotations

from pathlib import Path

import pytest

from dovecote.errors import Refusal
from dovecote.model.results import builtins
from dovecote.verbs import Inbox, Move
from mailhelpers import ENTITY, mail_home, send

pytestmark = pytest.mark.files_only


def _pages(dc, limit: int, states: tuple[str, ...] = ()) -> list[list[str]]:  # type: ignore[no-untyped-def]
    pages, after = [], None
    while True:
        page = dc.inbox_page(ENTITY, after=after, limit=limit, states=states)
        pages.append([r["id"] for r in page.items])
        if page.next is None:
            return pages
        after = page.next


def test_the_pages_put_together_are_the_inbox_in_its_order(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    for i in range(11):
        send(dc, f"letter {i}", priority=("urgent", "normal", "low")[i % 3], current_tic=100 + i)
    whole = [r["id"] for r in builtins(dc.inbox(Inbox(entity_id=ENTITY)))["items"]]
    pages = _pages(dc, 4)
    assert [len(p) for p in pages] == [4, 4, 3]
    assert [i for p in pages for i in p] == whole
    first = dc.inbox_page(ENTITY, limit=4)
    assert first.counts == builtins(dc.inbox(Inbox(entity_id=ENTITY)))["counts"]


def test_a_row_moved_out_meanwhile_neither_repeats_nor_skips_one(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    ids = [send(dc, f"letter {i}", current_tic=100 + i) for i in range(9)]
    first = dc.inbox_page(ENTITY, limit=3)
    shown = [r["id"] for r in first.items]
    for kind in ("seen", "nack"):  # the last row shown leaves the view: the cursor is its order, not its place
        dc.move(Move(kind=kind, entity_id=ENTITY, ref=shown[-1], current_tic=120))
    rest = dc.inbox_page(ENTITY, after=first.next, limit=10)
    assert shown + [r["id"] for r in rest.items] == ids
    for kind in ("seen", "nack"):  # a row of an earlier page leaves: the next page is unchanged
        dc.move(Move(kind=kind, entity_id=ENTITY, ref=shown[0], current_tic=120))
    assert [r["id"] for r in dc.inbox_page(ENTITY, after=first.next, limit=10).items] == ids[3:]


def test_a_state_filter_pages_its_own_rows(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    ids = [send(dc, f"letter {i}", current_tic=100 + i) for i in range(6)]
    for ref in ids[::2]:
        dc.move(Move(kind="claim", entity_id=ENTITY, ref=ref, current_tic=110))
    assert _pages(dc, 2, ("ACTIVE",)) == [ids[0:3:2], ids[4:5]]


@pytest.mark.parametrize("cursor", ["nonsense", "W10", "WzEsMiwzXQ", "eyJhIjoxfQ"])
def test_a_cursor_no_page_wrote_is_invalid_field(tmp_path: Path, cursor: str) -> None:
    dc = mail_home(tmp_path)
    send(dc, "one")
    with pytest.raises(Refusal) as refused:
        dc.inbox_page(ENTITY, after=cursor)
    assert refused.value.reason == "invalid_field" and "after" in refused.value.detail

"""``search``: full text over entity mail, answered from the index in ``ops.search_index``.

The index holds text and identity only; which items are DONE or NACK is
derived at query time from ``book_for`` and handed to SQLite as a temporary
(in-memory, per-connection) table, so a lifecycle move never needs the index
to change and can never be stale in it.

The user's query is plain words: each whitespace-separated token is quoted as
an FTS5 string (``"`` doubled), so operators (``OR``, ``NOT``, ``NEAR(``),
``*``, ``-`` and stray quotes in user input are just words and can neither
break nor widen the query. All words must occur (in any text column).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING, Any

from dovecote.derive.inbox import InboxBook
from dovecote.derive.lifecycle import TERMINAL, effective
from dovecote.errors import Refusal, StoreError
from dovecote.folds import book_for, entity_address
from dovecote.names import entity as entity_addr
from dovecote.ops.search_index import WARM_KEY, SearchIndex, discard, ent_token, open_index, sync, unusable
from dovecote.ops.tics import current_tic

if TYPE_CHECKING:
    from dovecote.context import Context

DEFAULT_LIMIT = 50
_TEXT_COLUMNS = "{subject body attach}"


def fts_query(query: str) -> str:
    """The user's words as an FTS5 expression that can only mean "all these words".

    Tokens without a letter or digit carry nothing searchable and are dropped;
    a query left with no word is refused ``missing_field``.
    """
    words = [w for w in query.split() if any(ch.isalnum() for ch in w)]
    if not words:
        raise Refusal("missing_field", "the search query holds no word to look for")
    return " ".join('"' + w.replace('"', '""') + '"' for w in words)

def _terminal_rows(dc: Context, idx: SearchIndex, entity_id: str, book: InboxBook) -> None:
    """Keep temp.term holding the rowids of the entity's DONE and NACK items (never stored).

    Called right after ``book_for``, so the store's read and the book agree.
    Only items named by letters read since the last call (a new message, a
    link's ``ref``) or rows indexed since then can have changed; a replaced
    ledger, or rows another process wrote, mean one full pass.
    """
    read = dc.store.read(entity_addr(entity_id))
    gen, count = read.generation, len(read.letters)
    have = idx.terminal.get(entity_id)
    fresh = idx.pending.pop(entity_id, set())
    if have is not None and have[0] == gen and have[1] == count and not fresh:
        return
    rowids = idx.rowids.get(entity_id)
    if rowids is None:
        rowids = idx.rowids[entity_id] = dict(
            idx.conn.execute("SELECT id, rowid FROM docs WHERE entity = ?", (entity_id,)).fetchall()
        )
    old = have[2] if have is not None else set()
    if have is None or have[0] != gen or have[1] > count:
        done = {
            rowids[i.id] for i in book.items.values() if i.id in rowids and book.replay_of(i).state in TERMINAL
        }
    else:
        done = set(old)
        for letter in read.letters[have[1]:count]:
            fresh.add(letter.id if letter.kind == "message" else letter.ref or "")
        for iid in fresh:
            rowid = rowids.get(iid)
            item = book.items.get(iid)
            if rowid is None or item is None:
                continue
            if book.replay_of(item).state in TERMINAL:
                done.add(rowid)
            else:
                done.discard(rowid)
    conn = idx.conn
    conn.executemany("DELETE FROM temp.term WHERE rowid = ?", [(r,) for r in old - done])
    conn.executemany("INSERT OR IGNORE INTO temp.term(rowid) VALUES (?)", [(r,) for r in done - old])
    idx.terminal[entity_id] = (gen, count, done)


def _answer(
    dc: Context,
    idx: SearchIndex,
    query: str,
    match: str,
    entities: list[str],
    entity_id: str | None,
    include_terminal: bool,
    limit: int,
    now: datetime,
) -> dict[str, Any]:
    sync(dc, idx, entities, prune=entity_id is None)
    books = {e: book_for(dc, e) for e in entities}  # after sync: every indexed row is in its book
    if not include_terminal:
        for e, book in books.items():
            _terminal_rows(dc, idx, e, book)
    expr = f"{_TEXT_COLUMNS} : ({match})"
    if entity_id is not None:
        expr = f'ent : "{ent_token(entity_id)}" AND {expr}'
    where = "fts MATCH ?" + ("" if include_terminal else " AND rowid NOT IN (SELECT rowid FROM temp.term)")
    conn = idx.conn
    (count,) = conn.execute(f"SELECT count(*) FROM fts WHERE {where}", (expr,)).fetchone()
    hits = conn.execute(
        f"SELECT rowid, snippet(fts, -1, '**', '**', '…', 12) FROM fts WHERE {where} ORDER BY rowid DESC LIMIT ?",
        (expr, limit),
    ).fetchall()
    meta: dict[int, tuple[str, str, str, str, str]] = {}
    if hits:
        marks = ",".join("?" * len(hits))
        for row in conn.execute(
            f"SELECT rowid, entity, id, ts, subject, sender FROM docs WHERE rowid IN ({marks})", [h[0] for h in hits]
        ):
            meta[row[0]] = row[1:]
    tic, _ = current_tic(dc, None)
    matches: list[dict[str, Any]] = []
    for rowid, snippet in hits:
        ent, lid, ts, subject, sender = meta[rowid]
        found = books.get(ent)
        item = found.items.get(lid) if found is not None else None
        state = str(effective(found.replay_of(item), tic, now)) if found is not None and item is not None else None
        matches.append(
            {"id": lid, "entity": ent, "state": state, "subject": subject, "sender": sender or None,
             "ts": ts or None, "snippet": snippet}
        )
    return {
        "query": query,
        "count": count,
        "limit": limit,
        "truncated": count > len(matches),
        "matches": matches,
    }


def search(
    dc: Context,
    query: str,
    *,
    entity: str | None = None,
    include_terminal: bool = False,
    limit: int = DEFAULT_LIMIT,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Messages whose subject, body or text artifacts hold every word of ``query``.

    Returns ``{query, count, limit, truncated, matches}``: ``count`` is every
    match, ``matches`` the newest ``limit`` of them (newest first by letter
    ``ts``), each ``{id, entity, state, subject, sender, ts, snippet}``. DONE
    and NACK items are left out unless ``include_terminal``.

    Raises ``Refusal``: ``missing_field`` (no word in the query),
    ``unknown_entity``, ``invalid_field`` (a limit below 1).
    """
    if not isinstance(query, str) or not query.strip():
        raise Refusal("missing_field", "give a search query")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise Refusal("invalid_field", "the limit must be a whole number of at least 1")
    match = fts_query(query)
    if entity is not None:
        entity_address(dc, entity)
        entities = [entity]
    else:
        entities = [e.id for e in dc.roster.entities]
    when = now or dc.now()
    idx = open_index(dc)
    with idx.lock:
        try:
            return _answer(dc, idx, query, match, entities, entity, include_terminal, limit, when)
        except sqlite3.DatabaseError as e:
            if not unusable(e):
                raise StoreError(f"the search index {idx.path} failed: {e}") from e
            # the file went bad under us: it is a cache, so rebuild it and answer again
        idx.close()
        discard(idx.path)
        dc.warm.pop(WARM_KEY, None)
    idx = open_index(dc)
    with idx.lock:
        return _answer(dc, idx, query, match, entities, entity, include_terminal, limit, when)

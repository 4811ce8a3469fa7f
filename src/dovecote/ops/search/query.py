"""``search``: full text over entity mail, answered from the index in ``ops.search.index``.

The index keeps each item's lifecycle state beside its text, replayed as the
box is tailed (``ops.search.items``), so which items are DONE or NACK is a
table the query joins against in SQLite: an answer after one new letter reads
that letter and nothing else of the box.

The user's query is plain words, split into index terms by the index's own
tokenizer (``split_words``) and each term quoted as an FTS5 string (``"``
doubled), so operators (``OR``, ``NOT``, ``NEAR(``), ``*``, ``-`` and stray
quotes in user input are just words and can neither break nor widen the query.
Every term must occur (in any text column); a word the tokenizer cuts in two
(``entity_id``, ``don't``) asks for both parts, anywhere: the index keeps
which columns hold a term, not where in them (``detail=column``, a third of
the size of positions).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING

from dovecote.errors import Refusal, StoreError
from dovecote.model.results import Result
from dovecote.ops.reports.tics import current_tic
from dovecote.ops.search import items as search_items
from dovecote.ops.search.index import SearchIndex, Unusable, connect, ent_token, unusable, yanked
from dovecote.ops.search.open import held, moved, spoiled
from dovecote.ops.search.sync import sync
from dovecote.ops.search.texts import split_words
from dovecote.ops.warm.inbox import entity_address

if TYPE_CHECKING:
    from dovecote.ops.context import Context

DEFAULT_LIMIT = 50
#: How many times a search opens the index again when it went bad or its file was replaced under
#: it, before it answers from an index of its own in memory.
_ATTEMPTS = 5
_TEXT_COLUMNS = "{subject body attach}"


def query_words(query: str) -> list[str]:
    """The user's words; tokens without a letter or digit carry nothing searchable and are
    dropped, and a query left with no word is refused ``missing_field``."""
    words = [w for w in query.split() if any(ch.isalnum() for ch in w)]
    if not words:
        raise Refusal("missing_field", "the search query holds no word to look for")
    return words


def fts_query(terms: list[str]) -> str:
    """Index terms as an FTS5 expression that can only mean "all these terms"."""
    return " ".join('"' + t.replace('"', '""') + '"' for t in terms)


class SearchMatch(Result, frozen=True):
    """One message that holds every word: its item's id, entity and state now, subject, sender, ts, and the
    snippet around the words (marked ``**``)."""

    id: str
    entity: str
    state: str | None
    subject: str | None
    sender: str | None
    ts: str | None
    snippet: str


class SearchResult(Result, frozen=True):
    """The query, how many messages match (``count``), the limit, and the newest ``limit`` matches."""

    query: str
    count: int
    limit: int
    truncated: bool
    matches: list[SearchMatch]


def _answer(
    ctx: Context,
    idx: SearchIndex,
    query: str,
    words: list[str],
    entities: list[str],
    entity_id: str | None,
    include_terminal: bool,
    limit: int,
    now: datetime,
) -> SearchResult:
    sync(ctx, idx, entities, prune=entity_id is None)
    terms = split_words(idx.conn, words)
    if not terms:
        raise Refusal("missing_field", "the search query holds no word to look for")
    expr = f"{_TEXT_COLUMNS} : ({fts_query(terms)})"
    if entity_id is not None:
        expr = f'ent : "{ent_token(idx.boxes[entity_id][0])}" AND {expr}'
    where = "fts MATCH ?" + ("" if include_terminal else " AND rowid NOT IN (SELECT rowid FROM term)")
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
            f"SELECT rowid, ent, id, ts, subject, sender FROM docs WHERE rowid IN ({marks})", [h[0] for h in hits]
        ):
            meta[row[0]] = row[1:]
        if len(meta) != len(hits):
            raise Unusable("the index matched a message it holds no row for")
    names = {ent_token(n): e for e, (n, _) in idx.boxes.items()}
    tic, _ = current_tic(ctx, None)
    shown = search_items.states(conn, [(int(meta[r][0][1:]), meta[r][1]) for r, _ in hits], tic, now)
    matches: list[SearchMatch] = []
    for rowid, snippet in hits:
        ent, lid, ts, subject, sender = meta[rowid]
        matches.append(SearchMatch(lid, names.get(ent, ent), shown[(int(ent[1:]), lid)], subject, sender or None,
                                   ts or None, snippet))
    return SearchResult(query, count, limit, count > len(matches), matches)


def search(
    ctx: Context,
    query: str,
    *,
    entity: str | None = None,
    include_terminal: bool = False,
    limit: int = DEFAULT_LIMIT,
    now: datetime | None = None,
) -> SearchResult:
    """Messages whose subject, body or text artifacts hold every word of ``query``.

    Returns ``SearchResult`` (query, count, limit, truncated, matches): ``count`` is every
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
    words = query_words(query)
    if entity is not None:
        entity_address(ctx, entity)
        entities = [entity]
    else:
        entities = [e.id for e in ctx.roster.entities]
    when = now or ctx.now()
    for _ in range(_ATTEMPTS):
        with held(ctx) as idx:
            try:
                return _answer(ctx, idx, query, words, entities, entity, include_terminal, limit, when)
            except sqlite3.DatabaseError as e:
                # the index went bad under us, or its file was deleted or replaced while this
                # connection was inside it (SQLite: "attempt to write a readonly database", "disk
                # I/O error"): it is a cache, so open (or build) it again and answer again
                if not (unusable(e) or yanked(e) or moved(idx)):
                    raise StoreError(f"the search index {idx.path or '(in memory)'} failed: {e}") from e
            spoiled(ctx, idx)
    # the file was taken away again and again (something keeps deleting the cache): the
    # letters are all there, so this one answer comes from an index of its own, in memory
    own = SearchIndex(None, connect(None)[0], None)
    try:
        return _answer(ctx, own, query, words, entities, entity, include_terminal, limit, when)
    finally:
        own.close()

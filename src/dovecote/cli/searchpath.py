"""``dovecote search`` without Typer or Rich, for the argument lists a person or a hook types.

A cold search is mostly start-up: the Typer app (and what it imports) costs
more than the answer. ``try_search`` answers the plain forms of the command
(``[--home H] search WORD... [--entity E] [--include-terminal] [--limit N]
[--json]``, options anywhere after ``search``, ``--opt=value`` too) exactly
as ``cli.app.search_cmd`` does: the same handle call, the same renderings, and
errors left to the same handler in ``cli.entry``. Anything else (help, an
unknown or repeated option, ``--``, a value that is not a plain number, bytes
that are not UTF-8, no word at all) returns False untouched, and the Typer
command answers it, usage errors included (tests/ops/search/test_search_cli.py holds the
two paths to the same bytes).
"""

from __future__ import annotations

import os
import sys

import msgspec

from dovecote.cli.utf8 import ENV_TEXT, is_utf8

#: A --limit is taken here when it is plain digits, short enough to be in range.
_DIGITS_MAX = 15


class SearchArgs(msgspec.Struct):
    home: str | None = None
    words: list[str] = msgspec.field(default_factory=list)
    entity: str | None = None
    include_terminal: bool = False
    limit: int | None = None
    json: bool = False


def parse(argv: list[str]) -> SearchArgs | None:
    """The search these arguments ask for, or None when only the Typer command may say."""
    env = [v for v in (os.environ.get(k) for k in ENV_TEXT) if v is not None]
    if not all(is_utf8(t) for t in (*argv, *env)):
        return None
    out = SearchArgs()
    rest = argv
    if rest[:1] == ["--home"] and len(rest) >= 2:
        out.home, rest = rest[1], rest[2:]
    elif rest[:1] and rest[0].startswith("--home="):
        out.home, rest = rest[0].split("=", 1)[1], rest[1:]
    if rest[:1] != ["search"]:
        return None
    seen: set[str] = set()
    i, rest = 0, rest[1:]
    while i < len(rest):
        tok = rest[i]
        i += 1
        if not tok.startswith("-"):
            out.words.append(tok)
            continue
        name, eq, value = tok.partition("=")
        if name == "--entity":  # the old spelling, still accepted (a hidden alias of the Typer command)
            name = "--entity-id"
        if name in seen or name not in ("--json", "--include-terminal", "--entity-id", "--limit"):
            return None
        seen.add(name)
        if name in ("--json", "--include-terminal"):
            if eq:
                return None
            setattr(out, name[2:].replace("-", "_"), True)
            continue
        if not eq:
            if i >= len(rest):
                return None
            value, i = rest[i], i + 1
        if value.startswith("-"):
            return None
        if name == "--entity-id":
            out.entity = value
        elif value.isascii() and value.isdigit() and len(value) <= _DIGITS_MAX:
            out.limit = int(value)
        else:
            return None
    return out if out.words else None


def try_search(argv: list[str]) -> bool:
    """Answer a plain ``search`` here; False when the Typer command must (nothing done)."""
    args = parse(argv)
    if args is None:
        return False
    from dovecote.cli.actor import bound_actor
    from dovecote.cli.output import emit_json
    from dovecote.cli.searchtext import search_text
    from dovecote.handle.search import search_home
    from dovecote.verbs import Search

    v = Search(query=" ".join(args.words), entity_id=args.entity, include_terminal=args.include_terminal)
    if args.limit is not None:
        v = Search(query=v.query, entity_id=v.entity_id, include_terminal=v.include_terminal, limit=args.limit)
    result = search_home(args.home, v, actor=bound_actor()).to_dict()
    if args.json:
        emit_json(result)
    else:
        sys.stdout.write(search_text(result))
    return True

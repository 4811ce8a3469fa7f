"""Path globs of a lease: their one spelling, whether a path matches one, and whether two can overlap.

A lease names paths relative to its project's root with globs: ``*`` any run of
characters but ``/``, ``?`` one character but ``/``, ``[abc]``/``[!abc]`` one
character of (or not of) a set, and ``**`` any run including ``/``. A glob
covers what it matches and everything under it (a lease on ``src`` or on
``src/*`` holds ``src/a/b.py``), as reserving a folder reserves its files.

Two globs overlap when some path could match both. That is decided exactly on
the model above (the two globs are read as automata over characters, and their
product is searched for a common path), never by comparing the texts: ``src/**``
and ``src/a.py`` overlap, ``src`` and ``src/*.py`` overlap (the folder holds the
files), ``*.py`` and ``src`` do not (``*`` takes no ``/``, so ``*.py`` names files
at the root only). Where the model is coarser than git's own matching
it errs towards overlap: ``a/**/b`` is read as ``a/`` then any run then ``b``
(it also matches ``a/xb``), and a character class of a set both sides negate is
taken to share a character. A false overlap only asks an agent to coordinate; a
missed one would let two agents edit one file.

Pure: no file, no clock.
"""

from __future__ import annotations

import functools
from collections import deque
from typing import NamedTuple

#: The token kinds: one literal character, one character but ``/``, a run without ``/``, any run, a class.
LIT, ONE, STAR, ANY, CLASS = "lit", "one", "star", "any", "class"


class Token(NamedTuple):
    kind: str
    chars: frozenset[str] = frozenset()
    negated: bool = False


def normal(glob: str) -> str | None:
    """``glob``'s one spelling (no leading ``./`` or ``/``, no trailing ``/``, no empty or ``.`` segment), or
    None when it names nothing under the root (empty, ``..``, or a NUL)."""
    if "\x00" in glob:
        return None
    parts = [p for p in glob.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


@functools.lru_cache(maxsize=4096)
def tokens(glob: str) -> tuple[Token, ...]:
    """``glob`` (in its ``normal`` spelling) as tokens, with the ``/**`` that makes it cover what is under it."""
    out: list[Token] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                i += 2
                if glob.startswith("/", i):  # ``**/`` also matches no folder at all: its slash is optional
                    i += 1
                out.append(Token(ANY))
                continue
            out.append(Token(STAR))
        elif c == "?":
            out.append(Token(ONE))
        elif c == "[" and (end := _class_end(glob, i)) is not None:
            out.append(_class(glob[i + 1:end]))
            i = end
        else:
            out.append(Token(LIT, frozenset(c)))
        i += 1
    return (*out, Token(LIT, frozenset("/")), Token(ANY)) if not out or out[-1].kind != ANY else tuple(out)


def _class_end(glob: str, start: int) -> int | None:
    """Where the class opened at ``start`` closes (a ``]`` right after the opening is a member), or None."""
    i = start + 1
    if i < len(glob) and glob[i] in "!^":
        i += 1
    if i < len(glob) and glob[i] == "]":
        i += 1
    end = glob.find("]", i)
    return None if end < 0 else end


def _class(body: str) -> Token:
    negated = body[:1] in ("!", "^")
    body = body[1:] if negated else body
    chars: set[str] = set()
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            chars.update(chr(c) for c in range(ord(body[i]), ord(body[i + 2]) + 1))
            i += 3
        else:
            chars.add(body[i])
            i += 1
    chars.discard("/")  # a class never matches a slash
    return Token(CLASS, frozenset(chars), negated)


def _common(a: Token, b: Token) -> bool:
    """Whether some one character is taken by both ``a`` and ``b`` (each a character-taking token)."""
    if a.kind == LIT or b.kind == LIT:
        lit, other = (a, b) if a.kind == LIT else (b, a)
        return _takes(other, next(iter(lit.chars)))
    if a.kind == CLASS and b.kind == CLASS:
        if not a.negated and not b.negated:
            return bool(a.chars & b.chars)
        if a.negated and b.negated:
            return True  # two negated finite sets always leave a character out of both
        pos, neg = (a, b) if not a.negated else (b, a)
        return bool(pos.chars - neg.chars)
    # ``?``, ``*``, ``**`` and any non-empty class share some character but ``/``
    return not any(t.kind == CLASS and not t.negated and not t.chars for t in (a, b))


def _takes(t: Token, c: str) -> bool:
    if t.kind == LIT:
        return c in t.chars
    if t.kind == ANY:
        return True
    if c == "/":
        return False
    if t.kind == CLASS:
        return (c in t.chars) != t.negated
    return True


def _moves(ts: tuple[Token, ...], i: int) -> list[tuple[Token, int]]:
    """The character-taking steps from position ``i``: the token, and where it leaves the pattern."""
    if i >= len(ts):
        return []
    t = ts[i]
    return [(t, i)] if t.kind in (STAR, ANY) else [(t, i + 1)]


def overlap(a: str, b: str) -> bool:
    """Whether some path matches both globs (each in its ``normal`` spelling); see the module docstring."""
    if a == b:
        return True
    ta, tb = tokens(a), tokens(b)
    start = (0, 0)
    seen = {start}
    todo = deque([start])
    while todo:
        i, j = todo.popleft()
        if i == len(ta) and j == len(tb):
            return True
        nxt: list[tuple[int, int]] = []
        if i < len(ta) and ta[i].kind in (STAR, ANY):
            nxt.append((i + 1, j))  # a run may be empty
        if j < len(tb) and tb[j].kind in (STAR, ANY):
            nxt.append((i, j + 1))
        for x, i2 in _moves(ta, i):
            for y, j2 in _moves(tb, j):
                if _common(x, y):
                    nxt.append((i2, j2))
        for state in nxt:
            if state not in seen:
                seen.add(state)
                todo.append(state)
    return False


def covers(glob: str, path: str) -> bool:
    """Whether the lease glob ``glob`` holds ``path`` (both ``normal``): the path, or a folder of it, matches."""
    p = normal(path)
    return p is not None and overlap(glob, _literal(p))


def _literal(path: str) -> str:
    """``path`` as a glob matching it alone, up to the folder cover every glob has (its special characters as
    one-character classes)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)

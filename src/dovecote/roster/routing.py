"""The ownership law: which box a field report belongs to.

Pure: ``route`` takes the letter's ``brain``/``repo`` and a ``RosterIndex`` and
never looks at the file system, so the decision is the same on every machine
(DESIGN 1.8). Whether this machine can reach the chosen box is asked separately
by the store.

The law, in order:

1. The field is ``brain`` when it is non-blank, else ``repo``.
2. Cut everything from the first ``(``; expand a leading ``~`` against the
   roster's recorded home; trim whitespace and trailing ``/``.
3. Projectless -> ``home``: empty (so a parenthesised note alone), ``all``,
   anything starting with ``research task``, or one of the owner's own roots.
4. A path (it has a ``/``): a project whose root equals it or contains it (the
   deepest such root); otherwise its last component is looked up as a name.
5. A name: the projects whose name or alias equals it, case-insensitively.
   None? Fold a worktree suffix: the projects ``p`` with ``name == p + "-..."``.
   Exactly one candidate -> that project. More than one -> pending
   ``ambiguous_name`` (never a first-wins guess). None -> pending
   ``unknown_project``. A named project is never re-routed to home (MED-INV-10).
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from dovecote.model.addresses import HOME, Address
from dovecote.roster.config import PROJECTLESS_WORDS, Roster, normalize_root
from dovecote.roster.config import lexical as _lexical


class Route(NamedTuple):
    """Where a letter goes. ``address`` is None when it stays pending."""

    address: Address | None
    name: str  # the normalized project name ("" for home)
    reason: str | None  # None, "unknown_project" or "ambiguous_name"


class RosterIndex:
    """The lookups ``route`` needs, built once per roster."""

    def __init__(self, roster: Roster) -> None:
        self.owner_home = roster.owner_home
        self.owner_roots = frozenset(_lexical(r) for r in roster.owner_roots)
        by_root: dict[str, set[str]] = defaultdict(set)
        by_name: dict[str, set[str]] = defaultdict(set)
        for p in roster.projects:
            by_root[_lexical(p.root)].add(p.name)
            by_name[p.name.lower()].add(p.name)
            for a in p.aliases:
                by_name[a.lower()].add(p.name)
        self.by_root = {k: frozenset(v) for k, v in by_root.items()}
        self.by_name = {k: frozenset(v) for k, v in by_name.items()}
        # longest first so the deepest containing root is found first
        self.roots = sorted(self.by_root, key=len, reverse=True)


def _decide(candidates: frozenset[str] | set[str], name: str) -> Route:
    if len(candidates) == 1:
        (only,) = candidates
        return Route(Address("project", only), only, None)
    if candidates:
        return Route(None, name, "ambiguous_name")
    return Route(None, name, "unknown_project")


def _lookup_name(name: str, ix: RosterIndex) -> Route:
    key = name.lower()
    hit = ix.by_name.get(key)
    if hit:
        return _decide(hit, name)
    folded: set[str] = set()
    for known, projects in ix.by_name.items():
        if key.startswith(known + "-"):
            folded |= projects
    return _decide(folded, name)


def route(brain: str | None, repo: str | None, ix: RosterIndex) -> Route:
    """Apply the ownership law to one letter's ``brain``/``repo`` fields."""
    field = brain if isinstance(brain, str) and brain.strip() else repo
    text = field if isinstance(field, str) else ""
    text = text.split("(", 1)[0]
    text = normalize_root(text, ix.owner_home) if text.strip() else ""
    text = _lexical(text)
    low = text.lower()
    if not text or low in PROJECTLESS_WORDS or low.startswith("research task") or text in ix.owner_roots:
        return Route(HOME, "", None)
    if "/" in text:
        exact = ix.by_root.get(text)
        if exact:
            return _decide(exact, text.rsplit("/", 1)[-1])
        for root in ix.roots:
            if text.startswith(root + "/") or root == "/":
                return _decide(ix.by_root[root], text.rsplit("/", 1)[-1])
        text = text.rsplit("/", 1)[-1]
        if not text:
            return Route(None, "/", "unknown_project")
    return _lookup_name(text, ix)

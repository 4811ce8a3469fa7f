"""Who may join the roster and leave it: each change of the roster value, with the rule it keeps.

A project or entity is added only when it stays reachable and unambiguous (no name equal to
another project's name or alias, no root shared, no name differing from another only by case,
no word the ownership law reads as "no project"), and removed only when the roster holds it.
Pure functions of a ``Roster``: the handle's roster verbs apply them inside an edit of
``config.toml`` under its lock (``roster.edit``), so a cold read of the roster loads none of this.
"""

from __future__ import annotations

import os

from msgspec.structs import replace

from dovecote.errors import Refusal
from dovecote.roster.config import (
    PROJECTLESS_WORDS,
    Entity,
    Project,
    Roster,
    normalize_root,
    root_clash,
    root_problem,
)


def given_root(root: str) -> str:
    """The absolute root a user's ``--root`` means, or ``invalid_field``.

    ``~`` is this user's home and a relative path is taken from the working
    directory; a blank root (which used to read as ``/`` and claim every path
    no other project owns) or a ``~user`` that does not expand is refused.
    """
    raw = root.strip()
    if not raw:
        raise Refusal("invalid_field", "a project root cannot be blank (it would read as / and claim every path)")
    expanded = os.path.expanduser(raw)
    if expanded.startswith("~"):
        raise Refusal("invalid_field", f"root {root!r}: cannot expand {expanded.split('/', 1)[0]!r}")
    norm = normalize_root(expanded)
    if not norm.startswith("/"):
        norm = os.path.abspath(norm)
    norm = os.path.normpath(norm)  # lexical: "a/../b" is stored as the "b" it means
    if problem := root_problem(norm):
        raise Refusal("invalid_field", f"root {root!r} {problem}")
    return norm


def with_project(r: Roster, p: Project) -> Roster:
    """Add a project, refusing a name that would be unreachable or silently ambiguous.

    Two projects may share an alias on purpose (letters naming it then stay
    pending as ambiguous); but a new name equal to another project's name or
    alias, or an alias equal to another project's name, is refused.
    """
    for word in (p.name, *p.aliases):
        if word.lower() in PROJECTLESS_WORDS:
            raise Refusal("invalid_name", f"{word!r} means projectless to the ownership law; it cannot name a project")
    if twin := r.project(p.name):  # found whatever the case: on a case-insensitive disk the two are one folder
        raise Refusal("duplicate_project", f"project {twin.name!r} is already in the roster (names differing only"
                      " by case would share one box folder on a case-insensitive disk)")
    if clash := root_clash(r.projects, p):
        raise Refusal("duplicate_root", f"project {clash.name!r} already has the root {clash.root}")
    low = p.name.lower()
    for other in r.projects:
        if low in (a.lower() for a in other.aliases):
            raise Refusal("duplicate_project", f"{p.name!r} is already an alias of project {other.name!r}")
        if other.name.lower() in (a.lower() for a in p.aliases):
            raise Refusal("duplicate_project", f"alias {other.name!r} is already the name of a project")
    return replace(r, projects=(*r.projects, p))


def with_entity(r: Roster, e: Entity) -> Roster:
    if twin := r.entity_like(e.id):
        raise Refusal("duplicate_entity", f"entity {twin.id!r} is already in the roster (ids differing only by"
                      " case would share one box folder on a case-insensitive disk)")
    return replace(r, entities=(*r.entities, e))


def without_project(r: Roster, name: str) -> tuple[Roster, Project]:
    p = r.project(name)
    if p is None:
        raise Refusal("unknown_project", f"no project {name!r} in the roster")
    return replace(r, projects=tuple(q for q in r.projects if q is not p)), p


def without_entity(r: Roster, entity_id: str) -> tuple[Roster, Entity]:
    e = r.entity(entity_id)
    if e is None:
        raise Refusal("unknown_entity", f"no entity {entity_id!r} in the roster")
    return replace(r, entities=tuple(q for q in r.entities if q is not e)), e

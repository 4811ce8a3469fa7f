"""``import agent-mail``: read an mcp_agent_mail database and (with ``write``) import it.

The database is read once, read-only, in one snapshot (``archive_read``);
everything after is a function of those rows (``import_plan``), so a dry run
(the default) reports exactly what ``write`` would register and append.
``write`` first registers the projects and entities the roster lacks (one
roster edit, by the caller: ``enrol``), then appends each box's letters in
chunks, each fsynced before the next. Appending is idempotent by content id,
so a second import appends nothing and an import killed midway is completed
by the next run: the letters already there are counted ``already_present``.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote.errors import StoreError
from dovecote.model.addresses import Address
from dovecote.model.results import Result
from dovecote.ops.agentmail.archive_read import Archive, read_archive
from dovecote.ops.agentmail.import_plan import Plan, plan, row_counts
from dovecote.roster import edit as roster_edit
from dovecote.roster import members
from dovecote.roster.config import Entity, Project, Roster

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: Lines per append: each chunk is one fsynced write, so a kill loses at most the chunk being written.
CHUNK = 5000


class AgentMailImported(Result, frozen=True):
    """What importing an mcp_agent_mail database found and (with ``write``) registered and appended.

    ``rows``: each table's rows; ``imported``: the rows that became letters (or
    roster entries); ``skipped``: every other row, named with a reason keyword.
    """

    path: str
    write: bool
    rows: dict[str, int]
    imported: dict[str, int]
    skipped_count: int
    skipped: list[dict[str, str]]
    skipped_by_reason: dict[str, int]
    projects: list[dict[str, Any]]
    projects_added: list[str]
    entities: int
    entities_added: list[str]
    retired: list[str]
    letters: dict[str, int]
    letters_by_kind: dict[str, int]
    boxes: int


class Prepared:
    """An archive read and planned: what ``enrol`` registers and ``finish`` appends and reports."""

    def __init__(self, path: Path) -> None:
        self.archive: Archive = read_archive(path)
        self.plan: Plan = plan(self.archive)


def prepare(path: Path) -> Prepared:
    """Read the database at ``path`` (a storage root or the file) and plan its import.

    Raises ``Refusal`` ``invalid_field``: no database there, or not their schema.
    """
    return Prepared(path)


def missing(roster: Roster, p: Plan) -> tuple[list[str], list[str]]:
    """The projects (slugs) and entities of the plan the roster does not hold yet."""
    projects = [s for s in p.projects if roster.project(s) is None]
    entities = [e for e in dict.fromkeys(p.entities) if roster.entity_like(e) is None]
    return projects, entities


def enrol(p: Plan) -> roster_edit.Change:
    """The roster change registering the plan's projects and entities the roster lacks (as it is then)."""

    def change(r: Roster, doc: Any) -> Roster:
        projects, entities = missing(r, p)
        for slug in projects:
            proj = Project(slug, members.given_root(p.projects[slug]))
            r = members.with_project(r, proj)
            roster_edit.append_table(doc, "projects", roster_edit.project_fields(proj))
        for eid in entities:
            r = members.with_entity(r, Entity(eid))
            roster_edit.append_table(doc, "entities", roster_edit.entity_fields(Entity(eid)))
        return r

    return change


def _append(ctx: Context, letters: list[tuple[Address, bytes]]) -> tuple[int, int]:
    by_box: dict[Address, list[bytes]] = {}
    for where, line in letters:
        by_box.setdefault(where, []).append(line)
    appended = present = 0
    for where in sorted(by_box, key=str):
        lines = by_box[where]
        for i in range(0, len(lines), CHUNK):
            try:
                done = ctx.store.append(where, lines[i:i + CHUNK])
            except OSError as e:
                raise StoreError(f"cannot append to {where}: {e.strerror or e}") from e
            new = sum(1 for _, fresh in done if fresh)
            appended += new
            present += len(done) - new
    return appended, present


def finish(ctx: Context, prep: Prepared, *, write: bool, added: tuple[list[str], list[str]]) -> AgentMailImported:
    """Append the plan's letters when ``write`` (the roster already holds its names), and report.

    ``added``: the projects and entities registered for this import (empty lists on a dry run).
    """
    p = prep.plan
    appended = present = 0
    if write:
        appended, present = _append(ctx, p.letters)
    would = missing(ctx.roster, p) if not write else added
    skipped = [s.to_dict() for s in p.skipped]
    return AgentMailImported(
        path=prep.archive.path, write=write, rows=row_counts(prep.archive),
        imported={t: p.imported.get(t, 0) for t in row_counts(prep.archive)},
        skipped_count=len(skipped), skipped=skipped,
        skipped_by_reason=dict(sorted(Counter(s.reason for s in p.skipped).items())),
        projects=[{"name": s, "root": root, "root_here": os.path.isdir(root)}
                  for s, root in sorted(p.projects.items())],
        projects_added=would[0], entities=len(set(p.entities)), entities_added=would[1], retired=sorted(p.retired),
        letters={"planned": len(p.letters), "appended": appended, "already_present": present},
        letters_by_kind=dict(sorted(p.kinds.items())), boxes=len({a for a, _ in p.letters}),
    )


__all__ = ["AgentMailImported", "Prepared", "enrol", "finish", "missing", "prepare"]

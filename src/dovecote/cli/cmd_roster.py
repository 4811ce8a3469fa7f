"""``dovecote project ...`` and ``dovecote entity ...``: the roster's edits and listings.

Each option is a field of its verb (``ProjectAdd``, ``EntityRemove``, ...), and
its help is that field's doc.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from dovecote.cli import render
from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, opened
from dovecote.cli.options import argument, option
from dovecote.cli.output import show
from dovecote.verbs import EntityAdd, EntityList, EntityRemove, ProjectAdd, ProjectList, ProjectRemove

if TYPE_CHECKING:
    from dovecote.handle.api import Use

project_app = Typer(help="Edit and list the projects in the roster.", no_args_is_help=True)
entity_app = Typer(help="Edit and list the entities (mailbox owners) in the roster.", no_args_is_help=True)


@project_app.command("add")
def project_add(
    name: str = argument(ProjectAdd, "name"),
    root: str = option(ProjectAdd, "root", "--root"),
    aliases: Optional[list[str]] = option(ProjectAdd, "aliases", "--alias", metavar="NAME", repeat="repeat"),
    box_in_repo: bool = option(ProjectAdd, "box_in_repo", "--box-in-repo"),
    json: JsonOpt = False,
) -> None:
    """Add a project to the roster.
    """
    p = opened().add_project(ProjectAdd(name=name, root=root, aliases=tuple(aliases or ()), box_in_repo=box_in_repo))
    out = {"name": p.name, "root": p.root, "aliases": list(p.aliases), "box_in_repo": p.box_in_repo}
    show(out, json=json, text=lambda r: f"added project {r['name']} at {r['root']}\n")


@project_app.command("list")
def project_list(json: JsonOpt = False) -> None:
    """List the projects and whether their box is reachable.

    Reachable means from this machine."""
    show(opened().projects(ProjectList()), json=json, text=render.projects)


def _removed(use: Use, json: bool) -> None:
    kind, name = use.address.split(":", 1)  # the name as the roster spelled it

    def text(r: dict[str, Any]) -> str:
        if use.letters:
            return (f"removed {kind} {name}; its ledger stays at {r['ledger']} "
                    f"({r['in_box']} letter(s), no longer read)\n")
        return f"removed {kind} {name}\n"

    show({"removed": kind, "name": name, **use.to_dict()}, json=json, text=text)


@project_app.command("remove")
def project_remove(
    name: str = argument(ProjectRemove, "name"),
    force: bool = option(ProjectRemove, "force", "--force"),
    json: JsonOpt = False,
) -> None:
    """Remove a project from the roster; its ledger is never deleted.

    Refused (in_use) while its box holds letters or the spool has letters for it, unless --force.
    """
    _removed(opened().remove_project(ProjectRemove(name=name, force=force)), json)


@entity_app.command("add")
def entity_add(
    entity_id: str = argument(EntityAdd, "entity_id", metavar="ID"),
    role: Optional[str] = option(EntityAdd, "role", "--role"),
    json: JsonOpt = False,
) -> None:
    """Register an entity, so it has a mailbox and can be sent to.
    """
    e = opened().add_entity(EntityAdd(entity_id=entity_id, role=role))
    show({"id": e.id, "role": e.role}, json=json, text=lambda r: f"added entity {r['id']}\n")


@entity_app.command("remove")
def entity_remove(
    entity_id: str = argument(EntityRemove, "entity_id", metavar="ID"),
    force: bool = option(EntityRemove, "force", "--force"),
    json: JsonOpt = False,
) -> None:
    """Remove an entity from the roster; its ledger is never deleted.

    Refused (in_use) while its box holds letters, unless --force.
    """
    _removed(opened().remove_entity(EntityRemove(entity_id=entity_id, force=force)), json)


@entity_app.command("list")
def entity_list(json: JsonOpt = False) -> None:
    """List the registered entities."""
    show(opened().entities(EntityList()), json=json,
         text=lambda rows: "".join(f"{r['id']}\t{r['role'] or ''}\n" for r in rows))


def register(app: Typer) -> None:
    app.add_typer(project_app, name="project")
    app.add_typer(entity_app, name="entity")

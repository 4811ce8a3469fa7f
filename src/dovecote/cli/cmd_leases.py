"""Advisory file leases on the command line: ``lease take|renew|release|list|check`` and ``lease guard install``.

Each option is a field of its verb (``dovecote.verbs.leases``). Without
``--project`` a command takes the project whose root holds the working
directory (the deepest, when roots nest), else the roster's only project.
``lease check`` is what the pre-commit guard runs: it exits 2 with
``lease_conflict`` when another agent holds a staged path exclusively.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, opened
from dovecote.cli.options import argument, option
from dovecote.cli.output import show
from dovecote.handle.api import Dovecote
from dovecote.model.textsafe import one_line
from dovecote.verbs import LeaseCheck, LeaseGuardInstall, LeaseRelease, LeaseRenew, Leases, LeaseTake, decode


def _here(dc: Dovecote, given: Optional[str]) -> Optional[str]:
    """The project named, else the one whose root holds the working directory (None: the verb's default)."""
    if given is not None:
        return given
    cwd = Path.cwd().resolve()
    best: tuple[int, str] | None = None
    for p in dc.roster.projects:
        root = Path(p.root).expanduser().resolve()
        if (root == cwd or root in cwd.parents) and (best is None or len(root.parts) > best[0]):
            best = (len(root.parts), p.name)
    return best[1] if best else None


def _row(x: dict[str, Any]) -> str:
    how = "exclusive" if x["exclusive"] else "shared"
    why = f"  ({one_line(x['reason'])})" if x.get("reason") else ""
    return (f"  {x['id']}  {x['project']}  {one_line(x['entity'])}  {' '.join(map(one_line, x['globs']))}  {how}  "
            f"{x['state']}{' until ' + x['expires'] if x['state'] == 'active' else ''}{why}\n")


def _conflicts(rows: list[dict[str, Any]]) -> str:
    return "".join(f"  conflict: {one_line(c['holder'])} holds {one_line(c['glob'])} until {c['expires']} "
                   f"[{c['lease_id']}]\n" for c in rows)


def take_cmd(
    entity_id: str = argument(LeaseTake, "entity_id", metavar="ENTITY"),
    globs: list[str] = argument(LeaseTake, "globs", metavar="GLOB..."),
    ttl: int = option(LeaseTake, "ttl", "--ttl"),
    shared: bool = option(LeaseTake, "shared", "--shared"),
    reason: Optional[str] = option(LeaseTake, "reason", "--reason"),
    project: Optional[str] = option(LeaseTake, "project", "--project"),
    advisory: bool = option(LeaseTake, "advisory", "--advisory"),
    json: JsonOpt = False,
) -> None:
    """Take a lease on paths (globs) of a project.

    Refused lease_conflict when another agent holds an overlapping one (unless --advisory).
    """
    dc = opened()
    v = decode(LeaseTake, {"entity_id": entity_id, "globs": list(globs), "ttl": ttl, "shared": shared,
                           "reason": reason, "project": _here(dc, project), "advisory": advisory})
    show(dc.lease_take(v), json=json, text=lambda d: ("taken" if d["appended"] else "already taken") + "\n"
         + _row(d["lease"]) + _conflicts(d["conflicts"]))


def _changed(what: str) -> Any:
    return lambda d: f"{what} {d['count']} of {d['entity']}'s leases in {d['project']}\n" + "".join(
        _row(x) for x in d["leases"])


def renew_cmd(
    entity_id: str = argument(LeaseRenew, "entity_id", metavar="ENTITY"),
    lease_ids: Optional[list[str]] = argument(LeaseRenew, "lease_ids", metavar="[ID]..."),
    ttl: int = option(LeaseRenew, "ttl", "--ttl"),
    project: Optional[str] = option(LeaseRenew, "project", "--project"),
    json: JsonOpt = False,
) -> None:
    """Extend a holder's active leases to --ttl seconds from now.

    All of them, or the ids given.
    """
    dc = opened()
    v = decode(LeaseRenew, {"entity_id": entity_id, "lease_ids": list(lease_ids or ()), "ttl": ttl,
                            "project": _here(dc, project)})
    show(dc.lease_renew(v), json=json, text=_changed("renewed"))


def release_cmd(
    entity_id: str = argument(LeaseRelease, "entity_id", metavar="ENTITY"),
    lease_ids: Optional[list[str]] = argument(LeaseRelease, "lease_ids", metavar="[ID]..."),
    project: Optional[str] = option(LeaseRelease, "project", "--project"),
    json: JsonOpt = False,
) -> None:
    """Release a holder's active leases (all, or the ids given).

    Releasing again releases nothing.
    """
    dc = opened()
    v = decode(LeaseRelease, {"entity_id": entity_id, "lease_ids": list(lease_ids or ()),
                              "project": _here(dc, project)})
    show(dc.lease_release(v), json=json, text=_changed("released"))


def list_cmd(
    project: Optional[str] = option(Leases, "project", "--project"),
    entity_id: Optional[str] = option(Leases, "entity_id", "--entity-id"),
    include_ended: bool = option(Leases, "include_ended", "--include-ended"),
    json: JsonOpt = False,
) -> None:
    """Who holds which paths until when.

    Every project's active leases, or one project's, or every lease with --include-ended.
    """
    v = decode(Leases, {"project": project, "entity_id": entity_id, "include_ended": include_ended})

    def text(d: dict[str, Any]) -> str:
        counts = ", ".join(f"{n} {k}" for k, n in d["counts"].items())
        out = f"{d['count']} leases ({counts})\n" + "".join(_row(x) for x in d["leases"])
        return out + (f"unreachable: {', '.join(d['unreachable'])}\n" if d["unreachable"] else "")

    show(opened().leases(v), json=json, text=text)


def check_cmd(
    paths: Optional[list[str]] = argument(LeaseCheck, "paths", metavar="[PATH]..."),
    entity_id: Optional[str] = option(LeaseCheck, "entity_id", "--entity-id"),
    project: Optional[str] = option(LeaseCheck, "project", "--project"),
    paths_from_stdin: Annotated[bool, typer.Option(
        "--paths-from-stdin", help="Read the paths from stdin, NUL-separated (git diff --name-only -z).")] = False,
    json: JsonOpt = False,
) -> None:
    """Refuse paths another agent holds exclusively (the guard's check).

    Exits 2 with lease_conflict when another holder's exclusive lease holds one of the paths.
    """
    given = list(paths or ())
    if paths_from_stdin:
        given += [p for p in sys.stdin.buffer.read().decode("utf-8", "surrogateescape").split("\0") if p]
    dc = opened()
    v = decode(LeaseCheck, {"paths": given, "entity_id": entity_id, "project": _here(dc, project)})
    show(dc.lease_check(v), json=json, text=lambda d: f"{d['paths']} paths, none held by another in {d['project']}\n")


def guard_install_cmd(
    repo: Optional[str] = argument(LeaseGuardInstall, "repo", metavar="[REPO]"),
    project: Optional[str] = option(LeaseGuardInstall, "project", "--project"),
    json: JsonOpt = False,
) -> None:
    """Write a git pre-commit hook that checks the project's leases.

    It refuses a commit that touches paths another agent holds exclusively.

    When dovecote cannot be asked the commit goes through. An existing hook is backed up and still runs.
    """
    v = decode(LeaseGuardInstall, {"project": project, "repo": repo})

    def text(d: dict[str, Any]) -> str:
        out = f"{'installed' if d['changed'] else 'already installed'}: {d['hook']} (project {d['project']})\n"
        return out + (f"the hook that was there is kept at {d['backup']} and still runs\n" if d["backup"] else "")

    show(opened().lease_guard_install(v), json=json, text=text)


def register(app: Typer) -> None:
    lease = Typer(help="Advisory file leases: reserve paths before editing.",
                  no_args_is_help=True)
    lease.command("take")(take_cmd)
    lease.command("renew")(renew_cmd)
    lease.command("release")(release_cmd)
    lease.command("list")(list_cmd)
    lease.command("check")(check_cmd)
    guard = Typer(help="The pre-commit guard of a project's repository.", no_args_is_help=True)
    guard.command("install")(guard_install_cmd)
    lease.add_typer(guard, name="guard")
    app.add_typer(lease, name="lease")

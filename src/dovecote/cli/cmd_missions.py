"""Missions on the command line: ``block add|bump``, ``blocks``, ``mission post|show|archive``,
``missions`` and ``receipt import``.

Each option is a field of its verb (``dovecote.verbs.missions``). The two human
gestures (``mission archive``, ``receipt import``) need the person's gesture
passphrase, typed with echo off at the terminal (``cmd_gestures``); the handle
checks it, and refuses ``human_gesture_required`` without it, nothing appended.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import orjson
import typer

from dovecote.cli.actor import bound_actor
from dovecote.cli.boundary import Typer
from dovecote.cli.cmd_gestures import passphrase_for
from dovecote.cli.common import JsonOpt, opened
from dovecote.cli.options import argument, option
from dovecote.cli.output import show
from dovecote.errors import Refusal
from dovecote.verbs import (
    BlockAdd,
    BlockBump,
    Blocks,
    Mission,
    MissionArchive,
    MissionPost,
    Missions,
    ReceiptImport,
    decode,
)


def block_add_cmd(
    block_id: str = argument(BlockAdd, "block_id"),
    project: str = option(BlockAdd, "project", "--project"),
    json: JsonOpt = False,
) -> None:
    """Add a block (a work unit) to a project.

    It starts at boundary version 1, store version 0.
    """
    show(opened().block_add(BlockAdd(block_id=block_id, project=project)), json=json, text=_block_text)


def block_bump_cmd(
    block_id: str = argument(BlockBump, "block_id"),
    project: Optional[str] = option(BlockBump, "project", "--project"),
    json: JsonOpt = False,
) -> None:
    """Move a block's boundary one version on.

    A receipt candidate for the old boundary is stale."""
    show(opened().block_bump(BlockBump(block_id=block_id, project=project)), json=json, text=_block_text)


def _block_text(d: dict[str, Any]) -> str:
    what = "" if d["appended"] else " (already there)"
    return (f"{d['block_id']} in {d['project']}: boundary {d['boundary_version']}, store {d['store_version']}"
            f"{what} [{d['letter_id']}]\n")


def blocks_cmd(project: Optional[str] = option(Blocks, "project", "--project"), json: JsonOpt = False) -> None:
    """Every block with its versions, and project skeletons.

    Boundary and store versions, and each project's skeleton id."""
    show(opened().blocks(Blocks(project=project)), json=json, text=_blocks_text)


def _blocks_text(d: dict[str, Any]) -> str:
    rows = [f"  {b['project']}  {b['block_id']}  boundary {b['boundary_version']}  store {b['store_version']}"
            for b in d["blocks"]]
    rows += [f"  {p}  {s}  (skeleton)" for p, s in d["skeletons"].items()]
    if d["unreachable"]:
        rows.append("unreachable: " + ", ".join(d["unreachable"]))
    return "\n".join([f"{d['count']} blocks", *rows]) + "\n"


def mission_post_cmd(
    file: Annotated[
        Optional[str], typer.Option("--file", metavar="PATH", help="The letter as JSON (default or '-': stdin).")
    ] = None,
    as_project: Optional[str] = option(MissionPost, "as_project", "--as-project"),
    poster: Annotated[Optional[str], typer.Option("--agent", help="Who posts (default: $DOVECOTE_AGENT).")] = None,
    json: JsonOpt = False,
) -> None:
    """Post the next letter of a mission on its chain.

    Validated, guarded, and appended only if it names the head.
    """
    raw = sys.stdin.buffer.read() if file in (None, "-") else _read(file or "")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise Refusal("invalid_json", f"the mission letter is not JSON: {e}") from None
    v = decode(MissionPost, {"letter": data, **({"as_project": as_project} if as_project else {})})
    show(opened().mission_post(v, actor=poster), json=json, text=_posted_text)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise Refusal("invalid_field", f"--file: {e.strerror}: {path}") from None


def _posted_text(d: dict[str, Any]) -> str:
    what = "already present:" if d["deduped"] else "posted"
    return f"{what} {d['letter_id']}: {d['mission_id']} seq {d['mission_seq']} {d['phase']} in {d['box']}\n"


def missions_cmd(
    project: Optional[str] = option(Missions, "project", "--project"),
    json: JsonOpt = False,
) -> None:
    """One head per mission, with the counts by phase.

    It also counts the missions waiting to land (merge_wait heads)."""
    show(opened().missions(Missions(project=project)), json=json, text=_missions_text)


def _missions_text(d: dict[str, Any]) -> str:
    rows = [f"  {m['phase']:<10} {m['mission_id']}  seq {m['mission_seq']}  head {m['head_letter_id']}  "
            f"superseded {m['superseded_count']}  {m['box']}" for m in d["missions"]]
    head = f"{d['count']} missions, {d['landing']} waiting to land"
    if d["unreachable"]:
        rows.append("unreachable: " + ", ".join(d["unreachable"]))
    return "\n".join([head, *rows]) + "\n"


def mission_show_cmd(
    mission_id: str = argument(Mission, "mission_id"),
    json: JsonOpt = False,
) -> None:
    """One mission's whole chain, root to head (and any letter off it)."""
    show(opened().mission(Mission(mission_id=mission_id)), json=json, text=_chain_text)


def _chain_text(d: dict[str, Any]) -> str:
    rows = [f"  {e['mission_seq']:>3} {e['phase']:<10} {e['letter_id']}  {e['agent']}  {e['ts']}" for e in d["chain"]]
    if d["forks"]:
        rows.append("off the chain: " + ", ".join(d["forks"]))
    return "\n".join([f"{d['mission_id']} in {d['box']}: {d['phase']} at seq {d['mission_seq']}", *rows]) + "\n"


def _gesture(verb: str, mission_id: str, what: str, v: Any) -> object:
    """Make the gesture ``verb`` with the passphrase the person types; they act as ``human.$USER``."""
    dc = opened()
    secret = passphrase_for(what, mission_id, dc.gesture_key_is_set())
    who = f"human.{bound_actor().user or 'unknown'}"
    if verb == "mission_archive":
        return dc.mission_archive(v, gesture="terminal", passphrase=secret, actor=who)
    return dc.receipt_import(v, gesture="terminal", passphrase=secret, actor=who)


def mission_archive_cmd(
    mission_id: str = argument(MissionArchive, "mission_id"),
    json: JsonOpt = False,
) -> None:
    """Set a landed or failed mission aside (a human gesture).

    Type the gesture passphrase at the terminal."""
    v = MissionArchive(mission_id=mission_id)
    show(_gesture("mission_archive", mission_id, "archive", v), json=json, text=_posted_text)


def receipt_import_cmd(
    mission_id: str = argument(ReceiptImport, "mission_id"),
    json: JsonOpt = False,
) -> None:
    """Import a mission's receipt candidate (a human gesture).

    The mission waits in merge_wait; type the gesture passphrase at the terminal.

    Then a landed letter with receipt {imported: true, store_version} can be posted.
    """
    v = ReceiptImport(mission_id=mission_id)
    show(_gesture("receipt_import", mission_id, "receipt import", v), json=json, text=_import_text)


def _import_text(d: dict[str, Any]) -> str:
    what = "already imported:" if d["deduped"] else "imported"
    return (f"{what} {d['mission_id']}'s candidate {d['candidate_letter_id']} into {d['block_id']} "
            f"({d['project']}): store version {d['store_version']} [{d['letter_id']}]\n")


def register(app: Typer) -> None:
    block = Typer(help="A project's blocks (work units).", no_args_is_help=True)
    block.command("add")(block_add_cmd)
    block.command("bump")(block_bump_cmd)
    app.add_typer(block, name="block")
    app.command("blocks")(blocks_cmd)
    mission = Typer(help="Mission letters: post, show, archive.", no_args_is_help=True)
    mission.command("post")(mission_post_cmd)
    mission.command("show")(mission_show_cmd)
    mission.command("archive")(mission_archive_cmd)
    app.add_typer(mission, name="mission")
    app.command("missions")(missions_cmd)
    for group in app.registered_groups:
        if group.name == "receipt" and group.typer_instance is not None:
            group.typer_instance.command("import")(receipt_import_cmd)
            return
    raise RuntimeError("the receipt group must be registered before receipt import")

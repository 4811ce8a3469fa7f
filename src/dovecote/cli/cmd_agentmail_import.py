"""``import agent-mail``: read an mcp_agent_mail database, and import it with ``--write``.

Registered under the ``import`` group next to ``import vnext``. The text says,
table by table, how many rows there are, how many an import takes, and names
every row it does not take with its reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, opened
from dovecote.cli.options import argument, option
from dovecote.cli.output import show
from dovecote.model.textsafe import one_line
from dovecote.verbs import ImportAgentMail

#: The most skipped rows the text lists (--json lists them all).
SHOWN = 20


def agentmail_text(r: dict[str, Any]) -> str:
    """The summary: rows per table, what maps to what, the letters, and each row not imported."""
    head = "imported" if r["write"] else "would import (dry run; --write imports)"
    verb = "added" if r["write"] else "to add"
    lines = [f"mcp_agent_mail database {one_line(r['path'])}"]
    for table, n in r["rows"].items():
        lines.append(f"  {table}: {n} rows, {r['imported'][table]} imported")
    here = sum(1 for p in r["projects"] if p["root_here"])
    lines.append(f"Projects: {len(r['projects'])} ({here} with a root folder on this machine), "
                 f"{len(r['projects_added'])} {verb}")
    lines.append(f"Agents: {r['entities']} entities ({len(r['retired'])} retired), "
                 f"{len(r['entities_added'])} {verb}")
    kinds = ", ".join(f"{n} {k}" for k, n in r["letters_by_kind"].items()) or "none"
    lines.append(f"Letters {head}: {r['letters']['planned']} in {r['boxes']} boxes ({kinds})")
    if r["write"]:
        lines.append(f"  appended {r['letters']['appended']}, already present {r['letters']['already_present']}")
    lines.append(f"Rows not imported: {r['skipped_count']}"
                 + (f" ({', '.join(f'{n} {k}' for k, n in r['skipped_by_reason'].items())})" if r["skipped"] else ""))
    lines += [f"  {s['table']} {one_line(s['key'])}: {s['reason']}: {one_line(s['detail'])}"
              for s in r["skipped"][:SHOWN]]
    if r["skipped_count"] > SHOWN:
        lines.append(f"  ... and {r['skipped_count'] - SHOWN} more (--json lists every one)")
    return "\n".join(lines) + "\n"


def register(import_app: Typer) -> None:
    @import_app.command("agent-mail")
    def import_agent_mail_cmd(
        path: Path = argument(ImportAgentMail, "path"),
        write: bool = option(ImportAgentMail, "write", "--write"),
        json: JsonOpt = False,
    ) -> None:
        """Read an mcp_agent_mail database; --write imports it.

        PATH is their storage root (holding storage.sqlite3) or the SQLite file;
        it is opened read-only. A dry run by default; --write registers its
        projects and agents and appends their mail, reads, acks and file
        reservations as letters (a re-import appends nothing).
        """
        show(opened().import_agent_mail(ImportAgentMail(path=str(path), write=write)), json=json, text=agentmail_text)

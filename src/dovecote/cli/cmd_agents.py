"""Commands that wake agents: ``token``, ``wait``, ``hooks install`` and ``hook``.

Thin like every command: parse, one call on the handle, render. ``hook``
commands are normally answered by ``cli/hookrun.py`` before Typer loads (see
``cli/entry.py``); they are registered here too so ``--help`` and the CLI
reference describe them, and a call that does reach Typer runs the same code.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from typing import Annotated, Optional

import typer

from dovecote.cli.boundary import Typer
from dovecote.cli.options import argument, option
from dovecote.cli.output import EXIT_FAIL, emit_json
from dovecote.handle.api import Dovecote
from dovecote.model.textsafe import one_line, subject_line
from dovecote.verbs import HooksInstall, TokenIssue, TokenList, TokenRevoke, Wait, decode, doc

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (stable, documented) instead of text.")]
EntityOpt = Annotated[
    Optional[str], typer.Option("--entity", help="Whose inbox (default $DOVECOTE_ENTITY, else the only entity).")
]


def command_prefix(dc: Dovecote) -> str:
    """How an agent's hook runs this very dovecote on this home, from any directory."""
    exe = os.path.abspath(sys.argv[0])
    run = f"{shlex.quote(sys.executable)} -m dovecote" if exe.endswith("__main__.py") else shlex.quote(exe)
    return f"{run} --home {shlex.quote(str(dc.layout.root.absolute()))}"


def register(app: typer.Typer, open_home: Callable[[], Dovecote], home: Callable[[], Optional[str]]) -> None:
    """Add the commands to ``app``; ``open_home`` opens the home the global options name."""
    token_app = Typer(help="Issue, list and revoke the tokens connections are bound to.", no_args_is_help=True)
    app.add_typer(token_app, name="token")
    hooks_app = Typer(help="Install agent hook configurations that call `dovecote hook`.", no_args_is_help=True)
    app.add_typer(hooks_app, name="hooks")
    hook_app = Typer(help="What agent hooks run; it never fails the agent.\n\n"
                          "Each reads the hook's JSON payload on stdin.", no_args_is_help=True)
    app.add_typer(hook_app, name="hook")

    @token_app.command("issue")
    def token_issue(
        entity_id: str = argument(TokenIssue, "entity_id", metavar="ENTITY"),
        role: str = option(TokenIssue, "role", "--role"),
        json: JsonOpt = False,
    ) -> None:
        """Issue a token and print it once.

        Only its hash is stored (tokens.jsonl, mode 0600).
        """
        issued = open_home().token_issue(decode(TokenIssue, {"entity_id": entity_id, "role": role}))
        if json:
            emit_json(issued.to_dict())
            return
        print(issued.token)
        sys.stderr.write(f"token {issued.row.id} for {one_line(issued.row.entity)} ({issued.row.role}); "
                         "it is shown only now, and stored only as its hash\n")

    @token_app.command("list")
    def token_list(json: JsonOpt = False) -> None:
        """List issued tokens (never the token itself).

        Id, entity, role, created and revoked."""
        rows = [r.to_dict() for r in open_home().tokens(TokenList())]
        if json:
            emit_json(rows)
            return
        for r in rows:
            print("\t".join(one_line(r[k] or "-") for k in ("id", "entity", "role", "created", "revoked")))
        if not rows:
            print("no tokens issued")

    @token_app.command("revoke")
    def token_revoke(
        token_id: str = argument(TokenRevoke, "token_id", metavar="ID"),
        json: JsonOpt = False,
    ) -> None:
        """Revoke a token; it stops working at once.

        The revocation is an appended record."""
        row = open_home().token_revoke(decode(TokenRevoke, {"token_id": token_id}))
        if json:
            emit_json(row.to_dict())
        else:
            print(f"revoked {row.id} ({one_line(row.entity)}, {row.role}) at {row.revoked}")

    @app.command("wait")
    def wait_cmd(
        entity_id: str = argument(Wait, "entity_id", metavar="ENTITY"),
        timeout: float = option(Wait, "timeout", "--timeout", help=f"{doc(Wait, 'timeout')} Exit 1."),
        after: Optional[str] = option(Wait, "after", "--after"),
        json: JsonOpt = False,
    ) -> None:
        """Block until new mail arrives for an entity, or time out.

        Exit 0 with the new mail printed; exit 1 when the timeout passes.

        It watches the size of one ledger, reading only when it grows.
        """
        result = open_home().wait(Wait(entity_id=entity_id, timeout=timeout, after=after))
        if json:
            emit_json(result.to_dict())
        else:
            for i in result.items:
                sender = one_line(i["sender"]) or "?"
                print(f'{i["state"]}_{i["id"]} [{str(i["priority"]).upper()}] "{subject_line(i["subject"])}" '
                      f"from {sender}")
            if result.timed_out:
                print(f"no new mail for {one_line(entity_id)} within {timeout:g}s")
            print(f"cursor {result.cursor}")
        if result.timed_out:
            raise typer.Exit(EXIT_FAIL)

    @hooks_app.command("install")
    def hooks_install(
        agent: str = option(HooksInstall, "agent", "--agent"),
        entity_id: str = option(HooksInstall, "entity_id", "--entity-id", "--entity"),
        project_dir: str = option(HooksInstall, "project_dir", "--project-dir"),
        dry_run: bool = option(HooksInstall, "dry_run", "--dry-run"),
        json: JsonOpt = False,
    ) -> None:
        """Write an agent's hooks to call `dovecote hook`.

        The hooks are SessionStart, UserPromptSubmit and Stop.

        Claude Code: <project>/.claude/settings.json; Codex: <project>/.codex/hooks.json. Idempotent;
        a changed file is first copied to <file>.bak-<time>.
        """
        dc = open_home()
        v = decode(HooksInstall, {"agent": agent, "entity_id": entity_id, "project_dir": project_dir,
                                  "dry_run": dry_run})
        result = dc.hooks_install(v, command_prefix(dc))
        if json:
            emit_json(result.to_dict())
            return
        sys.stdout.write(result.diff)
        if not result.changed:
            print(f"{result.path}: already installed, nothing changed")
        elif result.dry_run:
            print(f"{result.path}: would change (dry run, nothing written)")
        else:
            print(f"{result.path}: installed" + (f" (backup {result.backup})" if result.backup else ""))
        for note in result.notes:
            print(f"note: {note}")

    def _hook(kind: str, doc: str) -> None:
        def command(
            entity_id: EntityOpt = None,
            agent: Annotated[
                str, typer.Option("--agent", help="Whose output form: claude-code (plain text) or codex (JSON).")
            ] = "claude-code",
        ) -> None:
            from dovecote.cli.hookrun import main

            main(home(), [kind, *(["--entity", entity_id] if entity_id else []), "--agent", agent])

        command.__doc__ = doc
        hook_app.command(kind)(command)

    _hook("session-start", "Print the injection block for a new session.\n\n"
                           "It records what was surfaced to this session.")
    _hook("prompt", "Print only the items new to this session.\n\n"
                    "Nothing when nothing is new.")
    _hook("stop", "Block the stop once if urgent mail arrived.\n\n"
                  "It names new high or urgent items that arrived during the turn; else it allows the stop.")

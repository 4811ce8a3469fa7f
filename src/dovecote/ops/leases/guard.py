"""The lease guard: a git pre-commit hook that refuses a commit touching paths another agent holds exclusively.

The hook is a short POSIX shell script written into the repository's hooks
folder (``git rev-parse --git-path hooks``, so ``core.hooksPath`` is honoured).
It pipes the staged paths (both sides of a rename: ``--no-renames``) to
``dovecote lease check`` for its project, as the committer
(``$DOVECOTE_AGENT``, else ``$DOVECOTE_ENTITY``; none: every holder counts).
A ``lease_conflict`` answer refuses the commit and prints the holders and
their expiry; anything else that is not a pass (dovecote gone, its home
unreadable, a crash) lets the commit through with a warning: the mail system
being down never blocks a commit. ``DOVECOTE_LEASE_GUARD=off`` skips it.

Installing is idempotent (the same hook again changes nothing). A hook that is
not ours is kept (``pre-commit.bak-<time>``, never overwriting an earlier
backup), and the guard runs it after its own check, so an existing hook keeps
working. A hooks folder (or hook) that is a symbolic link is refused
``unsafe_path``, as ``hooks install`` refuses one (``ops.agents.hooks_config``):
writing through it would write outside the repository.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from dovecote.errors import Refusal, StoreError
from dovecote.ledger import jsonl as ledger
from dovecote.model.results import Result
from dovecote.ops.agents.hooks_config import backup_path
from dovecote.ops.leases.take import project_of

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: The line that marks a hook as the guard's (a reinstall rewrites such a hook without a backup).
MARK = "# dovecote lease guard"
_CHAINED = re.compile(r"^CHAINED=(.*)$", re.MULTILINE)


class GuardInstalled(Result, frozen=True):
    """What an install did: the hook's path, whether it changed, the backup of a hook it replaced (and runs)."""

    project: str
    repo: str
    hook: str
    changed: bool
    backup: str | None
    chained: str | None


def script(command: tuple[str, ...], home: Path, project: str, chained: str | None) -> str:
    """The hook's text: check the staged paths, refuse on ``lease_conflict``, pass on anything else."""
    q = shlex.quote
    run = " ".join(q(c) for c in command)
    return f"""#!/bin/sh
{MARK} (written by `dovecote lease guard install`; reinstalling it rewrites this file)
# A commit touching a path another agent holds exclusively is refused; when dovecote cannot be asked,
# the commit goes through (the mail system being down never blocks a commit).
CHAINED={q(chained or "")}
if [ "${{DOVECOTE_LEASE_GUARD:-}}" != "off" ]; then
  agent="${{DOVECOTE_AGENT:-${{DOVECOTE_ENTITY:-}}}}"
  out=$(git diff --cached --name-only --no-renames -z | DOVECOTE_HOME={q(str(home))} {run} lease check \\
        --project {q(project)} --paths-from-stdin ${{agent:+--entity-id "$agent"}} 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then
    case "$out" in
      *lease_conflict*)
        printf '%s\\n' "$out" >&2
        echo "dovecote lease guard: commit refused (coordinate with the holder, or DOVECOTE_LEASE_GUARD=off)" >&2
        exit 1 ;;
      *)
        echo "dovecote lease guard: dovecote could not be asked (exit $rc); the commit goes through" >&2 ;;
    esac
  fi
fi
if [ -n "$CHAINED" ] && [ -x "$CHAINED" ]; then
  exec "$CHAINED" "$@"
fi
exit 0
"""


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.SubprocessError) as e:
        raise Refusal("invalid_field", f"repo: git cannot be run here ({e})") from None
    if done.returncode != 0:
        raise Refusal("invalid_field", f"repo: {repo} is not a git repository ({done.stderr.strip()})")
    return done.stdout.strip()


def _repo_and_project(ctx: Context, project: str | None, repo: str | None) -> tuple[str, Path]:
    if repo is None:
        name = project_of(ctx, project)
        p = ctx.roster.project(name)
        assert p is not None  # project_of answered a name the roster has
        return name, Path(p.root)
    where = Path(repo).resolve()
    if project is not None:
        return project_of(ctx, project), where
    owners = [p.name for p in ctx.roster.projects if where == Path(p.root).resolve()
              or Path(p.root).resolve() in where.parents]
    if len(owners) != 1:
        raise Refusal("unknown_project" if not owners else "ambiguous_name",
                      f"repo {where} is under {len(owners)} projects of the roster: name --project")
    return owners[0], where


def _refuse_links(hooks: Path, hook: Path) -> None:
    for p in (hooks, hook):
        if p.is_symlink():
            raise Refusal("unsafe_path", f"{p} is a symbolic link; lease guard install never writes through one"
                          " (remove it, or copy its target in its place)")
    if hooks.exists() and not hooks.is_dir():
        raise Refusal("unsafe_path", f"{hooks} is a file where lease guard install needs a folder")


def install(ctx: Context, project: str | None, repo: str | None, command: tuple[str, ...]) -> GuardInstalled:
    """Write the guard into the repository of ``project`` (or ``repo``); see the module docstring."""
    name, where = _repo_and_project(ctx, project, repo)
    if not where.is_dir():
        raise Refusal("invalid_field", f"repo: {where} is not a folder")
    top = Path(_git(where, "rev-parse", "--show-toplevel"))
    hooks = Path(_git(top, "rev-parse", "--git-path", "hooks"))
    hooks = hooks if hooks.is_absolute() else top / hooks
    hook = hooks / "pre-commit"
    _refuse_links(hooks, hook)
    run = command or (sys.executable, "-m", "dovecote")
    try:
        old = hook.read_text(encoding="utf-8", errors="replace") if hook.exists() else None
    except OSError as e:
        raise StoreError(f"cannot read {hook}: {e.strerror or e}") from e
    backup = None
    if old is not None and MARK in old:  # ours: keep what it chains to
        m = _CHAINED.search(old)
        words = shlex.split(m.group(1)) if m else []
        chained = words[0] if words and words[0] else None
    else:
        chained = None
    new = script(run, ctx.layout.root.resolve(), name, chained)
    if old == new:
        return GuardInstalled(name, str(top), str(hook), False, None, chained)
    try:
        if old is not None and MARK not in old:
            target = backup_path(hook, ctx.now().strftime("%Y%m%dT%H%M%SZ"))
            ledger.write_atomic(target, hook.read_bytes(), mode=os.stat(hook).st_mode & 0o777)
            backup = chained = str(target)
            new = script(run, ctx.layout.root.resolve(), name, chained)
        ledger.write_atomic(hook, new.encode("utf-8"), mode=0o755)
    except OSError as e:
        raise StoreError(f"cannot write {hook}: {e.strerror or e}") from e
    return GuardInstalled(name, str(top), str(hook), True, backup, chained)

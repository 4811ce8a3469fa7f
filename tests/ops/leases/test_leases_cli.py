"""Leases on the command line, in real processes: N agents racing for one path (exactly one wins, the rest are
refused ``lease_conflict``), and the pre-commit guard in a real git repository with real commits (refused on
another agent's exclusive lease, naming holder and expiry; through when dovecote cannot be asked; idempotent;
an existing hook kept and still run; a linked hooks folder refused)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import pytest

from dovecote.verbs import EntityAdd
from helpers import DOVECOTE_BIN, add_project, cli_env, new_home, run_cli

pytestmark = pytest.mark.files_only
AGENTS = [f"ent_{n}" for n in range(6)]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with one project (its root ``tmp/repos/repo-a``) and the agents."""
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    for e in AGENTS:
        dc.add_entity(EntityAdd(entity_id=e))
    return dc.layout.root


def test_agents_racing_for_one_path_exactly_one_wins(tmp_path: Path, home: Path) -> None:
    for rnd, (glob, theirs) in enumerate([("src/a.py", "src/*.py"), ("docs/**", "docs/guide.md")]):
        procs = [subprocess.Popen([str(DOVECOTE_BIN), "lease", "take", e, glob if n % 2 else theirs, "--json",
                                   "--project", "repo-a"], cwd=tmp_path, env=cli_env(tmp_path, home),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n, e in enumerate(AGENTS)]
        done = []
        for p in procs:
            out, err = p.communicate(timeout=60)
            done.append((p.returncode, out, err))
        winners = [out for rc, out, _ in done if rc == 0]
        losers = [err for rc, _, err in done if rc != 0]
        assert len(winners) == 1, (rnd, done)
        assert len(losers) == len(AGENTS) - 1 and all(e.startswith(b"Error: lease_conflict: ") for e in losers)
        holder = orjson.loads(winners[0])["lease"]["entity"]
        assert all(f"{holder} holds".encode() in e for e in losers)
    listed = orjson.loads(run_cli(tmp_path, "lease", "list", "--json", home=home).stdout)
    assert listed["count"] == 2  # one lease per round: the refusals appended nothing


def git(repo: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    e = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
         "GIT_COMMITTER_EMAIL": "t@example.org", "HOME": str(repo.parent), **env}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=e, timeout=60,
                          check=False)


def commit(repo: Path, path: str, agent: str) -> subprocess.CompletedProcess[str]:
    f = repo / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(f"{path} by {agent} {len(list(repo.rglob('*')))}\n")
    assert git(repo, "add", path).returncode == 0
    return git(repo, "commit", "-q", "-m", f"{agent} edits {path}", DOVECOTE_AGENT=agent)


def test_the_guard_refuses_a_commit_on_anothers_exclusive_lease_and_lets_it_through_when_unreachable(
        tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repos" / "repo-a"
    assert git(repo, "init", "-q").returncode == 0
    installed = run_cli(tmp_path, "lease", "guard", "install", "--project", "repo-a", "--json", home=home)
    assert installed.returncode == 0, installed.stderr
    hook = Path(orjson.loads(installed.stdout)["hook"])
    assert hook == repo / ".git" / "hooks" / "pre-commit" and os.access(hook, os.X_OK)
    text = hook.read_bytes()
    again = orjson.loads(run_cli(tmp_path, "lease", "guard", "install", "--project", "repo-a", "--json",
                                 home=home).stdout)
    assert not again["changed"] and hook.read_bytes() == text  # idempotent
    assert again["backup"] is None and again["chained"] is None  # nothing was there, nothing runs after it

    assert commit(repo, "src/a.py", "ent_1").returncode == 0  # nobody holds it
    assert run_cli(tmp_path, "lease", "take", "ent_0", "src/**", "--project", "repo-a", home=home).returncode == 0
    refused = commit(repo, "src/a.py", "ent_1")
    assert refused.returncode != 0 and "lease_conflict" in refused.stderr
    assert "ent_0 holds src/** (exclusive) until 20" in refused.stderr
    assert git(repo, "log", "--oneline").stdout.count("\n") == 1  # the refused commit did not happen
    assert commit(repo, "src/a.py", "ent_0").returncode == 0  # the holder itself commits
    assert commit(repo, "docs/b.md", "ent_1").returncode == 0  # a path nobody holds
    # dovecote cannot be asked (its home is gone): the commit goes through, with a warning
    home.rename(tmp_path / "moved")
    through = commit(repo, "src/a.py", "ent_1")
    assert through.returncode == 0 and "could not be asked" in through.stderr
    (tmp_path / "moved").rename(home)
    assert commit(repo, "src/a.py", "ent_1").returncode != 0
    assert run_cli(tmp_path, "lease", "release", "ent_0", "--project", "repo-a", home=home).returncode == 0
    assert commit(repo, "src/a.py", "ent_1").returncode == 0


def test_an_existing_hook_is_kept_and_still_runs_and_a_linked_hooks_folder_is_refused(
        tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repos" / "repo-a"
    git(repo, "init", "-q")
    old = repo / ".git" / "hooks" / "pre-commit"
    old.write_text(f"#!/bin/sh\necho ran >> {tmp_path / 'old-hook-ran'}\nexit 0\n")
    old.chmod(0o755)
    got = orjson.loads(run_cli(tmp_path, "lease", "guard", "install", str(repo), "--json", home=home).stdout)
    assert got["project"] == "repo-a" and got["backup"]
    assert Path(got["backup"]).read_text().startswith("#!/bin/sh\necho")
    assert commit(repo, "a.txt", "ent_1").returncode == 0
    assert (tmp_path / "old-hook-ran").read_text() == "ran\n"  # chained after the check
    again = orjson.loads(run_cli(tmp_path, "lease", "guard", "install", str(repo), "--json", home=home).stdout)
    assert not again["changed"] and again["chained"] == got["backup"]  # a reinstall keeps the chain, no new backup

    other = tmp_path / "other"
    git(other.parent, "init", "-q", str(other))
    outside = tmp_path / "outside-hooks"
    outside.mkdir()
    (other / ".git" / "hooks").rename(tmp_path / "old-hooks")
    (other / ".git" / "hooks").symlink_to(outside)
    r = run_cli(tmp_path, "lease", "guard", "install", str(other), "--project", "repo-a", home=home)
    assert r.returncode == 2 and r.stderr.startswith(b"Error: unsafe_path: ")
    assert list(outside.iterdir()) == []
    r = run_cli(tmp_path, "lease", "guard", "install", str(tmp_path / "repos" / "repo-a" / "nope"), home=home)
    assert r.returncode == 2

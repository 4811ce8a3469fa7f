"""``import agent-mail`` on a storage root that mcp_agent_mail's own server code wrote, checked against what
their own ``fetch_inbox`` showed each agent.

It installs their published package (``agentmail_upstream.PACKAGE``) from the package registry into a
throwaway venv, so it runs with the long tier (``make stress``). The venv is kept under ``~/.cache`` and
reused while its python imports their package; it is built beside that place and renamed into it, so an
interrupted build never leaves a half venv where the next run looks.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from agentmail_upstream import ALPHA, BETA, DRIVER, PACKAGE, VERSION, environment
from dovecote.handle import agentmail_mail
from dovecote.handle.api import Dovecote
from dovecote.model.addresses import entity
from dovecote.ops.agentmail import names
from dovecote.verbs import Inbox, Leases
from helpers import new_home, open_home, run_cli, snapshot

pytestmark = pytest.mark.stress

CACHE = Path.home() / ".cache" / f"dovecote-agent-mail-{VERSION}"
TABLES = ("projects", "agents", "messages", "message_recipients", "file_reservations")


def _imports(venv: Path) -> bool:
    python = venv / "bin" / "python"
    if not python.exists():
        return False
    done = subprocess.run([str(python), "-c", "import mcp_agent_mail.app"], capture_output=True, timeout=300,
                          env={**os.environ, **environment(venv / "probe")}, cwd=venv)
    return done.returncode == 0


def _unreachable(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"cannot install {PACKAGE} (CI needs it): {why}")
    pytest.skip(f"cannot install {PACKAGE}: {why}")


def their_venv() -> Path:
    """The cached venv with their package, built (atomically) when missing or broken."""
    if _imports(CACHE):
        return CACHE
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f"{CACHE.name}.build-", dir=CACHE.parent))
    try:
        subprocess.run([sys.executable, "-m", "venv", str(build)], check=True, timeout=300)
        done = subprocess.run([str(build / "bin" / "python"), "-m", "pip", "install", "-q", PACKAGE],
                              capture_output=True, text=True, timeout=1200)
        if done.returncode != 0 or not _imports(build):
            _unreachable(done.stderr[-2000:] or "the installed package does not import")
        if CACHE.exists():  # a broken one: moved aside first (a rename over a full directory fails)
            CACHE.rename(Path(tempfile.mkdtemp(prefix=f"{CACHE.name}.old-", dir=CACHE.parent)) / "venv")
        try:
            build.rename(CACHE)
        except OSError:
            if not _imports(CACHE):  # another run's rename won; theirs works, so ours is not needed
                raise
    finally:
        shutil.rmtree(build, ignore_errors=True)
        for old in CACHE.parent.glob(f"{CACHE.name}.old-*"):
            shutil.rmtree(old, ignore_errors=True)
    return CACHE


def their_archive(tmp: Path) -> tuple[Path, dict[str, Any]]:
    """A storage root their server code wrote, and their recorded view of it."""
    venv = their_venv()
    root = tmp / "their-root"
    root.mkdir()
    (tmp / "driver.py").write_text(DRIVER)
    done = subprocess.run([str(venv / "bin" / "python"), str(tmp / "driver.py"), str(root), ALPHA, BETA],
                          capture_output=True, text=True, timeout=600, cwd=root,
                          env={**os.environ, **environment(root)})
    assert done.returncode == 0, done.stderr[-4000:]
    return root, json.loads((root / "their_view.json").read_text())


def _rows(db: Path) -> dict[str, int]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        con.close()


def _cli(tmp: Path, dc: Dovecote, root: Path, *more: str) -> dict[str, Any]:
    out = run_cli(tmp, "import", "agent-mail", str(root), "--json", *more, home=dc.layout.root)
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _theirs_of(dc: Dovecote, eid: str) -> dict[str, int]:
    """Each imported message letter's id in ``eid``'s box -> their integer message id (the envelope keeps it)."""
    return {x.id: x.data()["agentmail"]["id"] for x in dc.store.read(entity(eid)).letters if x.kind == "message"}


def test_their_servers_archive_imports_and_every_agent_sees_what_their_fetch_inbox_showed(tmp_path: Path) -> None:
    began = time.monotonic()
    root, view = their_archive(tmp_path)
    built = time.monotonic() - began
    rows = _rows(root / "storage.sqlite3")
    dc = new_home(tmp_path)
    before = snapshot(dc.layout.root)
    dry = _cli(tmp_path, dc, root)
    assert snapshot(dc.layout.root) == before  # the dry run writes nothing
    assert dry["rows"] == rows and all(n > 0 for n in rows.values())
    skipped = {t: sum(1 for s in dry["skipped"] if s["table"] == t) for t in TABLES}
    assert all(dry["imported"][t] + skipped[t] == rows[t] for t in TABLES), (dry["imported"], dry["skipped"])
    assert dry["skipped"] == []  # every row their code wrote here is importable
    assert dry["letters"]["appended"] == 0 and dry["retired"] == [names.entity_id("srv-am-alpha", "RedFox")]
    wrote = _cli(tmp_path, dc, root, "--write")
    planned = wrote["letters"]["planned"]
    assert wrote["letters"] == {"planned": planned, "appended": planned, "already_present": 0} and planned > 0
    again = _cli(tmp_path, dc, root, "--write")
    assert again["letters"] == {"planned": planned, "appended": 0, "already_present": planned}

    # every agent: the profile's fetch_inbox and dovecote's inbox verb against their fetch_inbox
    dc = open_home(dc.layout.root)  # the roster as the CLI's import left it
    assert view["unlisted_agents"] == [] and len(view["agents"]) == rows["agents"]
    for agent in view["agents"]:
        eid = names.entity_id(names.slugify(agent["project"]), agent["name"])
        theirs = _theirs_of(dc, eid)
        listed = agentmail_mail.fetch_inbox(dc, None, {"project_key": agent["project"], "agent_name": agent["name"],
                                                       "limit": 1000})
        assert sorted(theirs[names.letter_id(r["id"])] for r in listed) == sorted(agent["messages"]), eid
        items = dc.inbox(Inbox(entity_id=eid, include_terminal=True)).items or []
        ours = {"messages": sorted(theirs[i["id"]] for i in items),
                "unread": sorted(theirs[i["id"]] for i in items if not i["seen"]),
                "ack_pending": sorted(theirs[i["id"]] for i in items
                                      if i["response_expected"] and i["state"] == "WAIT")}
        assert ours == {k: sorted(agent[k]) for k in ours}, eid

    # their reservations: active ones active here, released ones released
    leases = {}
    for slug in ("srv-am-alpha", "srv-am-beta"):
        for r in dc.leases(Leases(project=slug, include_ended=True)).to_dict()["leases"]:
            leases[(r["entity"], tuple(r["globs"]))] = (r["state"], r["exclusive"])
    assert leases == {(names.entity_id(names.slugify(r["project"]), r["agent"]), (r["pattern"],)):
                      ("released" if r["released"] else "active", bool(r["exclusive"]))
                      for r in view["reservations"]}
    assert dc.verify().ok
    kinds = ", ".join(f"{k} {v}" for k, v in wrote["letters_by_kind"].items())
    totals = {k: sum(len(a[k]) for a in view["agents"]) for k in ("messages", "unread", "ack_pending")}
    print(f"their archive ({PACKAGE}, {view['calls']} tool calls, built in {built:.1f}s): rows "
          + ", ".join(f"{t} {n}" for t, n in rows.items())
          + f"; letters appended {wrote['letters']['appended']} ({kinds}), then 0 of {planned}; agents compared "
          f"{len(view['agents'])}, all equal (messages {totals['messages']}, unread {totals['unread']}, "
          f"ack pending {totals['ack_pending']}); reservations {len(view['reservations'])}; "
          f"{time.monotonic() - began:.1f}s in all")

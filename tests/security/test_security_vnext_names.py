"""Path tricks inside a vNext folder given to ``import vnext`` (issue 13): skipped or refused, never followed.

The names of the security table (``tests/security/test_security_names.py``) are put where a vNext folder carries a
name: as the ``to`` and ``from`` of delivered envelopes, as file names in ``intake/processed``, as agent
folders (``agents/<name>/inbox``, ``acks``) and as tracker recipients. A name that is no entity id is
skipped with an ``invalid_name`` note; one that is a case variant of a registered agent is no registered
entity, so ``--write`` is refused whole (``unknown_recipient``). Either way no box appears for a hostile
name, nothing outside the home changes (the vNext folder included), and no run shows a traceback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_security_names import HOSTILE

from dovecote.errors import Refusal
from dovecote.handle.api import Principal
from dovecote.mcp.server import Face
from dovecote.mcp.tools import TOOLS
from helpers import run_cli, snapshot
from vnext_fixture import T0, VnextDir, home_with_agents, iso

pytestmark = pytest.mark.files_only

#: A case variant of a registered agent: a valid entity id, but not a registered one.
TWINS = ("AYA", "Aya")


def file_safe(name: str) -> bool:
    """A name a folder or file can have (no separator, NUL or dot entry; under NAME_MAX with a suffix)."""
    return "/" not in name and "\x00" not in name and name not in (".", "..") and len(name.encode()) < 240


def hostile_tree(root: Path, names: tuple[str, ...]) -> None:
    """A vNext folder whose every name slot holds one of ``names`` (envelopes built as send_mail.py writes)."""
    v = VnextDir(root)
    pending, processed = root / "intake" / "pending", root / "intake" / "processed"
    for name in names:
        for frm, to in (("aya", name), (name, "tariq")):
            env = v.send(frm, to)
            os.replace(pending / f"{env['envelope_id']}.json", processed / f"{env['envelope_id']}.json")
        if not file_safe(name):
            continue
        env = v.send("aya", "tariq")
        body = json.dumps(env).encode()
        os.replace(pending / f"{env['envelope_id']}.json", processed / f"{name}.json")  # a hostile file name
        for folder in ("inbox", "acks"):
            (root / "agents" / name / folder).mkdir(parents=True, exist_ok=True)
            (root / "agents" / name / folder / f"{env['envelope_id']}.json").write_bytes(body)
        tracker: dict[str, Any] = {
            "delivery_id": f"del_{len(name)}", "envelope_id": env["envelope_id"], "sender": "aya",
            "recipient": name, "delivered_ts": iso(T0), "ack_due_ts": iso(T0), "ack_status": "pending",
            "escalation_target": name,
        }
        (root / "haiku" / "tracking" / f"{name}.json").write_text(json.dumps(tracker))


def outside(tmp: Path, home: Path) -> dict[str, bytes]:
    return {k: b for k, b in snapshot(tmp).items() if not (tmp / k).is_relative_to(home)}


@pytest.mark.parametrize("twins", [False, True], ids=["skipped", "refused"])
def test_hostile_names_in_a_vnext_folder_are_skipped_or_refused_and_nothing_lands_outside_the_home(
    tmp_path: Path, twins: bool
) -> None:
    names = tuple(n for n in HOSTILE if n.lower() != "ent_builder") + (TWINS if twins else ())
    root = tmp_path / "mailbox"
    hostile_tree(root, names)
    dc = home_with_agents(tmp_path)
    home = dc.layout.root
    registered = {e.id for e in dc.roster.entities}
    before = outside(tmp_path, home)
    dry = run_cli(tmp_path, "import", "vnext", str(root), "--json", home=home)
    assert dry.returncode == 0 and b"Traceback" not in dry.stderr, dry.stderr
    got = json.loads(dry.stdout)
    skipped = {n["reason"] for n in got["notes"]}
    assert "invalid_name" in skipped, got["notes"]
    assert sorted(got["entities_missing"]) == sorted(TWINS if twins else ())
    r = run_cli(tmp_path, "import", "vnext", str(root), "--write", home=home)
    err = r.stderr.decode()
    assert "Traceback" not in err
    if twins:
        assert r.returncode == 2 and err.startswith("Error: unknown_recipient:"), err
    else:
        assert r.returncode == 0, err
    local = Principal("aya", "operator", local=True)  # the one principal the MCP tool serves: the local operator
    try:
        anyio.run(Face(dc).call, TOOLS["import_vnext"], local, {"path": str(root), "write": True})
    except Refusal as refused:
        assert twins and refused.reason == "unknown_recipient", refused
    else:
        assert not twins
    folder = home / "boxes" / "entity"
    boxes = {p.name for p in folder.iterdir()} if folder.exists() else set()
    assert boxes <= registered, boxes - registered  # no box for a hostile name, nowhere else either
    assert boxes == (set() if twins else {"aya", "tariq"})  # the sound envelopes (in hostile file names) came in
    assert outside(tmp_path, home) == before

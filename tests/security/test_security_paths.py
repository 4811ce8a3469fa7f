"""Path tricks by symlink and ``..`` where dovecote writes outside a box (issue 13).

``hooks install`` writes into a project that may be a cloned repository: a ``.claude`` folder or
``settings.json`` that is a link is refused (``unsafe_path``), so its target is never read into the
backup or the diff, nor written; ``--project-dir`` with ``..`` writes where the path really leads, and
prints that place. A roster ``config.toml`` that is a link is never edited (the rename would cut it off
from its target). An intake file that is a link is quarantined (``unsafe_path``) unread: its target,
anywhere on the machine, is never delivered as an envelope. The view's ``agent-mailboxes`` folder as a link
is refused like the folders below it (``tests/ops/tree/test_view_hands.py`` has those).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliveryhelpers import delivery_home, drop, envelope, intake_files, kinds
from dovecote.handle.api import Dovecote
from dovecote.verbs import Intake
from helpers import run_cli, snapshot
from mailhelpers import ENTITY, mail_home, send, view_root

pytestmark = pytest.mark.files_only

SECRET = b'{"hooks": {}, "secret": "the target of a link"}\n'


def _outside(tmp: Path) -> Path:
    out = tmp / "outside"
    out.mkdir()
    (out / "settings.json").write_bytes(SECRET)
    return out


def _hooks(tmp: Path, dc: Dovecote, project_dir: str, *more: str) -> tuple[int, str, str]:
    r = run_cli(tmp, "hooks", "install", "--agent", "claude-code", "--entity-id", ENTITY,
                "--project-dir", project_dir, *more, home=dc.layout.root)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


@pytest.mark.parametrize("dry_run", [False, True], ids=["install", "dry-run"])
@pytest.mark.parametrize("link", [".claude", "settings.json"])
def test_hooks_install_refuses_a_linked_claude_folder_or_settings_file(tmp_path: Path, link: str,
                                                                       dry_run: bool) -> None:
    dc = mail_home(tmp_path)
    out = _outside(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    if link == ".claude":
        (project / ".claude").symlink_to(out, target_is_directory=True)
    else:
        (project / ".claude").mkdir()
        (project / ".claude" / "settings.json").symlink_to(out / "settings.json")
    before = snapshot(tmp_path)
    code, stdout, err = _hooks(tmp_path, dc, str(project), *(["--dry-run"] if dry_run else []))
    assert code == 2 and err.startswith("Error: unsafe_path:") and "Traceback" not in err, err
    assert "secret" not in stdout + err  # the target's bytes are not shown in a diff either
    assert snapshot(tmp_path) == before  # no backup beside the target, the link left as it was
    assert (out / "settings.json").read_bytes() == SECRET and sorted(p.name for p in out.iterdir()) == ["settings.json"]


def test_hooks_install_writes_where_a_dotdot_path_leads_and_says_so(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    code, stdout, err = _hooks(tmp_path, dc, str(tmp_path / "a" / ".." / "b"), "--json")
    assert code == 0, err
    assert json.loads(stdout)["path"] == str(tmp_path / "b" / ".claude" / "settings.json")
    assert (tmp_path / "b" / ".claude" / "settings.json").is_file() and not (tmp_path / "a" / ".claude").exists()


@pytest.mark.parametrize("value", ["../../no/such/dir", "a\x00b", "{tmp}/afile"])
def test_hooks_install_refuses_a_project_dir_that_is_no_directory(tmp_path: Path, value: str) -> None:
    dc = mail_home(tmp_path)
    (tmp_path / "afile").write_text("x\n")
    before = snapshot(tmp_path)
    code, _, err = _hooks(tmp_path, dc, value.replace("{tmp}", str(tmp_path)))
    assert code == 2 and err.startswith("Error: invalid_field:") and "Traceback" not in err, err
    assert snapshot(tmp_path) == before


def test_a_roster_that_is_a_link_is_never_edited_through(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    config = dc.layout.root / "config.toml"
    target = tmp_path / "dotfiles-config.toml"
    target.write_bytes(config.read_bytes())
    config.unlink()
    config.symlink_to(target)
    before = target.read_bytes()
    for argv in (["entity", "add", "ent_new"], ["entity", "remove", ENTITY], ["project", "add", "p", "--root", "r"]):
        r = run_cli(tmp_path, *argv, home=dc.layout.root)
        assert r.returncode == 2 and r.stderr.startswith(b"Error: unsafe_path:"), r.stderr
        assert config.is_symlink() and target.read_bytes() == before
    r = run_cli(tmp_path, "entity", "list", home=dc.layout.root)  # reading through it is fine
    assert r.returncode == 0 and ENTITY in r.stdout.decode()


def test_a_roster_lock_that_is_a_link_creates_nothing_at_its_target(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    lock = dc.layout.root / "config.toml.lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(tmp_path / "created-elsewhere")
    r = run_cli(tmp_path, "entity", "add", "ent_new", home=dc.layout.root)
    assert r.returncode == 1 and b"Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "created-elsewhere").exists()


@pytest.mark.parametrize("process", [False, True], ids=["in-process", "real-process"])
def test_an_intake_file_that_is_a_link_is_quarantined_unread(tmp_path: Path, process: bool) -> None:
    dc = delivery_home(tmp_path)
    good = envelope(subject="a real one")
    drop(dc, good)
    elsewhere = tmp_path / "elsewhere.json"  # a sound envelope: following the link would deliver it
    elsewhere.write_bytes(json.dumps(envelope(subject="read through a link")).encode())
    pending = dc.layout.root / "intake" / "pending"
    (pending / "evil.json").symlink_to(elsewhere)
    before = elsewhere.read_bytes()
    r = run_cli(tmp_path, "intake", "--json", home=dc.layout.root, process=process)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
    run = json.loads(r.stdout)
    assert (run["processed"], run["quarantined"]) == (1, 1), run
    assert run["quarantine"][0]["file"] == "evil.json" and run["quarantine"][0]["reason"] == "unsafe_path"
    assert [t["envelope"]["subject"] for t in kinds(dc, "tariq", "task")] == ["a real one"]
    assert elsewhere.read_bytes() == before
    moved = dc.layout.root / "intake" / "quarantine" / "evil.json"
    assert moved.is_symlink() and intake_files(dc, "pending") == []  # the link moved, its target stayed put
    assert dc.intake(Intake()).seen == 0


def test_a_linked_agent_mailboxes_folder_is_refused_by_view(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    send(dc, "hello")
    out = tmp_path / "outside"
    out.mkdir()
    folder = view_root(dc).parent
    folder.parent.mkdir(parents=True)
    folder.symlink_to(out, target_is_directory=True)
    before = snapshot(dc.layout.root)
    for argv in (["view", "--current-tic", "101"], ["view", ENTITY, "--current-tic", "101"]):
        r = run_cli(tmp_path, *argv, home=dc.layout.root)
        assert r.returncode == 2 and r.stderr.startswith(b"Error: unsafe_path:"), r.stderr
    assert list(out.iterdir()) == [] and snapshot(dc.layout.root) == before

"""The delivery commands as a user runs them: intake of a vNext mailbox's folder, the mailman's loop, trackers."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

import orjson
import pytest

from deliveryhelpers import delivery_home, drop, envelope, intake_files, kinds
from helpers import DOVECOTE_BIN, cli_env, run_cli

pytestmark = pytest.mark.files_only


def test_intake_reads_a_vnext_mailbox_intake_folder_in_place(tmp_path: Path) -> None:
    dc = delivery_home(tmp_path)
    mailbox = tmp_path / "mailbox" / "intake"
    envs = [envelope(to="kimi"), envelope(to="heru", type="work_complete", parent_id=None)]
    for env in envs:
        drop(dc, env, folder=mailbox)
    r = run_cli(tmp_path, "intake", "--dir", str(mailbox), "--json", home=dc.layout.root)
    assert r.returncode == 0, r.stderr
    out = orjson.loads(r.stdout)
    assert (out["seen"], out["processed"], out["quarantined"]) == (2, 2, 0)
    assert intake_files(dc, "processed", folder=mailbox) == sorted(f"{e['envelope_id']}.json" for e in envs)
    (done,) = kinds(dc, "heru", "response")
    assert (done["response_type"], done["status"], done["parent_id"]) == ("result", "completed", "wi-7")
    assert done["parent_inferred"] == {"alias": "work_complete", "from": "thread_id"}
    text = run_cli(tmp_path, "intake", "--dir", str(mailbox), home=dc.layout.root).stdout.decode()
    assert text.startswith(f"intake {mailbox}: 0 seen, 0 delivered")


def test_status_counts_every_intake_folder_it_was_given_and_names_one_that_vanished(tmp_path: Path) -> None:
    dc = delivery_home(tmp_path)
    home = dc.layout.root
    mailbox = tmp_path / "mailbox" / "intake"
    drop(dc, b"[]", name="list.json", folder=mailbox)  # never deliverable: quarantined
    drop(dc, envelope(to="kimi"), folder=mailbox)
    drop(dc, envelope(to="heru"))  # one in the home's own folder, still pending
    for _ in range(2):  # a second run lists the folder no second time
        assert run_cli(tmp_path, "intake", "--dir", str(mailbox / "." / ".." / "intake"), home=home).returncode == 0
    r = run_cli(tmp_path, "status", "--json", home=home)  # a new process: the home remembers the folder
    i = orjson.loads(r.stdout)["intake"]
    assert (i["pending"], i["processed"], i["quarantined"], i["entered"]) == (1, 1, 1, 3)
    assert (home / "config.toml").read_text().count(str(mailbox)) == 1  # where: the roster's [intake] dirs
    assert [(f["dir"], f["pending"], f["processed"], f["quarantined"]) for f in i["folders"]] == [
        (str(home / "intake"), 1, 0, 0), (str(mailbox), 0, 1, 1)]
    assert i["quarantine_files"] == [str(mailbox / "quarantine" / "list.json")] and i["unreachable"] == []
    text = run_cli(tmp_path, "status", home=home).stdout.decode()
    assert "intake in 2 folders: 1 pending, 1 processed, 1 quarantined (of 3 entered)" in text
    assert f"  {mailbox}: 0 pending, 1 processed, 1 quarantined" in text
    for path in sorted(mailbox.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    mailbox.rmdir()
    r = run_cli(tmp_path, "status", "--json", home=home)
    assert r.returncode == 0, r.stderr
    i = orjson.loads(r.stdout)["intake"]
    assert i["unreachable"] == [{"dir": str(mailbox), "error": "no such folder"}] and i["quarantined"] == 0
    assert f"  unreachable: {mailbox}: no such folder" in run_cli(tmp_path, "status", home=home).stdout.decode()


def test_trackers_cli_filters_exactly_and_prints_one_line_each(tmp_path: Path) -> None:
    dc = delivery_home(tmp_path)
    home = dc.layout.root
    for wi in ("wi-1", "wi-2", "wi-2"):
        assert run_cli(tmp_path, "send", "--type", "task", "--recipient", "tariq", "--sender", "aya", "--subject",
                       "s", "--work-item-id", wi, home=home).returncode == 0
    r = run_cli(tmp_path, "trackers", "--work-item", "wi-2", "--json", home=home)
    got = orjson.loads(r.stdout)
    assert got["total"] == 2 and {t["work_item_id"] for t in got["trackers"]} == {"wi-2"}
    text = run_cli(tmp_path, "trackers", "--limit", "1", home=home).stdout.decode().splitlines()
    assert len(text) == 3 and text[-1] == "1 of 3 trackers" and "pending, notify disabled" in text[0]
    assert text[1].startswith("  (2 more left out: `") and text[1].endswith(" trackers --limit 3` lists them)")
    assert run_cli(tmp_path, "trackers", "--work-item", "wi", home=home).stdout.decode() == "0 of 0 trackers\n"


def test_mailman_loop_runs_a_pass_every_interval_until_stopped(tmp_path: Path) -> None:
    dc = delivery_home(tmp_path)
    lines: list[bytes] = []
    with subprocess.Popen([str(DOVECOTE_BIN), "mailman", "--loop", "--interval", "0.2"], cwd=tmp_path,
                          env=cli_env(tmp_path, dc.layout.root), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as p:
        out = p.stdout
        assert out is not None
        reader = threading.Thread(target=lambda: lines.extend(iter(out.readline, b"")), daemon=True)
        reader.start()
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not lines:  # the first pass is done (start-up may be slow)
                time.sleep(0.05)
            drop(dc, envelope())
            while time.monotonic() < deadline and not (kinds(dc, "tariq", "task") and len(lines) >= 3):
                time.sleep(0.05)
        finally:
            p.send_signal(signal.SIGINT)
            p.wait(timeout=20)
            reader.join(timeout=5)
        err = p.stderr.read() if p.stderr is not None else b""
    assert len(kinds(dc, "tariq", "task")) == 1, err
    assert p.returncode == 0 and len(lines) >= 3 and b"Traceback" not in err
    assert all(line.startswith(b"mailman ") for line in lines)

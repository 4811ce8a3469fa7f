"""``dovecote-gc-mail`` SIGKILLed at each file operation of a send: nothing it acknowledged is lost, nothing is torn.

A real provider process is killed, the way an agent's session dies, at its k-th file operation
(every ``fileops`` call: open, write, fsync, rename, link...; a wrapper counts them and sends
itself SIGKILL at the chosen one). The send goes to names the roster does not know yet, so
the roster's locked edit is among the points, and the home already holds a message the
provider acknowledged (printed) before. After each kill: every ledger reads cleanly (no torn
line, no line twice), the roster loads, the acknowledged message is still there and found by
``get``, the killed send printed nothing (so gc saw no acknowledgement), at most one copy of it
was delivered, the same send run again succeeds, and ``verify`` passes. ``make test`` kills at
a sample of the points (the first, the last and every 7th, as every crash sweep); ``make stress`` at every one.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from crashsweep import SAMPLE, ledgers
from dovecote.handle.api import open_home
from dovecote.model.addresses import entity
from gchelpers import ExecProvider, go_marshal, provider

pytestmark = pytest.mark.files_only

#: The provider, with every file operation counted; at $GC_KILL_AT it kills itself (0: never; it prints the count).
KILLER = """
import os, signal, sys
from dovecote.util import fileops
at = int(os.environ["GC_KILL_AT"])
seen = 0
class Killer(fileops.FileOps):
    pass
def counted(name):
    real = getattr(fileops.FileOps, name)
    def op(self, *args, **kwargs):
        global seen
        seen += 1
        if seen == at:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, *args, **kwargs)
    return op
for name in [n for n in vars(fileops.FileOps) if not n.startswith("_")]:
    setattr(Killer, name, counted(name))
fileops._active = Killer()
from dovecote.gc.main import main
sys.argv = ["dovecote-gc-mail", *sys.argv[1:]]
status = main()
if at == 0:
    sys.stderr.write(f"file operations: {seen}\\n")
sys.exit(status)
"""

BODY = go_marshal({"from": "erin", "subject": "mid-send", "body": "killed here?"})


def _send(p: ExecProvider, home: Path, at: int) -> subprocess.CompletedProcess[bytes]:
    env = {**p.env, "GC_CITY": str(home.parent), "GC_KILL_AT": str(at)}
    return subprocess.run([sys.executable, "-c", KILLER, "send", "dave"], env=env, cwd=p.cwd, input=BODY,
                          capture_output=True, timeout=60)


def _delivered(home: Path) -> list[str]:
    """The ids of every message the killed send's text is in, in dave's box."""
    dc = open_home(home)
    if dc.roster.entity("dave") is None:
        return []
    return [x.id for x in dc.store.read(entity("dave")).letters if b"killed here?" in x.raw]


def _points(depth: str, points: int) -> list[int]:
    return list(range(1, points + 1)) if depth == "full" else sorted({1, points, *range(SAMPLE, points + 1, SAMPLE)})


@pytest.mark.parametrize("depth", [pytest.param("sample", id="sample"),
                                   pytest.param("full", id="full", marks=[pytest.mark.stress])])
def test_a_send_killed_at_any_file_operation_loses_nothing_acknowledged(tmp_path: Path, depth: str) -> None:
    p = provider(tmp_path)
    acked = p.send("alice", "bob", "acknowledged", "printed before the kill")
    base = Path(p.env["GC_CITY"]) / ".dovecote"
    work = tmp_path / "work" / ".dovecote"
    shutil.copytree(base, work)
    counted = _send(p, work, 0)
    assert counted.returncode == 0, counted.stderr
    points = int(counted.stderr.decode().split()[-1])
    assert points > 10  # the roster's edit, the delivery, the sent record, their fsyncs
    reference = json.loads(counted.stdout)
    killed = 0
    for k in _points(depth, points):
        shutil.rmtree(work.parent)
        shutil.copytree(base, work)
        r = _send(p, work, k)
        assert r.returncode == -signal.SIGKILL and r.stdout == b"", (k, r)
        killed += 1
        for name, reader in ledgers(work):
            assert reader.torn is None and not reader.defects and reader.duplicates == 0, (k, name)
        assert len(_delivered(work)) <= 1, k  # unacknowledged: there once, or not at all
        after = ExecProvider({**p.env, "GC_CITY": str(work.parent)}, cwd=p.cwd)
        assert after.get(acked.id).body == "printed before the kill", k
        again = after.send("erin", "dave", "mid-send", "killed here?")  # gc's user sends again
        assert (again.from_, again.to) == (reference["from"], reference["to"]), k
        assert again.id in {m.id for m in after.inbox("dave") or []}, k
        assert open_home(work).verify().ok, k
    print(f"\ncrash points: gc-mail send: {points} points, {killed} real processes killed")
    assert killed == len(_points(depth, points))

"""Path tricks by symlink (issue 13): a box ledger replaced by a symlink is never appended through.

A link to another box's ledger would file one box's letters in another's, and
(before the ledger opened with ``O_NOFOLLOW``) a send between the two hung for
good: both boxes locked the one file. A link out of the home would write there.
Each is now refused with ``io_error`` naming the link, and the target is unchanged.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dovecote.verbs import EntityAdd, Message
from helpers import new_home


def two_boxes(tmp: Path) -> tuple[Path, Path, Path]:
    dc = new_home(tmp)
    for e in ("ent_a", "ent_b"):
        dc.add_entity(EntityAdd(entity_id=e))
    dc.send(Message(sender="ent_a", recipient="ent_b", subject="hello", current_tic=1))
    dc.send(Message(sender="ent_b", recipient="ent_a", subject="hello", current_tic=1))
    boxes = dc.layout.boxes / "entity"
    return dc.layout.root, boxes / "ent_a" / "letters.jsonl", boxes / "ent_b" / "letters.jsonl"


@pytest.mark.parametrize("where", ["another_box", "outside_home"])
def test_a_ledger_replaced_by_a_symlink_is_refused_and_its_target_untouched(tmp_path: Path, where: str) -> None:
    home, a, b = two_boxes(tmp_path)
    target = a if where == "another_box" else tmp_path / "outside.jsonl"
    if where == "outside_home":
        target.write_bytes(b"")
    before = target.read_bytes()
    b.unlink()
    b.symlink_to(target)
    r = subprocess.run(  # a real process with a timeout: the shared-file case used to hang on its own lock
        [sys.executable, "-m", "dovecote", "send", "--recipient", "ent_b", "--sender", "ent_a", "--subject", "evil"],
        env={"DOVECOTE_HOME": str(home), "PATH": "/usr/bin:/bin"}, capture_output=True, timeout=60,
    )
    assert r.returncode == 1, r.stderr
    assert b"io_error" in r.stderr and b"is a symlink" in r.stderr
    assert b"Traceback" not in r.stderr
    assert target.read_bytes() == before  # nothing written through the link
    assert b.is_symlink()  # and the link itself left for the person to remove

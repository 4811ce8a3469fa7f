"""The session-start hook's path stays lean: ``inbox --format injection`` right after a new letter
(its rendering stale, its fold snapshot there) and ``hook session-start`` load neither ``hashlib``
(``dovecote.util.digests``) nor ``tomllib`` (``roster_cache``), nor Typer or Rich; neither defines a dataclass:
a dataclass compiles its methods from source when its module is imported (~4.6 M instructions each,
against ~0.3 M for a ``msgspec.Struct``), so the records the path imports are Structs. Nor does either compile
the symptom rules' patterns: neither reads a field report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dovecote.model.results import builtins
from dovecote.verbs import EntityAdd, Inbox, Message, Move
from helpers import new_home

#: Modules the hot path must not import (each cost millions of instructions on a cold call).
HEAVY = ("hashlib", "tomllib", "typer", "rich", "click")
_RUN = (
    "import sys\n"
    "sys.argv = ['dovecote', *sys.argv[1:]]\n"
    "from dovecote.cli import entry\n"
    "try:\n"
    "    entry.main()\n"
    "finally:\n"
    "    made = [f'dataclass:{n}.{k}' for n, m in list(sys.modules.items()) if n.startswith('dovecote')\n"
    "            for k, v in vars(m).items() if isinstance(v, type) and '__dataclass_fields__' in vars(v)\n"
    "            and v.__module__ == n]\n"
    "    s = sys.modules.get('dovecote.derive.cases.symptoms')\n"
    "    made += ['compiled:symptom rules'] if s and s._by_class.cache_info().currsize else []\n"
    f"    sys.stderr.write('\\nloaded:' + ','.join([m for m in {HEAVY!r} if m in sys.modules] + made) + '\\n')\n"
)


def _loaded(home: Path, *args: str, stdin: bytes = b"") -> list[str]:
    env = {**os.environ, "DOVECOTE_HOME": str(home)}
    r = subprocess.run([sys.executable, "-c", _RUN, *args], env=env, input=stdin, capture_output=True, check=True,
                       timeout=120)
    assert r.stdout, r.stderr.decode()
    last = r.stderr.decode().rstrip().rsplit("\n", 1)[-1]
    assert last.startswith("loaded:"), r.stderr.decode()
    return [m for m in last.removeprefix("loaded:").split(",") if m]


def test_the_injection_after_a_new_letter_and_the_session_start_hook_stay_lean(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    for i in range(3):
        dc.send(Message(sender="ent_a", recipient="ent_b", subject=f"s{i}", priority="urgent", current_tic=1))
    item = builtins(dc.inbox(Inbox(entity_id="ent_b", current_tic=5)))["items"][0]["id"]
    home = dc.layout.root
    argv = ("inbox", "ent_b", "--format", "injection", "--current-tic", "5")
    hook = ("hook", "session-start", "--entity", "ent_b")
    _loaded(home, *argv)  # the first read: the snapshot, the rendering and the roster's document written
    _loaded(home, *hook, stdin=b"{}")
    for kind in ("seen", "claim"):
        dc.move(Move(kind=kind, entity_id="ent_b", ref=item, current_tic=5))
        assert _loaded(home, *argv) == []  # one new letter to fold: the rendering is stale
        assert _loaded(home, *argv) == []  # the cached rendering
        assert _loaded(home, *hook, stdin=b"{}") == []  # its own modules (tokens, distribution...) too

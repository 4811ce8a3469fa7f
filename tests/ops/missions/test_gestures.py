"""The gesture passphrase (``ops.missions.gestures``): kept only as a slow salted hash in a 0600 file of the home,
never in the roster; changing it needs the current one; a damaged key file refuses every gesture rather than
obeying it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.ops.missions import gestures
from helpers import new_home
from missionhelpers import PASSPHRASE

pytestmark = pytest.mark.files_only


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    return new_home(tmp_path)


def refusal(dc: Dovecote, passphrase: str | None, gesture: str | None = "terminal") -> str:
    with pytest.raises(Refusal) as e:
        gestures.check(dc.context, gesture, passphrase, "mission archive")
    return f"{e.value.reason}: {e.value.detail}"


def test_the_key_is_a_slow_salted_hash_in_a_0600_file_of_the_home(dc: Dovecote, tmp_path: Path) -> None:
    assert not dc.gesture_key_is_set()
    assert "gesture-key set" in refusal(dc, PASSPHRASE)
    assert builtins(dc.gesture_key_set(PASSPHRASE)) == {"path": str(dc.layout.root / "gesture-key.json"),
                                                        "changed": False}
    key = dc.layout.root / "gesture-key.json"
    assert (key.stat().st_mode & 0o777) == 0o600 and dc.gesture_key_is_set()
    rec = orjson.loads(key.read_bytes())
    assert rec["scheme"] == "scrypt" and rec["n"] >= 2**15 and rec["r"] == 8 and len(bytes.fromhex(rec["salt"])) == 16
    assert PASSPHRASE.encode() not in key.read_bytes()
    assert b"gesture" not in dc.layout.config.read_bytes()  # never in the roster
    other = new_home(tmp_path / "other")
    other.gesture_key_set(PASSPHRASE)
    again = orjson.loads((other.layout.root / "gesture-key.json").read_bytes())
    assert (again["salt"], again["hash"]) != (rec["salt"], rec["hash"])  # salted: the same passphrase, new bytes
    assert gestures.check(dc.context, "terminal", PASSPHRASE, "mission archive") == "terminal"
    assert gestures.check(dc.context, "human-view", PASSPHRASE, "mission archive") == "human-view"
    assert refusal(dc, None).startswith("human_gesture_required: mission archive needs the gesture passphrase")
    assert "not the gesture passphrase" in refusal(dc, PASSPHRASE + " ")
    assert "no agent or token" in refusal(dc, PASSPHRASE, gesture="rest")


def test_changing_the_key_needs_the_current_one(dc: Dovecote, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(gestures.COST, "n", 2**10)  # the default's cost is the test above's
    dc.gesture_key_set(PASSPHRASE)
    key = dc.layout.root / "gesture-key.json"
    first = key.read_bytes()
    for old in (None, "", "a guess"):
        with pytest.raises(Refusal) as e:
            dc.gesture_key_set("an agent's own", old=old)
        assert e.value.reason == "human_gesture_required" and key.read_bytes() == first
    with pytest.raises(Refusal) as e:
        dc.gesture_key_set("", old=PASSPHRASE)
    assert e.value.reason == "missing_field" and key.read_bytes() == first
    assert builtins(dc.gesture_key_set("a second long one", old=PASSPHRASE))["changed"] is True
    assert "not the gesture passphrase" in refusal(dc, PASSPHRASE)
    assert gestures.check(dc.context, "terminal", "a second long one", "mission archive") == "terminal"


def _scrypt(n: int, salt: str) -> bytes:
    return orjson.dumps({"scheme": "scrypt", "n": n, "r": 8, "p": 1, "salt": salt, "hash": "00"})


@pytest.mark.parametrize("damage", [b"{not json", b"[]", b'{"scheme": "md5"}', _scrypt(2, "00"), _scrypt(2**30, "00"),
                                    _scrypt(2**15, "zz")])
def test_a_damaged_key_file_refuses_every_gesture(dc: Dovecote, damage: bytes) -> None:
    (dc.layout.root / "gesture-key.json").write_bytes(damage)
    assert "is damaged" in refusal(dc, PASSPHRASE)
    with pytest.raises(Refusal) as e:
        dc.gesture_key_set("a new one", old=PASSPHRASE)
    assert e.value.reason == "human_gesture_required"


def test_the_cli_never_reads_the_passphrase_from_stdin_when_echo_cannot_be_turned_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """getpass's fallback (no terminal it can silence) reads stdin with echo on: refused, stdin left unread."""
    import getpass
    import io
    import sys

    from dovecote.cli import cmd_gestures

    piped = io.StringIO(PASSPHRASE + "\n")
    monkeypatch.setattr(cmd_gestures, "_terminal", lambda what: None)  # as if /dev/tty opened
    monkeypatch.setattr(getpass, "getpass", getpass.fallback_getpass)  # ... but its echo could not be turned off
    monkeypatch.setattr(sys, "stdin", piped)
    with pytest.raises(Refusal) as e:
        cmd_gestures.typed("gesture passphrase: ", "mission archive")
    assert e.value.reason == "human_gesture_required" and "echo" in e.value.detail
    assert piped.tell() == 0

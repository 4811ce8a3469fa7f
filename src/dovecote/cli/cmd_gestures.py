"""The gesture passphrase at the terminal: ``dovecote gesture-key set``, and the prompt of each human gesture.

A human gesture (``mission archive``, ``receipt import``) needs the passphrase
the person set, typed with echo off at the controlling terminal (``getpass``
opens ``/dev/tty``, never stdin, so a pipe or a file cannot supply it, and no
option or environment variable is read for it). The terminal itself proves
nothing (a program can drive a pseudo-terminal and read what is printed on
it); the secret does, and ``ops.missions.gestures.check`` is what checks it.
"""

from __future__ import annotations

import getpass
import os
import warnings
from typing import Any

from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, opened
from dovecote.cli.output import show
from dovecote.errors import Refusal


def _terminal(what: str) -> None:
    """``human_gesture_required`` unless this process has a controlling terminal to type the passphrase at."""
    try:
        os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
    except OSError:
        raise Refusal("human_gesture_required", f"{what} needs the gesture passphrase typed at a terminal (or the "
                                                "Human View's form); this process has no terminal") from None


def typed(prompt: str, what: str) -> str:
    """What the person types at the terminal after ``prompt``, echo off; a closed input is a refusal."""
    _terminal(what)
    with warnings.catch_warnings():
        # getpass falls back to stdin, echo on, when it cannot turn the terminal's echo off: never read that
        warnings.simplefilter("error", getpass.GetPassWarning)
        try:
            return getpass.getpass(prompt)
        except getpass.GetPassWarning:
            raise Refusal("human_gesture_required", f"{what}: the terminal's echo cannot be turned off, so the "
                                                    "passphrase is not asked for here") from None
        except EOFError:
            raise Refusal("human_gesture_required", f"{what}: no passphrase was typed") from None


def passphrase_for(what: str, mission_id: str, key_is_set: bool) -> str | None:
    """The gesture passphrase for ``what`` on ``mission_id``, typed at the terminal; None when the home has
    none set (the handle then refuses, saying how to set one) so nobody is asked for what does not exist."""
    return typed(f"{what} {mission_id}: gesture passphrase: ", what) if key_is_set else None


def gesture_key_set_cmd(json: JsonOpt = False) -> None:
    """Set the gesture passphrase human gestures need.

    A person types it for each human gesture; changing it needs the current one.

    Typed twice with echo off at the terminal; kept only as a slow salted hash
    (scrypt) in gesture-key.json in the home, mode 0600.
    """
    dc = opened()
    what = "gesture-key set"
    old = typed("current gesture passphrase: ", what) if dc.gesture_key_is_set() else None
    new = typed("new gesture passphrase: ", what)
    if new and typed("the new gesture passphrase again: ", what) != new:
        raise Refusal("invalid_field", "the two new passphrases differ: nothing changed")
    show(dc.gesture_key_set(new, old=old), json=json, text=_set_text)


def _set_text(d: dict[str, Any]) -> str:
    return f"gesture passphrase {'changed' if d['changed'] else 'set'} ({d['path']})\n"


def register(app: Typer) -> None:
    key = Typer(help="The gesture passphrase human gestures need.", no_args_is_help=True)
    key.command("set")(gesture_key_set_cmd)
    app.add_typer(key, name="gesture-key")

"""A program run with a pty as its controlling terminal, as a person's shell runs it: the human gestures read
their passphrase from the terminal with echo off (never stdin), so a test types it there."""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import termios
import time
from pathlib import Path


def at_terminal(argv: list[str], env: dict[str, str], cwd: Path, *answers: tuple[bytes, str],
                timeout: float = 60) -> tuple[int, str]:
    """Run ``argv`` with a pty as its controlling terminal (a new session); type each answer once its prompt
    shows, in order; (exit code, everything the terminal showed)."""
    master, slave = os.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                            start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    todo, seen = list(answers), 0
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            if todo and todo[0][0] in out[seen:]:
                prompt, typed = todo.pop(0)
                seen = out.index(prompt, seen) + len(prompt)
                os.write(master, typed.encode() + b"\n")
            if proc.poll() is not None and not ready:
                break
    finally:
        os.close(master)
        if proc.poll() is None:  # the deadline passed: the test fails on its exit code, not on a stray process
            proc.kill()
    return proc.wait(timeout=30), out.decode(errors="replace")

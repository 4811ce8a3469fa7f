"""A small Python mirror of Gas City's exec mail provider (``internal/mail/exec``), for the gc tests.

It runs the installed ``dovecote-gc-mail`` exactly as gc runs a provider: ``<script> <op> [arg]``
with no shell, one compact JSON object on stdin for ``send`` and ``reply`` (Go's ``json.Marshal``:
every key present, ``<``, ``>`` and ``&`` escaped) and an empty stdin otherwise, a 30 s limit
after which the process is killed, ``ensure-running`` once before the first operation (its
outcome ignored). It reads the answer as gc does: trailing newlines trimmed; exit 2 is
"unknown operation", an empty success whatever was printed; any other failure is an error
whose text is stderr, ``already archived`` in an archive's error is ``AlreadyArchived`` and
``gc-mail-error:not-found`` is ``NotFound``. Messages are decoded as Go's ``encoding/json``
decodes into ``mail.Message``: key names matched case-insensitively, unknown keys ignored,
``null`` a zero value, a wrong type for a known key an error, ``created_at`` parsed strictly
as RFC 3339 with a zone; an empty answer is a nil list (``None``), a decode error for one message.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

GC_MAIL_BIN = Path(sys.executable).parent / "dovecote-gc-mail"
#: gc's limit on one provider call (on Linux), after which it kills the process.
TIMEOUT_S = 30.0
#: Go's time.RFC3339 as ``time.Parse`` accepts it: a zone is required (``Z`` or ``±hh:mm``).
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


class ProviderError(Exception):
    """The provider failed (gc's ``exec mail provider <script> <op> <arg>: <stderr>``)."""


class AlreadyArchived(ProviderError):
    """gc's ``mail.ErrAlreadyArchived``."""


class NotFound(ProviderError):
    """gc's ``mail.ErrNotFound``."""


class DecodeError(ProviderError):
    """The provider's stdout is not what gc can decode."""


@dataclass
class Message:
    """gc's ``mail.Message``: every field at its Go zero value unless the JSON set it."""

    id: str = ""
    from_: str = ""
    to: str = ""
    subject: str = ""
    body: str = ""
    created_at: datetime = datetime(1, 1, 1, tzinfo=UTC)
    read: bool = False
    thread_id: str = ""
    reply_to: str = ""
    priority: int = 0
    cc: list[str] = field(default_factory=list)
    rig: str = ""


_STRINGS = ("id", "from", "to", "subject", "body", "thread_id", "reply_to", "rig")


def go_marshal(obj: dict[str, str]) -> bytes:
    """``json.Marshal`` of gc's send body: compact, HTML characters escaped, no trailing newline."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def decode_message(value: Any) -> Message:
    """One JSON value into a ``Message`` as Go would (see the module docstring)."""
    if value is None:
        return Message()
    if not isinstance(value, dict):
        raise DecodeError(f"cannot unmarshal {type(value).__name__} into Go value of type mail.Message")
    m = Message()
    for key, v in value.items():
        k = key.lower()
        if v is None:
            continue
        if k in _STRINGS:
            if not isinstance(v, str):
                raise DecodeError(f"json: cannot unmarshal {type(v).__name__} into field Message.{k} of type string")
            setattr(m, "from_" if k == "from" else k, v)
        elif k == "created_at":
            if not isinstance(v, str) or not RFC3339.match(v):
                raise DecodeError(f"parsing time {v!r} as RFC 3339")
            m.created_at = datetime.fromisoformat(v.replace("Z", "+00:00"))
        elif k == "read":
            if not isinstance(v, bool):
                raise DecodeError(f"json: cannot unmarshal {type(v).__name__} into field Message.read of type bool")
            m.read = v
        elif k == "priority":
            if not isinstance(v, int) or isinstance(v, bool):
                raise DecodeError(f"json: cannot unmarshal {type(v).__name__} into field Message.priority of type int")
            m.priority = v
        elif k == "cc":
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise DecodeError("json: cannot unmarshal into field Message.cc of type []string")
            m.cc = v
    return m


@dataclass
class Call:
    """One process run: its argv, exit status, stdout and stderr, and how long it took."""

    argv: list[str]
    status: int
    out: str
    err: str
    seconds: float


@dataclass
class ExecProvider:
    """gc's ``exec.Provider`` over ``dovecote-gc-mail`` with ``env``; ``calls`` records every process run."""

    env: dict[str, str]
    script: Path = GC_MAIL_BIN
    cwd: Path | None = None
    started: bool = False
    calls: list[Call] = field(default_factory=list)

    def run(self, op: str, *args: str, stdin: bytes = b"") -> str:
        """One call as gc makes it; stdout trimmed of trailing newlines (exit 2: empty)."""
        if not self.started:
            self.started = True
            self._run(["ensure-running"], b"")  # gc discards its output, status and errors
        call = self._run([op, *args], stdin)
        if call.status == 2:
            return ""
        if call.status != 0:
            text = call.err.strip() or f"exit status {call.status}"
            if op in ("archive", "delete") and "already archived" in text:
                raise AlreadyArchived(text)
            if "gc-mail-error:not-found" in text:
                raise NotFound(text)
            raise ProviderError(f"exec mail provider {self.script} {op} {' '.join(args)}: {text}")
        return call.out.rstrip("\n")

    def _run(self, argv: list[str], stdin: bytes) -> Call:
        import time

        start = time.monotonic()
        full = [str(self.script), *argv]
        proc = subprocess.Popen(full, env=self.env, cwd=self.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            out, err = proc.communicate(stdin, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate(timeout=2)
            raise ProviderError(f"{' '.join(full)}: timed out after {TIMEOUT_S:.0f}s") from None
        call = Call(full, proc.returncode, out.decode(), err.decode(), time.monotonic() - start)
        self.calls.append(call)
        return call

    # -- the Provider interface ------------------------------------------------------------

    def _one(self, text: str) -> Message:
        if not text:
            raise DecodeError("unexpected end of JSON input")
        return decode_message(json.loads(text))

    def _list(self, text: str) -> list[Message] | None:
        if not text:
            return None
        value = json.loads(text)
        if value is None:
            return None
        if not isinstance(value, list):
            raise DecodeError("cannot unmarshal object into Go value of type []mail.Message")
        return [decode_message(v) for v in value]

    def send(self, sender: str, to: str, subject: str, body: str) -> Message:
        return self._one(self.run("send", to, stdin=go_marshal({"from": sender, "subject": subject, "body": body})))

    def inbox(self, recipient: str) -> list[Message] | None:
        return self._list(self.run("inbox", recipient))

    def check(self, recipient: str) -> list[Message] | None:
        return self._list(self.run("check", recipient))

    def all(self, recipient: str) -> list[Message] | None:
        return self._list(self.run("all", recipient))

    def get(self, mid: str) -> Message:
        return self._one(self.run("get", mid))

    def read(self, mid: str) -> Message:
        return self._one(self.run("read", mid))

    def mark_read(self, mid: str) -> None:
        self.run("mark-read", mid)

    def mark_unread(self, mid: str) -> None:
        self.run("mark-unread", mid)

    def archive(self, mid: str) -> None:
        self.run("archive", mid)

    def delete(self, mid: str) -> None:
        self.run("delete", mid)

    def archive_many(self, ids: list[str]) -> list[tuple[str, ProviderError | None]]:
        """gc's ``ArchiveMany`` over exec: one ``archive`` a id, results in input order (none for no ids)."""
        results: list[tuple[str, ProviderError | None]] = []
        for mid in ids:
            try:
                self.archive(mid)
                results.append((mid, None))
            except ProviderError as e:
                results.append((mid, e))
        return results

    def reply(self, mid: str, sender: str, subject: str, body: str) -> Message:
        return self._one(self.run("reply", mid, stdin=go_marshal({"from": sender, "subject": subject, "body": body})))

    def thread(self, thread_id: str) -> list[Message] | None:
        return self._list(self.run("thread", thread_id))

    def count(self, recipient: str) -> tuple[int, int]:
        text = self.run("count", recipient)
        if not text:
            return 0, 0
        value = json.loads(text)
        total, unread = value.get("total", 0), value.get("unread", 0)
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in (total, unread)):
            raise DecodeError(f"count is not two integers: {text}")
        return total, unread


def provider(tmp: Path, **extra: str) -> ExecProvider:
    """A provider on a fresh city at ``tmp/city`` (``GC_CITY``, as gc sets it in an agent's session), run from
    an unrelated working directory (an agent's worktree): the mail must live in the city, never there."""
    from helpers import cli_env

    city, work = tmp / "city", tmp / "worktree"
    city.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    env = cli_env(tmp, None, GC_CITY=str(city), **extra)
    env.pop("DOVECOTE_AGENT", None)
    return ExecProvider(env, cwd=work)

"""Live notify: assistive nudges and session discovery, never delivery truth (notes B8, B12).

Law: a delivery is true once its letter is fsynced; nothing here runs before
that, and nothing here can undo or claim it. What the notifier did is itself a
``notify`` letter in the recipient's box (``ref``: the delivery), whose
``outcome`` follows the mode (notes B13.2 recorded ``nudge_failed`` for mode
none; here mode none records ``disabled``, discover-only ``discovered_only``):

* ``none`` and ``discover-only`` never run anything; their notify letter is
  written in the same append as the delivery (no extra fsync);
* ``agent-turn-nudge`` claims the nudge under the box's lock (a ``claimed``
  notify letter, so two mailmen never nudge twice), runs the roster's command
  template in a worker thread with a timeout (the mailman never waits on it
  inside a pass), then records ``nudge_sent`` or ``nudge_failed`` with a reason;
* ``session-inject`` is refused ``unverified_mode`` before anything runs.

A notice to the sender (the first ack, the timeout: the policy's
``notify_on_ack``/``notify_on_timeout``, notes B5 and B13.12) goes the same
way, as notify letters with ``about`` in the delivery's box: written with the
ack or the timeout by a mode that never nudges, claimed by the mailman and
run off its path with agent-turn-nudge, the command naming the sender.

Discovery (``discover``) runs the roster's discovery command at most once per
30 s per handle, success or failure (notes B13.11: the vNext status view retried
a failed discovery eight times and logged a ledger row for each), and writes nothing.
"""

from __future__ import annotations

import contextlib
import shlex
import subprocess
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from dovecote.errors import Refusal
from dovecote.model.addresses import entity
from dovecote.model.letters import canonical_line, format_ts
from dovecote.model.vocab import ENGINE_AGENT
from dovecote.model.vocab_delivery import MODE_OUTCOME, NOTIFY, NUDGE_CLAIM, RUNNABLE_MODES, NotifyState
from dovecote.ops.warm.registry import Kind
from dovecote.ops.warm.trackers import book

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: How long a discovery answer (or failure) is reused, in seconds (notes B12).
DISCOVERY_TTL = 30.0
#: The longest a discovery command may run, in seconds.
DISCOVERY_TIMEOUT = 10.0
_ADAPTERS = {"none": "disabled", "discover-only": "session_discovery", "agent-turn-nudge": "agent-cli"}


def mode_of(ctx: Context, given: str | None) -> str:
    """The notifier mode of a run: ``given``, else the roster's; ``session-inject`` is refused."""
    mode = given or ctx.roster.notifier_mode
    if mode == "session-inject":
        raise Refusal("unverified_mode", "session-inject is reserved: no session injection was ever verified")
    if mode not in RUNNABLE_MODES:
        raise Refusal("invalid_field", f"notifier mode {mode!r} is not one of {', '.join(RUNNABLE_MODES)}")
    return mode


def notify_line(
    delivery_id: str, ts: str, mode: str, outcome: str, reason: str | None = None, *, about: str | None = None,
    agent: str | None = None,
) -> bytes:
    """The ``notify`` letter of one delivery (the engine's; the outcome follows the mode); ``about`` and
    ``agent``: a notice of the ack or the timeout, to ``agent`` (the sender)."""
    letter: dict[str, Any] = {
        "ts": ts, "agent": ENGINE_AGENT, "kind": NOTIFY, "ref": delivery_id, "mode": mode,
        "adapter": _ADAPTERS[mode], "outcome": outcome, "delivery_truth": False,
    }
    if reason is not None:
        letter["reason"] = reason
    if about is not None:
        letter |= {"about": about, "notify": agent}
    return canonical_line(letter)


def passive_line(
    delivery_id: str, ts: str, mode: str, *, about: str | None = None, agent: str | None = None
) -> bytes | None:
    """The notify letter a mode that never nudges writes with the delivery, or with the ack or timeout a
    notice is ``about`` (None for agent-turn-nudge)."""
    outcome = MODE_OUTCOME.get(mode)
    return None if outcome is None else notify_line(delivery_id, ts, mode, outcome, about=about, agent=agent)


@dataclass(frozen=True, slots=True)
class Nudge:
    """One claimed nudge: the box of the delivery, which delivery, with what text; a notice (``about``)
    nudges ``agent`` (the sender) instead of the box's owner."""

    recipient: str
    delivery_id: str
    message: str
    about: str | None = None
    agent: str | None = None


def run_command(template: str | None, values: dict[str, str], timeout: float) -> tuple[bool, str]:
    """Run ``template`` with each ``{name}`` filled from ``values`` as a whole argument (no shell).

    Returns (succeeded, reason). Never raises: a nudge is assistive.
    """
    if not template:
        return False, "command_not_configured"
    try:
        args = [part.format(**values) for part in shlex.split(template)]
    except (ValueError, KeyError, IndexError) as e:
        return False, f"bad_template: {e}"
    try:
        done = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return False, "bin_not_found"
    except subprocess.TimeoutExpired:
        return False, "timeout"
    except OSError as e:
        return False, f"exception: {e.strerror or e}"
    return (True, "agent_turn_completed") if done.returncode == 0 else (False, f"exit_{done.returncode}")


class Nudger:
    """The worker threads that run nudges off the mailman's path, and record each outcome."""

    def __init__(self, workers: int = 4) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dovecote-nudge")
        self._pending: list[Future[None]] = []
        self._lock = threading.Lock()

    def submit(self, ctx: Context, nudges: Sequence[Nudge]) -> None:
        with self._lock:
            self._pending = [f for f in self._pending if not f.done()]
            self._pending += [self._pool.submit(_nudge, ctx, n) for n in nudges]

    def drain(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for the nudges in flight; how many are still running."""
        deadline = time.monotonic() + timeout
        with self._lock:
            pending = list(self._pending)
        for f in pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            with contextlib.suppress(Exception):  # a nudge's failure is its notify letter, never an error here
                f.result(timeout=left)
        return sum(1 for f in pending if not f.done())


def _nudge(ctx: Context, n: Nudge) -> None:
    roster = ctx.roster
    ok, reason = run_command(
        roster.notifier_command, {"agent": n.agent or n.recipient, "message": n.message},
        float(roster.notifier_timeout),
    )
    outcome = NotifyState.nudge_sent if ok else NotifyState.nudge_failed
    ctx.store.append(entity(n.recipient), [notify_line(n.delivery_id, format_ts(ctx.now()), "agent-turn-nudge",
                                                       outcome, reason, about=n.about, agent=n.agent)])


def claim_nudges(
    ctx: Context, recipient: str, texts: dict[str, str], notices: dict[tuple[str, str], tuple[str, str]]
) -> list[Nudge]:
    """Under the recipient's lock, claim a nudge for each delivery in ``texts`` not yet nudged or claimed,
    and each notice in ``notices`` ((delivery, about) -> (sender, text)) not yet claimed."""
    out: list[Nudge] = []
    with ctx.store.guarded(entity(recipient)) as held, book(ctx, recipient, held) as b:
        lines = []
        ts = format_ts(ctx.now())
        for lid, text in texts.items():
            row = b.rows.get(lid)
            if row is None or row.claimed or row.notify != NotifyState.not_attempted:
                continue
            lines.append(notify_line(lid, ts, "agent-turn-nudge", NUDGE_CLAIM))
            out.append(Nudge(recipient, lid, text))
        for (lid, about), (sender, text) in notices.items():
            if (lid, about) not in b.unnoticed:  # claimed meanwhile, by another mailman
                continue
            lines.append(notify_line(lid, ts, "agent-turn-nudge", NUDGE_CLAIM, about=about, agent=sender))
            out.append(Nudge(recipient, lid, text, about, sender))
        if lines:
            held.append(lines)
    return out


# -- discovery (assistive presence from another tool) -----------------------------

_DISCOVERED: Kind[tuple[float, int, dict[str, dict[str, Any]] | None, str | None]] = Kind("discovery")


def discover(ctx: Context, minutes: int) -> tuple[dict[str, dict[str, Any]] | None, str | None, bool]:
    """Sessions the roster's discovery command reports: (per agent, error, ran now).

    Cached per handle for ``DISCOVERY_TTL`` seconds, failures too, so a refresh
    runs the command at most once. None and no error: no command configured.
    """
    template = ctx.roster.discovery_command
    if not template:
        return None, None, False
    with ctx.warm.lock_of(_DISCOVERED):
        got = ctx.warm.get(_DISCOVERED)
        if got is not None and got[1] == minutes and time.monotonic() - got[0] < DISCOVERY_TTL:
            return got[2], got[3], False
        sessions, error = _run_discovery(template, minutes)
        ctx.warm.put(_DISCOVERED, (time.monotonic(), minutes, sessions, error))
        return sessions, error, True


def _run_discovery(template: str, minutes: int) -> tuple[dict[str, dict[str, Any]] | None, str | None]:
    try:
        args = [part.format(minutes=minutes) for part in shlex.split(template)]
        done = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, timeout=DISCOVERY_TIMEOUT,
                              check=False)
    except (ValueError, KeyError, IndexError, OSError, subprocess.TimeoutExpired) as e:
        return None, f"discovery failed: {e}"
    if done.returncode != 0:
        return None, f"discovery exited {done.returncode}"
    try:
        doc = orjson.loads(done.stdout)
    except orjson.JSONDecodeError:
        return None, "discovery printed no JSON"
    sessions = doc.get("sessions") if isinstance(doc, dict) else None
    out: dict[str, dict[str, Any]] = {}
    for s in sessions if isinstance(sessions, list) else ():
        if not isinstance(s, dict) or not isinstance(s.get("agentId"), str):
            continue
        agent = s["agentId"]
        updated = s.get("updatedAt") if isinstance(s.get("updatedAt"), int) else 0
        if agent not in out or updated > out[agent]["updated_ms"]:  # the freshest session per agent
            out[agent] = {"updated_ms": updated, "session_key": s.get("key"), "kind": s.get("kind"),
                          "age_ms": s.get("ageMs")}
    return out, None

"""Soak: N agents mixing MCP and REST calls against real `dovecote serve` processes, for minutes.

Each agent (default 30) has two clients running at once, one REST (a
keep-alive connection) and one MCP (its own SDK session), both with the
agent's token. Each client makes weighted random calls, with a random pause
between them: send to another agent, read its inbox, work an item of its own
(claim, seen, complete; or seen, nack; or defer, undefer), wait for new mail
(the REST long poll and the MCP ``wait``), search its mail, show an item. It
stops at the duration (default 600 s) or the call budget, whichever first.

Judged afterwards:
- errors: every reply is checked; a refusal counts as asked for (reported by
  keyword, not an error) only when it is a move's ``already_claimed`` or
  ``illegal_transition`` that the agent's own moves explain: a move of the
  item by its other client overlapping the call, or a state its moves (either
  client's) left the item in that does not allow this one — the two clients
  race on one inbox through one shared view, as two sessions of an agent do;
- lost: every acknowledged send id is looked up in its recipient's ledger;
- resources: the servers' fds, threads and RSS, sampled every few seconds,
  early window against late (``_soak_samples`` says how and why those bounds).

Modes: ``files`` (one serve on a file home) and ``postgres`` (two serve
processes, each on its own home, both homes' ledgers in one PostgreSQL
schema; each agent's REST client talks to one server and its MCP client to
the other, so claims race across hosts). Loopback only.

    python bench/soak.py --mode files --seconds 600
    python bench/soak.py --mode postgres --store postgresql://127.0.0.1:5432/test --seconds 600
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _load import agents_home, cpu_seconds, database, free_port, lost, pct, start, stop
from _soak_clients import Answer, Mcp, Rest
from _soak_samples import Flatness, Sample, held_per_letter_kib, judge, reference_sends, sample
from dovecote.derive.lifecycle import TERMINAL, TRANSITIONS, State

#: What a client does next, by weight; "work" is a chain of moves on one item of the agent's own.
MIX = {"send": 20, "inbox": 12, "work": 22, "wait": 8, "search": 8, "show": 10}
#: Refusals an agent asks for when its other client moved the same item first (both in errors.REASONS).
RACE_REFUSALS = frozenset({"already_claimed", "illegal_transition"})
WORDS = ("harbor", "lantern", "quartz", "meadow", "ember", "falcon", "cobalt", "juniper")
MOVES = ("claim", "seen", "complete", "nack", "defer", "undefer")
#: ``Agent.moved_to`` of an item whose last move overlapped the other client's: its state is not known.
CONTESTED = "?"


@dataclass
class Tally:
    """Everything the clients saw: latencies per verb and face, acknowledged sends, errors, asked-for refusals."""

    lat: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    acked: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    expected: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    writes: int = 0


@dataclass
class Agent:
    """One agent's shared view of its own inbox (both its clients update it) and who moved what."""

    me: str
    others: list[str]
    items: dict[str, str] = field(default_factory=dict)  # ref -> state as last seen
    moved_to: dict[str, str] = field(default_factory=dict)  # ref -> state its last move (either client's) made
    moving: set[tuple[str, str]] = field(default_factory=set)  # (ref, face) of a move sent, not yet answered
    started: Counter[str] = field(default_factory=Counter)  # ref -> state-changing moves sent so far (either client)
    cursor: dict[str, str | None] = field(default_factory=dict)  # face -> wait cursor
    sent: int = 0


class Budget:
    """The run's end: a deadline and a call budget, whichever comes first."""

    def __init__(self, seconds: float, calls: int | None) -> None:
        self.start = time.monotonic()
        self.deadline = self.start + seconds
        self.calls = calls

    def over(self, tally: Tally) -> bool:
        return time.monotonic() >= self.deadline or (self.calls is not None and tally.calls >= self.calls)


async def timed(tally: Tally, verb: str, face: str, call: Any) -> Answer:
    t0 = time.perf_counter()
    answer: Answer = await call
    tally.calls += 1
    if answer.ok:
        tally.lat[verb].append((time.perf_counter() - t0) * 1000)
    return answer


def refused(tally: Tally, agent: Agent, face: str, verb: str, ref: str | None, a: Answer,
            overlapped: bool = False) -> None:
    """Judge a refusal: asked for (the agent acted on a stale view of its own inbox) or an error.

    A move's ``already_claimed`` or ``illegal_transition`` is asked for when a move of the item by the agent's
    other client overlapped this call (``overlapped``: on its way when this one left, sent or answered while
    it was out), or when the state the agent's own moves (either client's) left the item in does not allow
    the move: a view read before those moves answered (the two clients share one view) said otherwise, or
    that state is not known (``CONTESTED``: the last of them overlapped the other client's, so the server may
    have written them in another order than they were answered). Anything else is an error.
    """
    made = agent.moved_to.get(ref) if ref is not None else None
    stale = made == CONTESTED or (made is not None and verb not in TRANSITIONS[State(made)])
    if verb in MOVES and a.reason in RACE_REFUSALS and (overlapped or stale):
        tally.expected[f"{verb}: {a.reason}"] += 1
    else:
        tally.errors.append(f"{face} {verb} {agent.me} {ref or ''}: {a.reason}: {a.detail}"[:300])
    if ref is not None:
        agent.items.pop(ref, None)


def shaped(tally: Tally, agent: Agent, face: str, verb: str, a: Answer, *keys: str) -> bool:
    """A yes must carry the fields the verb documents; one that does not is an error."""
    missing = [k for k in keys if k not in a.data]
    if missing:
        tally.errors.append(f"{face} {verb} {agent.me}: reply without {', '.join(missing)}: {a.data}"[:300])
    return not missing


async def move(tally: Tally, agent: Agent, client: Rest | Mcp, ref: str, kind: str, **opts: Any) -> bool:
    """One move; the agent's record says this client moves ``ref`` from the moment the call leaves (its other
    client may be refused while the answer is on its way) until a refusal says it did not."""
    changes = kind != "seen"  # seen changes no state: it can make no other move illegal
    other = "mcp" if client.face == "rest" else "rest"
    before = agent.started[ref] + changes
    overlapped = (ref, other) in agent.moving
    if changes:
        agent.moving.add((ref, client.face))
        agent.started[ref] += 1
    try:
        a = await timed(tally, kind, client.face, client.move(agent.me, ref, kind, **opts))
    finally:
        agent.moving.discard((ref, client.face))
    overlapped = overlapped or (ref, other) in agent.moving or agent.started[ref] != before
    if not a.ok:
        refused(tally, agent, client.face, kind, ref, a, overlapped)
        return False
    if shaped(tally, agent, client.face, kind, a, "to"):
        tally.writes += 1
        agent.items[ref] = str(a.data["to"])
        # only a move that changes the state says what the agent's moves made of the item: a seen answered late
        # names the state before the other client's claim, and must not hide that claim from the judge
        if changes and agent.moved_to.get(ref) not in TERMINAL:
            to = str(a.data["to"])
            # answers of two clients may arrive out of order: a move that overlapped the other client's moves of
            # the item may have been written before them (a claim answered after the other's defer and undefer
            # leaves WAIT, not ACTIVE), so what the agent's moves made of it is unknown until a move that did
            # not overlap says (a terminal state is the last whatever the order)
            agent.moved_to[ref] = to if to in TERMINAL or not overlapped else CONTESTED
    return True


async def work(tally: Tally, agent: Agent, client: Rest | Mcp, rng: random.Random) -> None:
    """Take the oldest item known open and walk it one of three ways to its end (or back to WAIT)."""
    ref = next((r for r, s in agent.items.items() if s in ("WAIT", "ACTIVE", "DEFER")), None)
    if ref is None:
        return
    state = agent.items[ref]
    if state == "DEFER":
        await move(tally, agent, client, ref, "undefer")
        return
    way = rng.choices(("complete", "nack", "defer"), (14, 4, 4))[0]
    if state == "ACTIVE":
        way = "complete"
    if way == "complete":
        if state == "WAIT" and not await move(tally, agent, client, ref, "claim"):
            return
        if await move(tally, agent, client, ref, "seen"):
            await move(tally, agent, client, ref, "complete", result_ref="soak")
    elif way == "nack":
        if await move(tally, agent, client, ref, "seen"):
            await move(tally, agent, client, ref, "nack", reason="soak")
    else:
        until = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if await move(tally, agent, client, ref, "defer", until=until):
            await move(tally, agent, client, ref, "undefer")


async def step(tally: Tally, agent: Agent, client: Rest | Mcp, rng: random.Random) -> None:
    """One weighted random action of one client."""
    face = client.face
    what = rng.choices(list(MIX), list(MIX.values()))[0]
    if what == "send":
        to = rng.choice(agent.others)
        agent.sent += 1
        a = await timed(tally, "send", face, client.send(to, f"{rng.choice(WORDS)} {agent.me} #{agent.sent}",
                                                        f"{rng.choice(WORDS)} {rng.choice(WORDS)} via {face}"))
        if not a.ok:
            refused(tally, agent, face, "send", None, a)
        elif shaped(tally, agent, face, "send", a, "id") and isinstance(a.data["id"], str):
            tally.acked.append((to, a.data["id"]))
            tally.writes += 1
    elif what == "inbox":
        a = await timed(tally, "inbox", face, client.inbox(agent.me))
        if not a.ok:
            refused(tally, agent, face, "inbox", None, a)
        elif shaped(tally, agent, face, "inbox", a, "items", "cursor"):
            agent.items = {str(i["id"]): str(i["state"]) for i in a.data["items"]}
    elif what == "work":
        await work(tally, agent, client, rng)
    elif what == "wait":
        a = await timed(tally, "wait", face, client.wait(agent.me, agent.cursor.get(face), rng.choice((0.5, 1, 2))))
        if not a.ok:
            refused(tally, agent, face, "wait", None, a)
        elif shaped(tally, agent, face, "wait", a, "items", "cursor", "timed_out"):
            agent.cursor[face] = a.data["cursor"]
            for i in a.data["items"]:
                agent.items.setdefault(str(i["id"]), str(i.get("state", "WAIT")))
    elif what == "search":
        a = await timed(tally, "search", face, client.search(agent.me, rng.choice(WORDS)))
        if not a.ok:
            refused(tally, agent, face, "search", None, a)
        else:
            shaped(tally, agent, face, "search", a, "count", "matches")
    elif agent.items:
        ref = rng.choice(list(agent.items))
        a = await timed(tally, "show", face, client.show(agent.me, ref))
        if not a.ok:
            refused(tally, agent, face, "show", ref, a)
        else:
            shaped(tally, agent, face, "show", a, "item", "envelope")


async def client_loop(tally: Tally, agent: Agent, client: Rest | Mcp, budget: Budget, pause: float,
                      seed: int) -> None:
    rng = random.Random(seed)
    try:
        if isinstance(client, Mcp):
            await client.open()
        while not budget.over(tally):
            await step(tally, agent, client, rng)
            await asyncio.sleep(rng.uniform(0, 2 * pause))
    except Exception as e:  # a client that dies is an error of the run, reported, never a hang
        tally.errors.append(f"{client.face} client of {agent.me} died: {type(e).__name__}: {e}"[:300])
    finally:
        with contextlib.suppress(Exception):
            await client.close()


async def sampler(tally: Tally, pids: Sequence[int], budget: Budget, every: float, out: list[Sample]) -> None:
    while not budget.over(tally):
        out.append(sample(pids, time.monotonic() - budget.start, tally.writes))
        await asyncio.sleep(every)
    out.append(sample(pids, time.monotonic() - budget.start, tally.writes))


@dataclass(frozen=True)
class Servers:
    """The running servers: each agent's REST port, its MCP URL, its token on each; their pids."""

    rest: dict[str, tuple[int, str]]
    mcp: dict[str, tuple[str, str]]
    pids: tuple[int, ...]


async def drive(names: list[str], servers: Servers, seconds: float, calls: int | None, pause: float,
                every: float, seed: int) -> tuple[Tally, list[Sample], float]:
    tally, samples = Tally(), list[Sample]()
    budget = Budget(seconds, calls)
    agents = [Agent(n, [o for o in names if o != n]) for n in names]
    loops = []
    for i, a in enumerate(agents):
        loops.append(client_loop(tally, a, Rest(*servers.rest[a.me]), budget, pause, seed * 1000 + 2 * i))
        loops.append(client_loop(tally, a, Mcp(*servers.mcp[a.me]), budget, pause, seed * 1000 + 2 * i + 1))
    # the hard stop: a call never answered must not keep the run (or CI) past its time
    await asyncio.wait_for(asyncio.gather(sampler(tally, servers.pids, budget, every, samples), *loops),
                           seconds + 120)
    return tally, samples, time.monotonic() - budget.start


@dataclass(frozen=True)
class Result:
    """A finished soak: what the clients saw, the loss check and the resource verdict."""

    mode: str
    agents: int
    wall: float
    tally: Tally
    lost: int
    flatness: Flatness
    samples: tuple[Sample, ...]
    server_cpu: float

    @property
    def passed(self) -> bool:
        return not self.tally.errors and self.lost == 0 and self.flatness.flat

    def lines(self) -> list[str]:
        t = self.tally
        out = [f"soak {self.mode}: {self.agents} agents x (1 REST + 1 MCP client), {self.wall:.0f} s, "
               f"{t.calls} calls ({t.calls / self.wall:.0f}/s), {len(t.acked)} sends acknowledged, "
               f"{t.writes} letters written; server CPU {self.server_cpu:.0f} s; load average "
               f"{os.getloadavg()[0]:.1f}",
               f"errors {len(t.errors)}, lost {self.lost} of {len(t.acked)} acknowledged; asked-for refusals "
               f"{sum(t.expected.values())}" + (f" ({', '.join(f'{k} {v}' for k, v in sorted(t.expected.items()))})"
                                                if t.expected else ""),
               f"{'verb':<10}{'calls':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"]
        for verb in ("send", "inbox", *MOVES, "wait", "search", "show"):
            xs = t.lat.get(verb, [])
            if xs:
                out.append(f"{verb:<10}{len(xs):>8}{pct(xs, 50):>9.1f}{pct(xs, 95):>9.1f}{pct(xs, 99):>9.1f}")
        first = [s for s in self.samples if s.t < 60]
        last = [s for s in self.samples if s.t >= self.wall - 60]
        for name, ws in (("first minute", first), ("last minute", last)):
            out.append(f"{name}: " + ", ".join(f"{s.t:.0f}s {s.fds}fd {s.threads}thr {s.rss_kib // 1024}MiB"
                                               for s in ws))
        out += self.flatness.lines()
        out += [f"  error: {e}" for e in t.errors[:10]]
        out.append(f"verdict: {'PASS' if self.passed else 'FAIL'}")
        return out


def _tokens_on(home: Path, names: Sequence[str]) -> dict[str, str]:
    from dovecote.handle.api import open_home

    dc = open_home(home)
    return {n: dc.token_issue(n).token for n in names}


@contextlib.contextmanager
def served(mode: str, root: Path, agents: int, store: str | None) -> Iterator[tuple[list[str], Servers, Path]]:
    """Build the home(s) and start the server(s) of ``mode``; stop them when the block ends."""
    homes: list[Path] = []
    names: list[str] = []
    tokens: list[dict[str, str]] = []
    for h in range(1 if mode == "files" else 2):
        home, names, tok = agents_home(root / f"host{h}", agents, store if mode == "postgres" else None)
        homes.append(home)
        tokens.append(tok)
    procs, ports = [], []
    with contextlib.ExitStack() as stack:
        for home in homes:
            port = free_port()
            procs.append(start(["serve", "--port", str(port)], home, port))
            stack.callback(stop, procs[-1])
            ports.append(port)
        # host i%2 serves agent i's REST client, the other host its MCP client (one host in files mode)
        rest = {n: (ports[i % len(ports)], tokens[i % len(ports)][n]) for i, n in enumerate(names)}
        mcp = {n: (f"http://127.0.0.1:{ports[(i + 1) % len(ports)]}/mcp", tokens[(i + 1) % len(ports)][n])
               for i, n in enumerate(names)}
        yield names, Servers(rest, mcp, tuple(p.pid for p in procs)), homes[0]


def soak(mode: str, root: Path, *, agents: int = 30, seconds: float = 600, calls: int | None = None,
         pause: float = 0.5, every: float = 5.0, store: str | None = None, seed: int = 1) -> Result:
    """Run one soak in ``root`` (``store``: the PostgreSQL URL of the ``postgres`` mode) and judge it."""
    if mode not in ("files", "postgres") or (mode == "postgres") != (store is not None):
        raise ValueError("mode files takes no store; mode postgres needs one")
    with served(mode, root, agents, store) as (names, servers, home):
        tally, samples, wall = asyncio.run(drive(names, servers, seconds, calls, pause, every, seed))
        server_cpu = sum(cpu_seconds(p) for p in servers.pids)
    # each server holds the derived state of every box its clients read: here all of them, on each server
    held = held_per_letter_kib(home, names, reference_sends(seconds)) * len(servers.pids)
    flatness = judge(samples, wall, held)
    return Result(mode, agents, wall, tally, lost(home, tally.acked), flatness, tuple(samples), server_cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--mode", choices=("files", "postgres"), default="files")
    ap.add_argument("--agents", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--calls", type=int, help="stop after this many calls (if before --seconds)")
    ap.add_argument("--pause", type=float, default=0.5, help="mean pause between a client's calls (s)")
    ap.add_argument("--every", type=float, default=5.0, help="seconds between resource samples")
    ap.add_argument("--store", metavar="URL", help="the PostgreSQL server of --mode postgres (a schema of "
                    "the run's own, dropped afterwards)")
    args = ap.parse_args()
    if args.mode == "postgres" and not args.store:
        ap.error("--mode postgres needs --store URL")
    with contextlib.ExitStack() as stack:
        store = stack.enter_context(database(args.store)) if args.mode == "postgres" else None
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-soak-")))
        result = soak(args.mode, tmp, agents=args.agents, seconds=args.seconds, calls=args.calls, pause=args.pause,
                      every=args.every, store=store)
    print("\n".join(result.lines()), flush=True)
    sys.exit(0 if result.passed else 1)


if __name__ == "__main__":
    main()

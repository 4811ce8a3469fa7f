"""mcp_agent_mail's load pattern through the agent-mail profile: N sessions x M `send_message` over streamable HTTP.

Their own load test has 30 sessions send 20 messages each at once to a server
that keeps no MCP session (stateless HTTP, plain JSON answers). Here the same
pattern runs against the ``/agent-mail/mcp`` of one real ``dovecote serve``:
each session is one agent of one project (registered through the profile's
calls, a token each), on its own keep-alive connection, calling
``send_message`` to the next agent with its ``sender_token``, as their clients
do (no ``initialize`` first: their server needs none, and neither does this
one; the connection carries the agent's token as its bearer too, as the light
client always does, which a loopback server would not need). Beside it, in
the same server and interleaved round by round, the same agents send through
dovecote's own catalog (``send`` at ``/mcp``, one SDK-style session each:
``bench_mcp.light_agent``).

Lost = an acknowledged message that is not in its recipient's ``fetch_inbox``
(asked through the profile after the last round, ``limit`` 1,000), and, as the
other load benches count it, not in the recipient's ledger read cold.

Targets: >= 400 sends/s, p95 <= 200 ms, 0 lost. The reference in the same
run is the raw cost of one fsynced append per send (``_load.raw_fsync_rate``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from _load import Round, cpu_seconds, fds, free_port, raw_fsync_rate, start, stop, summary
from bench_mcp import LightSession, light_agent
from bench_rest import Conn, serve_argv
from dovecote.handle import agentmail as am
from dovecote.handle.api import Dovecote, init, open_home
from dovecote.mcp.agentmail import PATH

PROJECT = "/data/projects/load"
SLUG = "data-projects-load"
RATE_TARGET, P95_TARGET = 400, 200


def agents_project(root: Path, clients: int) -> tuple[Path, list[str], dict[str, str]]:
    """A home with one project and ``clients`` agents registered through the profile's own calls: (home, agent
    names, tokens by name)."""
    home, _ = init(root / ".dovecote", owner_root=str(root))
    dc: Dovecote = open_home(home)
    am.ensure_project(dc, None, PROJECT)
    names = [f"Agent{i:02d}" for i in range(clients)]
    tokens = {}
    for n in names:
        dc.refresh()
        tokens[n] = am.register_agent(dc, None, {"project_key": PROJECT, "program": "bench", "model": "m",
                                                 "name": n})["registration_token"]
    return home, names, tokens


def stateless(conn: Conn, token: str) -> LightSession:
    """Their client over stateless HTTP: each ``tools/call`` one POST on a keep-alive connection, no
    ``initialize`` and no session (the light client of ``bench_mcp``, pointed at the profile)."""
    s = LightSession(conn, token)
    s.path = PATH
    return s


def entity(name: str) -> str:
    return f"{SLUG}.{name}"


async def profile_session(port: int, token: str, me: str, to: str, sends: int, no: int, res: Round,
                          pid: int) -> None:
    s = stateless(await Conn.open(port), token)
    try:
        for n in range(sends):
            t0 = time.perf_counter()
            try:
                r = await s.call_tool("send_message", {"project_key": PROJECT, "sender_name": me,
                                                       "sender_token": token, "to": [to],
                                                       "subject": f"r{no} {me} #{n}", "body_md": "b"})
            except (OSError, ValueError, asyncio.IncompleteReadError) as e:
                res.errors.append(f"{type(e).__name__}: {e}")
                continue
            ms = (time.perf_counter() - t0) * 1000
            found = r.get("structuredContent")
            if r.get("isError") or not isinstance(found, dict) or not found.get("deliveries"):
                res.errors.append(str(r.get("content", "error"))[:200])
            else:
                res.ack(entity(to), f"{found['deliveries'][0]['payload']['id']:012x}", ms, pid)
    finally:
        await s.conn.close()


def own_session(port: int, token: str, me: str, to: str, sends: int, no: int, res: Round,
                pid: int) -> Awaitable[None]:
    """The same agent sending through dovecote's own catalog: ``send`` at ``/mcp`` (``bench_mcp``'s light
    client, one session each), to the next agent's entity."""
    return light_agent(port, token, me, entity(to), sends, no, res, pid)


Session = Callable[[int, str, str, str, int, int, Round, int], Awaitable[None]]


async def one_round(session: Session, port: int, tokens: dict[str, str], names: list[str], sends: int, no: int,
                    pid: int) -> Round:
    res = Round(total=len(names) * sends)
    t0 = time.perf_counter()
    await asyncio.gather(*(session(port, tokens[me], me, names[(i + 1) % len(names)], sends, no, res, pid)
                           for i, me in enumerate(names)))
    res.wall = time.perf_counter() - t0
    return res


async def missing_from_inboxes(port: int, tokens: dict[str, str], acked: list[tuple[str, str]]) -> int:
    """How many acknowledged messages each recipient's ``fetch_inbox`` (through the profile) does not show."""
    shown: set[tuple[str, str]] = set()
    for name, token in tokens.items():
        s = stateless(await Conn.open(port), token)
        try:
            r = await s.call_tool("fetch_inbox", {"project_key": PROJECT, "agent_name": name,
                                                  "registration_token": token, "limit": 1000})
        finally:
            await s.conn.close()
        rows = r.get("structuredContent", {})["result"]  # type: ignore[index]
        shown |= {(entity(name), f"{row['id']:012x}") for row in rows}
    return sum(1 for a in acked if a not in shown)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--clients", type=int, default=30)
    ap.add_argument("--sends", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if args.sends * args.rounds * 2 > 1000:
        raise SystemExit("fetch_inbox answers at most 1,000 rows: keep sends x rounds x 2 <= 1,000")
    measure(args.clients, args.sends, args.rounds)


def measure(clients: int, sends: int, rounds: int) -> dict[str, dict[str, float]]:
    """Build the home, serve it, run the rounds (the profile's and the own catalog's in turn), check the
    inboxes, report both; the headline figures of each (``summary``), ``inbox_lost`` added."""
    sessions: dict[str, Session] = {"profile": profile_session, "own": own_session}
    with tempfile.TemporaryDirectory(prefix="bench-agentmail-") as tmp:
        home, names, tokens = agents_project(Path(tmp), clients)
        raw = raw_fsync_rate(Path(tmp))
        port = free_port()
        server = start(serve_argv(port), home, port)
        done: dict[str, list[Round]] = {k: [] for k in sessions}
        cpu = {k: [0.0, 0.0] for k in sessions}
        try:
            fd_start = fds(server.pid)
            for r in range(rounds):
                order = list(sessions) if r % 2 == 0 else list(sessions)[::-1]
                for kind in order:
                    s0, c0 = cpu_seconds(server.pid), cpu_seconds(os.getpid(), children=False)
                    res = asyncio.run(one_round(sessions[kind], port, tokens, names, sends, r, server.pid))
                    cpu[kind][0] += cpu_seconds(server.pid) - s0
                    cpu[kind][1] += cpu_seconds(os.getpid(), children=False) - c0
                    done[kind].append(res)
                    print(f"{kind:7s} {res.line(r + 1)}", flush=True)
            inbox_lost = {k: asyncio.run(missing_from_inboxes(port, tokens, [a for x in v for a in x.acked]))
                          for k, v in done.items()}
            time.sleep(1.0)
            fd_end = fds(server.pid)
        finally:
            stop(server)
        raw_after = min(raw, raw_fsync_rate(Path(tmp)), key=lambda x: x[0])
        out = {}
        for kind, title in (("profile", "agent-mail profile send_message (stateless)"),
                            ("own", "dovecote's own catalog send (/mcp)")):
            out[kind] = summary(f"{title}, {clients} sessions x {sends} sends", done[kind], home, RATE_TARGET,
                                P95_TARGET, raw_after, fd_start, fd_end, tuple(cpu[kind]))
            out[kind]["inbox_lost"] = inbox_lost[kind]
            print(f"not in the recipient's fetch_inbox: {inbox_lost[kind]}")
        return out


if __name__ == "__main__":
    main()

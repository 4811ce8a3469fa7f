"""N concurrent MCP clients over streamable HTTP, M durable sends each, against one `dovecote mcp --http`.

The complaint this answers: the leading MCP mail server stalls, or runs out of
file descriptors, with 3-5 agents. Here 30 agents (each its own token and its
own HTTP session, as separate agent processes would be) send 100 messages each,
every send a durable append (fsynced before the tool answers). Then every id
the server acknowledged is looked up in its recipient's ledger (lost = an
acknowledged id that is not there), and the server's open file descriptors
(``/proc/<pid>/fd``) are counted before the first client connects and after
the last one left.

Targets (issue 8): >= 300 durable sends/s, p95 <= 100 ms, 0 errors, 0 lost.
The clients run in this one process (the SDK's client costs CPU too, on the
same 2 cores), so the numbers are what one machine does end to end.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from dovecote.addresses import entity
from dovecote.api import init, open_home
from dovecote.verbs import EntityAdd

BIN = Path(sys.executable).parent / "dovecote"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (from /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


async def agent(url: str, token: str, me: str, to: str, sends: int, round_no: int,
                lat: list[float], acked: list[tuple[str, str]], errors: list[str]) -> None:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as h, Client(
        streamable_http_client(url, http_client=h)
    ) as c:
        for n in range(sends):
            t0 = time.perf_counter()
            try:
                r = await c.call_tool("send", {"recipient": to, "subject": f"r{round_no} {me} #{n}", "body": "b"})
            except Exception as e:  # a transport failure counts as an error, not a crash of the bench
                errors.append(f"{type(e).__name__}: {e}")
                continue
            lat.append((time.perf_counter() - t0) * 1000)
            if r.is_error or r.structured_content is None:
                errors.append(r.content[0].text if r.content else "error")
            else:
                acked.append((to, r.structured_content["id"]))


async def one_round(url: str, tokens: dict[str, str], names: list[str], sends: int, round_no: int) -> dict[str, float]:
    lat: list[float] = []
    acked: list[tuple[str, str]] = []
    errors: list[str] = []
    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i, me in enumerate(names):
            tg.start_soon(agent, url, tokens[me], me, names[(i + 1) % len(names)], sends, round_no, lat, acked, errors)
    wall = time.perf_counter() - t0
    return {"wall": wall, "rate": len(acked) / wall, "p50": pct(lat, 50), "p95": pct(lat, 95), "p99": pct(lat, 99),
            "errors": len(errors), "acked": len(acked), "first_error": errors[0] if errors else "",
            **{"_acked": acked}}  # type: ignore[dict-item]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=30)
    ap.add_argument("--sends", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        home, _ = init(Path(tmp) / ".dovecote", owner_root=tmp)
        dc = open_home(home)
        names = [f"ent_agent{i:02d}" for i in range(args.clients)]
        for n in names:
            dc.add_entity(EntityAdd(entity_id=n))
        tokens = {n: dc.token_issue(n).token for n in names}
        port = free_port()
        env = {**os.environ, "DOVECOTE_HOME": str(home)}
        prefix = os.environ.get("BENCH_MCP_SERVER_PREFIX", "").split()  # e.g. a profiler to run the server under
        server = subprocess.Popen([*prefix, str(BIN), "mcp", "--http", "--port", str(port)], env=env)
        try:
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.05)
            fd_start = fds(server.pid)
            url = f"http://127.0.0.1:{port}/mcp"
            results = []
            for r in range(args.rounds):
                res = anyio.run(one_round, url, tokens, names, args.sends, r)
                results.append(res)
                print(f"round {r + 1}: {res['acked']:.0f} sends in {res['wall']:.2f} s = {res['rate']:.0f}/s; "
                      f"p50 {res['p50']:.1f} ms, p95 {res['p95']:.1f} ms, p99 {res['p99']:.1f} ms; "
                      f"errors {res['errors']:.0f} {res['first_error']}")
            time.sleep(1.0)
            fd_end = fds(server.pid)
            server_cpu = cpu_seconds(server.pid)
            client_cpu = cpu_seconds(os.getpid())
        finally:
            server.terminate()
            server.wait(timeout=10)
        reader = open_home(home)
        index = {n: reader.store.read(entity(n)).index for n in names}
        acked = [a for res in results for a in res["_acked"]]  # type: ignore[attr-defined]
        lost = sum(1 for to, lid in acked if lid not in index[to])
        med = {k: statistics.median(res[k] for res in results) for k in ("rate", "p50", "p95", "p99")}
        print(f"\n{args.clients} clients x {args.sends} sends, {args.rounds} rounds (medians): "
              f"{med['rate']:.0f} durable sends/s (target >= 300), p50 {med['p50']:.1f} ms, "
              f"p95 {med['p95']:.1f} ms (target <= 100), p99 {med['p99']:.1f} ms")
        print(f"errors {sum(int(res['errors']) for res in results)}, lost {lost} of {len(acked)} acknowledged; "
              f"server fds at start {fd_start}, at end {fd_end}")
        print(f"CPU: server {server_cpu:.1f} s, clients {client_cpu:.1f} s (this process)")


if __name__ == "__main__":
    main()

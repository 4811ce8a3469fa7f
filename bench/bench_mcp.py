"""N concurrent MCP clients over streamable HTTP, M durable sends each, against the /mcp of `dovecote serve`.

The complaint this answers: the leading MCP mail server stalls, or runs out of
file descriptors, with 3-5 agents. Here 30 agents (each its own token and its
own HTTP session, as separate agent processes would be) send 100 messages each,
every send a durable append (fsynced before the tool answers). Then every id
the server acknowledged is looked up in its recipient's ledger (lost = an
acknowledged id that is not there), and the server's open file descriptors
(``/proc/<pid>/fd``) are counted before the first client connects, at the
first and the last thousand sends of each round, and after the last one left.

Targets (issue 8): >= 300 durable sends/s, p95 <= 100 ms, 0 errors, 0 lost.
The clients run in this one process (the SDK's client costs CPU too, on the
same 2 cores), so the numbers are what one machine does end to end. The
reference in the same run is the raw cost of one fsynced append per send.
"""

from __future__ import annotations

import time

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from _load import Round, run


async def agent(url: str, token: str, me: str, to: str, sends: int, round_no: int, res: Round, pid: int) -> None:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as h, Client(
        streamable_http_client(url, http_client=h)
    ) as c:
        for n in range(sends):
            t0 = time.perf_counter()
            try:
                r = await c.call_tool("send", {"recipient": to, "subject": f"r{round_no} {me} #{n}", "body": "b"})
            except Exception as e:  # a transport failure counts as an error, not a crash of the bench
                res.errors.append(f"{type(e).__name__}: {e}")
                continue
            ms = (time.perf_counter() - t0) * 1000
            if r.is_error or r.structured_content is None:
                res.errors.append(r.content[0].text if r.content else "error")
            else:
                res.ack(to, r.structured_content["id"], ms, pid)


async def one_round(url: str, tokens: dict[str, str], names: list[str], sends: int, no: int, pid: int) -> Round:
    res = Round(total=len(names) * sends)
    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i, me in enumerate(names):
            tg.start_soon(agent, url, tokens[me], me, names[(i + 1) % len(names)], sends, no, res, pid)
    res.wall = time.perf_counter() - t0
    return res


def main() -> None:
    run(__doc__ or "", "MCP", lambda port: ["serve", "--port", str(port)],
        lambda port, *a: anyio.run(one_round, f"http://127.0.0.1:{port}/mcp", *a), 300, 100)


if __name__ == "__main__":
    main()

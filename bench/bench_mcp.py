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
The clients run in this one process, on the same 2 cores as the server. By
default each is a few lines of JSON-RPC over one keep-alive HTTP/1.1
connection (``LightSession``): the streamable HTTP protocol as the SDK's
client speaks it (``initialize``, the session id and protocol version headers,
``notifications/initialized``, then ``tools/call``), so the load generator does
not eat the cores the server is measured on (the SDK's client costs about 2 ms
of CPU a call). ``--sdk`` runs the SDK's own client instead; the correctness
tests (tests/mcp/test_mcp_transports.py) always use it. The reference in the same
run is the raw cost of one fsynced append per send.
"""

from __future__ import annotations

import itertools
import sys
import time

import anyio
import orjson
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from _load import Round, run
from bench_rest import Conn, serve_argv

PROTOCOL = "2025-11-25"


class LightSession:
    """One MCP session over streamable HTTP on a keep-alive connection: JSON-RPC requests, JSON answers."""

    #: Where the MCP endpoint is (``bench_agentmail`` points one at the agent-mail profile's).
    path = "/mcp"

    def __init__(self, conn: Conn, token: str) -> None:
        self.conn, self.token = conn, token
        self.headers = {"Accept": "application/json, text/event-stream"}
        self.ids = itertools.count(1)

    @classmethod
    async def open(cls, port: int, token: str) -> LightSession:
        s = cls(await Conn.open(port), token)
        init = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
        status, headers, body = await s.conn.exchange(s.path, orjson.dumps(
            {"jsonrpc": "2.0", "id": next(s.ids), "method": "initialize", "params": init}), token, s.headers)
        if status != 200:
            raise OSError(f"initialize: {status} {body[:200]!r}")
        s.headers["mcp-protocol-version"] = orjson.loads(body)["result"]["protocolVersion"]
        if "mcp-session-id" in headers:  # stateless (serve --workers N) gives none
            s.headers["mcp-session-id"] = headers["mcp-session-id"]
        await s.conn.exchange(s.path, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', token, s.headers)
        return s

    async def call_tool(self, name: str, arguments: dict[str, object]) -> dict[str, object]:
        """The tool's result (``structuredContent``, ``isError``, ``content``); a JSON-RPC error raises."""
        status, _, body = await self.conn.exchange(self.path, orjson.dumps({
            "jsonrpc": "2.0", "id": next(self.ids), "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}), self.token, self.headers)
        answer = orjson.loads(body) if body else {}
        if status != 200 or "result" not in answer:
            raise OSError(f"tools/call: {status} {answer.get('error', body[:200])}")
        result: dict[str, object] = answer["result"]
        return result


async def light_agent(port: int, token: str, me: str, to: str, sends: int, round_no: int, res: Round,
                      pid: int) -> None:
    session = await LightSession.open(port, token)
    try:
        for n in range(sends):
            t0 = time.perf_counter()
            try:
                r = await session.call_tool("send", {"recipient": to, "subject": f"r{round_no} {me} #{n}",
                                                     "body": "b"})
            except (OSError, ValueError, KeyError) as e:
                res.errors.append(f"{type(e).__name__}: {e}")
                continue
            ms = (time.perf_counter() - t0) * 1000
            found = r.get("structuredContent")
            if r.get("isError") or not isinstance(found, dict) or not isinstance(found.get("id"), str):
                res.errors.append(str(r.get("content", "error"))[:200])
            else:
                res.ack(to, found["id"], ms, pid)
    finally:
        await session.conn.close()


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


async def one_round(port: int, tokens: dict[str, str], names: list[str], sends: int, no: int, pid: int,
                    sdk: bool = False) -> Round:
    res = Round(total=len(names) * sends)
    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i, me in enumerate(names):
            to = names[(i + 1) % len(names)]
            if sdk:
                tg.start_soon(agent, f"http://127.0.0.1:{port}/mcp", tokens[me], me, to, sends, no, res, pid)
            else:
                tg.start_soon(light_agent, port, tokens[me], me, to, sends, no, res, pid)
    res.wall = time.perf_counter() - t0
    return res


RATE_TARGET, P95_TARGET = 300, 100


def mcp_round(port: int, tokens: dict[str, str], names: list[str], sends: int, no: int, pid: int) -> Round:
    """One round of the light client: every agent calls ``send`` ``sends`` times to the next one, all at once."""
    return anyio.run(one_round, port, tokens, names, sends, no, pid)


def sdk_round(port: int, tokens: dict[str, str], names: list[str], sends: int, no: int, pid: int) -> Round:
    """The same round with the SDK's own client."""
    return anyio.run(one_round, port, tokens, names, sends, no, pid, True)


def main() -> None:
    sdk = "--sdk" in sys.argv  # read here, not by run()'s parser (it takes the options every load bench shares)
    if sdk:
        sys.argv.remove("--sdk")
    name = "MCP (the SDK's client)" if sdk else "MCP"
    run(__doc__ or "", name, serve_argv, sdk_round if sdk else mcp_round, RATE_TARGET, P95_TARGET)


if __name__ == "__main__":
    main()

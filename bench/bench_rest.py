"""N concurrent REST clients, M durable sends each, against one `dovecote serve`.

Each client is an agent with its own token (``dovecote token issue E --role
agent``) and its own keep-alive connection, sending to the next agent with
``POST /api/v1/entities/{recipient}/messages`` (JSON body: the message fields,
``Authorization: Bearer <token>``; the answer is 201 with the new letter's
``id``), all at once. Then every acknowledged id is looked up in its
recipient's ledger (lost = acknowledged and not there), and the server's open
file descriptors are read at the first and the last thousand sends of each
round.

Targets (issue 8): >= 1,000 durable sends/s, p95 <= 50 ms, 0 errors, 0 lost,
fds flat. The client is a few lines of HTTP/1.1 over asyncio streams, so the
bench's own CPU (on the same 2 cores) stays small next to the server's; the
reference in the same run is the raw cost of one fsynced append per send.
"""

from __future__ import annotations

import asyncio
import time

import orjson

from _load import Round, run


class Conn:
    """One keep-alive HTTP/1.1 connection: POST a JSON body, read the status and the JSON answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, port: int) -> Conn:
        r, w = await asyncio.open_connection("127.0.0.1", port)
        return cls(r, w, f"127.0.0.1:{port}")

    async def post(self, path: str, body: dict[str, object], token: str) -> tuple[int, dict[str, object]]:
        status, _, answer = await self.exchange(path, orjson.dumps(body), token)
        return status, orjson.loads(answer) if answer else {}

    async def exchange(self, path: str, data: bytes, token: str,
                       extra: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        """POST ``data`` (JSON) with ``extra`` headers: the status, the answer's headers (lower case), its body."""
        more = "".join(f"{k}: {v}\r\n" for k, v in (extra or {}).items())
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {token}\r\n{more}"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for h in lines[1:]:
            k, _, v = h.partition(":")
            headers[k.strip().lower()] = v.strip()
        answer = await self.reader.readexactly(int(headers.get("content-length", "0") or 0))
        return status, headers, answer

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def agent(port: int, token: str, me: str, to: str, sends: int, round_no: int, res: Round, pid: int) -> None:
    conn = await Conn.open(port)
    try:
        for n in range(sends):
            t0 = time.perf_counter()
            try:
                status, answer = await conn.post(f"/api/v1/entities/{to}/messages",
                                                  {"subject": f"r{round_no} {me} #{n}", "body": "b"}, token)
            except (OSError, asyncio.IncompleteReadError, ValueError) as e:
                res.errors.append(f"{type(e).__name__}: {e}")
                conn = await Conn.open(port)
                continue
            ms = (time.perf_counter() - t0) * 1000
            if status != 201 or not isinstance(answer.get("id"), str):
                res.errors.append(f"{status} {answer.get('reason', '')}: {answer.get('detail', '')}")
            else:
                res.ack(to, str(answer["id"]), ms, pid)
    finally:
        await conn.close()


async def one_round(port: int, tokens: dict[str, str], names: list[str], sends: int, no: int, pid: int) -> Round:
    res = Round(total=len(names) * sends)
    t0 = time.perf_counter()
    await asyncio.gather(*(agent(port, tokens[me], me, names[(i + 1) % len(names)], sends, no, res, pid)
                           for i, me in enumerate(names)))
    res.wall = time.perf_counter() - t0
    return res


RATE_TARGET, P95_TARGET = 1000, 50


def serve_argv(port: int) -> list[str]:
    return ["serve", "--port", str(port)]


def rest_round(port: int, tokens: dict[str, str], names: list[str], sends: int, no: int, pid: int) -> Round:
    """One round: every agent sends ``sends`` messages to the next one, all at once."""
    return asyncio.run(one_round(port, tokens, names, sends, no, pid))


def main() -> None:
    run(__doc__ or "", "REST", serve_argv, rest_round, RATE_TARGET, P95_TARGET)


if __name__ == "__main__":
    main()

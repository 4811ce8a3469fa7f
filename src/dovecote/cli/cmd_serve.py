"""``dovecote serve``: MCP, REST, live events and the Human View of one home, in the foreground.

Loopback by default. A non-loopback ``--host`` is refused ``remote_not_allowed``
unless ``--allow-remote``, and then every request must carry a token of the
home's token file (``dovecote token issue``; an operator token reads
everything), the same tokens MCP takes: there is no second, server-minted
secret to leak or rotate (the person at the screen uses the login link instead).
The socket is bound before anything is printed, so the printed addresses
answer (``--port 0`` picks a free port and prints it).

``--workers N`` forks N server processes after the socket is bound, all
accepting on it: one process runs Python on one core at a time, so on a
machine with more cores N of them serve that many more requests at once. They
share nothing in memory that matters: every ledger write is a section under
the box's ``flock`` and each process fsyncs its own (DESIGN 1.5), warm folds
read what other processes appended, the token file is read again when it
changes, a session cookie is signed with a key drawn before the fork, and the
login link is burnt once across them (``http/session.py``). What needs one
process is MCP's session state: with more than one worker, MCP runs
stateless (every request stands alone; tools and reads work, resource
subscriptions are refused, ``wait`` is the way to be woken).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import socket
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.util import fileops

LOOPBACK_NAMES = ("localhost",)

#: How long an idle keep-alive connection stays open, seconds. Longer than the clients' own
#: expiry (httpx and the MCP SDK's client: 5 s; uvicorn's default is also 5 s), so the client
#: always lets go first: at equal times a request sent on a connection the server is closing
#: at that moment fails before any response ("Server disconnected"), and the MCP SDK hands
#: that to its caller as a bare cancellation.
KEEP_ALIVE_SECONDS = 30


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); refuses ``invalid_field`` for an address that cannot be bound."""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)
    except OSError as e:
        raise Refusal("invalid_field", f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    return sock


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


def register(app: typer.Typer, open_handle: Callable[[], Dovecote]) -> None:
    """Add ``serve`` to the CLI; ``open_handle`` opens the home the way every command does."""

    @app.command("serve")
    def serve_cmd(
        host: Annotated[str, typer.Option("--host", help="Address to listen on (loopback unless --allow-remote).")] = (
            "127.0.0.1"),
        port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free one).")] = (
            8765),
        read_only: Annotated[bool, typer.Option("--read-only", help="Switch off every route that changes state.")] = (
            False),
        allow_remote: Annotated[bool, typer.Option(
            "--allow-remote", help="Allow a non-loopback --host; every request then needs a token.")] = False,
        workers: Annotated[int, typer.Option(
            "--workers", min=1, max=32, help="Server processes on the port (more than one: MCP is stateless).")] = 1,
    ) -> None:
        """Serve MCP, REST, live events and the Human View.

        MCP at /mcp, REST at /api/v1 (OpenAPI at /openapi.json), the Human View at /.

        Until Ctrl-C. It prints the page's address, a one-time login link that
        opens a session for the person at the screen, the API base and the MCP
        endpoint.
        """
        remote = not is_loopback(host)
        if remote and not allow_remote:
            raise Refusal("remote_not_allowed", f"{host} is not a loopback address; add --allow-remote to serve it")
        import uvicorn

        from dovecote.http.app import create_app
        from dovecote.http.session import Sessions
        from dovecote.http.shield import Protocol, Shield
        from dovecote.mcp.http import in_front_of

        dc = open_handle()
        sock = bind(host, port)
        actual = sock.getsockname()[1]
        url = base_url(host, actual)
        burnt = Path(tempfile.mkdtemp(prefix="dovecote-serve-")) if workers > 1 else None
        sessions = Sessions(burnt=burnt)
        hosts = None if remote else ["127.0.0.1", "localhost", "::1", "[::1]", host]
        web = create_app(dc, read_only=read_only, remote=remote, hosts=hosts, sessions=sessions)
        # the shield outside both faces: one set of request limits, every error in the one JSON shape
        app = Shield(in_front_of(web, dc, read_only=read_only, host=host, stateless=workers > 1, port=actual,
                                 tokenless=not remote))
        person = dc.context.actor.user or "operator"
        lines = [f"dovecote serve: {dc.layout.root}", f"  page:    {url}/"]
        if read_only:
            lines.append("  read-only: every route that changes state is switched off (no login link)")
        else:
            login = sessions.issue(person)
            lines.append(f"  login:   {url}/login/{login}   (works once: opens a session for {person} in a browser)")
        lines += [f"  api:     {url}/api/v1   (OpenAPI: {url}/openapi.json)", f"  events:  {url}/api/v1/events",
                  f"  mcp:     {url}/mcp   (streamable HTTP; each request: Bearer <a `dovecote token issue` token>)"]
        if not read_only:
            lines.append(f"  agent-mail: {url}/agent-mail/mcp   (mcp_agent_mail's core tools)")
        if remote:
            lines.append("  tokens:  every request: Authorization: Bearer <a `dovecote token issue` token>")
        if workers > 1:
            lines.append(f"  workers: {workers} processes on the one port (MCP stateless: no resource subscriptions)")
        lines.append("Ctrl-C stops it.")
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
        # no proxy-header rewriting: nothing here reads a client's address, and it is one middleware less a request
        config = uvicorn.Config(app, http=Protocol, log_level="warning", access_log=False, timeout_graceful_shutdown=1,
                                lifespan="on", proxy_headers=False, timeout_keep_alive=KEEP_ALIVE_SECONDS)
        try:
            if workers == 1:
                uvicorn.Server(config).run(sockets=[sock])
            else:
                raise typer.Exit(_supervise(workers, lambda: uvicorn.Server(config).run(sockets=[sock])))
        finally:
            sock.close()
            if burnt is not None:
                with contextlib.suppress(OSError):
                    fileops.remove_tree(burnt)


#: The signals that stop a server (each worker stops gracefully on either).
STOPS = (signal.SIGINT, signal.SIGTERM)


def _supervise(workers: int, serve: Callable[[], Any]) -> int:
    """Fork ``workers`` processes that each run ``serve``; wait for them; the exit code.

    SIGINT and SIGTERM are passed on to every worker (each stops gracefully), and
    the server then exits as a shell counts a stop by that signal (130, 143), as
    one process does. A worker that ends while the others still serve ends the
    whole server (exit 1, said on stderr): half a server that looks whole is worse
    than none.
    """
    children: list[int] = []
    stopping = 0  # the signal that stops the server

    def signal_all(signum: int) -> None:
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signum)

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = stopping or signum
        signal_all(signal.SIGTERM if signum == signal.SIGTERM else signal.SIGINT)

    previous = {s: signal.signal(s, stop) for s in STOPS}  # before a worker exists
    broken = False
    try:
        for _ in range(workers):
            # Each fork with the stop signals held back: a child runs the parent's handlers until it sets its
            # own, and a SIGTERM meant for it in that moment (a sibling died at once) would only have it
            # signal its elder siblings and then serve on, never stopped. Held, the signal waits for the
            # child's own handling (SIG_DFL: it ends), and for the parent's once it has the new pid.
            signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
            pid = os.fork()
            if pid == 0:  # a worker: serve until told to stop, then leave without the parent's clean-up
                signal.signal(signal.SIGINT, signal.default_int_handler)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                code = 0
                try:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
                    serve()
                except SystemExit as e:  # uvicorn's own way out (3: its startup failed, and it said why)
                    code = e.code if isinstance(e.code, int) else 1
                except BaseException:  # a worker's failure is its exit code, never the parent's traceback
                    code = 1
                os._exit(code)
            children.append(pid)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
        alive = set(children)
        while alive:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            alive.discard(pid)
            if stopping or broken:
                continue
            if alive or os.waitstatus_to_exitcode(status) != 0:
                state = "failed" if os.waitstatus_to_exitcode(status) != 0 else "stopped"
                sys.stderr.write(f"dovecote serve: worker {pid} {state}; stopping the server\n")
                broken = True
                signal_all(signal.SIGTERM)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if broken:
        return 1
    return 128 + stopping if stopping else 0

"""Shared pieces of the load benchmarks (``bench_rest.py``, ``bench_mcp.py``, ``bench_send.py``).

A server bench builds a home of N agents, each with its own token, starts a real
server process on loopback, has every agent send to the next one at once, then
looks every acknowledged id up in its recipient's ledger (lost = acknowledged
and not there). The reference, measured in the same run and the same
directory, is the raw cost of the durability itself: one line appended and
fsynced per send, one after another, as a writer without group commit pays it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dovecote.handle.api import Dovecote, init, open_home
from dovecote.model.addresses import entity
from dovecote.roster.store_url import shown
from dovecote.verbs import EntityAdd

BIN = Path(sys.executable).parent / "dovecote"
#: The application name of the server's PostgreSQL sessions (``--store``), to find their backends.
BACKENDS = f"dovecote_bench_{os.getpid()}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def tree(pid: int) -> list[int]:
    """``pid`` and its child processes (``serve --workers N`` forks N), from /proc."""
    out = [pid]
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            out += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return out


def cpu_seconds(pid: int, *, children: bool = True) -> float:
    """User + system CPU time of a process and (unless ``children`` is false) its children so far
    (from /proc/<pid>/stat)."""
    total = 0
    for p in tree(pid) if children else [pid]:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def backends_cpu(url: str) -> float:
    """CPU seconds of the PostgreSQL backends serving the bench's server (its pools' sessions, by
    their application name; the server runs on this machine), read while they are still open."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        pids = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s AND pid <> "
                            "pg_backend_pid()", (BACKENDS,)).fetchall()
    return sum(cpu_seconds(int(str(p[0]))) for p in pids)


def fds(pid: int) -> int:
    """Open file descriptors of the server: its process and its workers."""
    total = 0
    for p in tree(pid):
        with contextlib.suppress(OSError):
            total += len(os.listdir(f"/proc/{p}/fd"))
    return total


def pct(xs: Sequence[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))] if s else float("nan")


def agents_home(root: Path, clients: int, store: str | None = None) -> tuple[Path, list[str], dict[str, str]]:
    """A home with ``clients`` agents and a token each, its ledgers in ``store`` (a PostgreSQL URL)
    or its own files: (home, names, tokens by name)."""
    home, _ = init(root / ".dovecote", owner_root=str(root), store=store)
    dc = open_home(home)
    names = [f"ent_agent{i:02d}" for i in range(clients)]
    for n in names:
        dc.add_entity(EntityAdd(entity_id=n))
    return home, names, {n: dc.token_issue(n).token for n in names}


def start(argv: list[str], home: Path, port: int) -> subprocess.Popen[bytes]:
    """Start a server process and return once its port answers."""
    env = {**os.environ, "DOVECOTE_HOME": str(home)}
    prefix = os.environ.get("BENCH_SERVER_PREFIX", "").split()  # e.g. bench/profile_server.py
    server = subprocess.Popen([*prefix, str(BIN), *argv], env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + float(os.environ.get("BENCH_START_TIMEOUT", "30"))  # longer under valgrind
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the server did not start") from None
            time.sleep(0.05)


def stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def lost(home: Path, acked: Sequence[tuple[str, str]]) -> int:
    """How many acknowledged (recipient, id) pairs are not in the recipient's ledger (read cold)."""
    reader: Dovecote = open_home(home)
    index = {to: reader.store.read(entity(to)).index for to in {t for t, _ in acked}}
    return sum(1 for to, lid in acked if lid not in index[to])


def raw_fsync_rate(directory: Path, n: int = 300) -> tuple[float, float]:
    """The reference: (median µs, appends/s) of open("ab") + write + fsync + close of one send-sized line."""
    path = directory / "raw-reference.jsonl"
    line = b'{"agent":"ent_agent00","kind":"message","subject":"r0 #0","body":"b","to":"entity:ent_agent01"}\n'
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        with open(path, "ab") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        times.append(time.perf_counter() - t0)
    path.unlink()
    m = statistics.median(times)
    return m * 1e6, 1 / m


@dataclass
class Round:
    """One round of sends: latencies (ms), acknowledged (recipient, id), errors, fds sampled."""

    total: int
    lat: list[float] = field(default_factory=list)
    acked: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wall: float = 0.0
    #: the server's open fds when the 1,000th and the (total - 1,000)th send was acknowledged
    fd_first: int | None = None
    fd_last: int | None = None

    def ack(self, to: str, lid: str, ms: float, pid: int) -> None:
        self.lat.append(ms)
        self.acked.append((to, lid))
        n = len(self.acked)
        if n == min(1000, self.total):
            self.fd_first = fds(pid)
        if n == max(self.total - 1000, 1):
            self.fd_last = fds(pid)

    def line(self, no: int) -> str:
        rate = len(self.acked) / self.wall if self.wall else 0.0
        first = self.errors[0] if self.errors else ""
        return (f"round {no}: {len(self.acked)} sends in {self.wall:.2f} s = {rate:.0f}/s; "
                f"p50 {pct(self.lat, 50):.1f} ms, p95 {pct(self.lat, 95):.1f} ms, p99 {pct(self.lat, 99):.1f} ms; "
                f"errors {len(self.errors)} {first}; fds {self.fd_first}..{self.fd_last}")


def summary(name: str, rounds: list[Round], home: Path, rate_target: int, p95_target: int,
            raw: tuple[float, float], fd_start: int, fd_end: int, cpu: tuple[float, ...]) -> dict[str, float]:
    """Print the medians over rounds, the loss check, the fds and the reference; return the headline figures
    (``rate``: median sends/s, ``p95`` ms, ``acked``, ``lost``, ``errors``, ``raw_rate``: the reference's
    sends/s, two fsynced appends one after another)."""
    rate = statistics.median(len(r.acked) / r.wall for r in rounds)
    p = {q: statistics.median(pct(r.lat, q) for r in rounds) for q in (50, 95, 99)}
    acked = [a for r in rounds for a in r.acked]
    errors = sum(len(r.errors) for r in rounds)
    missing = lost(home, acked)
    sends = len(acked) or 1
    print(f"\n{name}: {len(rounds[0].lat) if rounds else 0} sends a round, {len(rounds)} rounds (medians): "
          f"{rate:.0f} durable sends/s (target >= {rate_target}), p50 {p[50]:.1f} ms, "
          f"p95 {p[95]:.1f} ms (target <= {p95_target}), p99 {p[99]:.1f} ms")
    print(f"errors {errors}, lost {missing} of {len(acked)} acknowledged; server fds: before {fd_start}, "
          f"at the first/last thousand sends of each round "
          f"{', '.join(f'{r.fd_first}/{r.fd_last}' for r in rounds)}, after {fd_end}")
    print(f"reference (same run, same disk): one raw append + fsync {raw[0]:.0f} µs = {raw[1]:.0f} fsynced "
          f"appends/s one after another; a send is two durable appends, so without group commit or overlap: "
          f"{raw[1] / 2:.0f} sends/s; measured is {rate / (raw[1] / 2):.2f}x that")
    backends = f", PostgreSQL backends {cpu[2] / sends * 1000:.2f} ms" if len(cpu) > 2 else ""
    print(f"CPU per send (during the rounds): server {cpu[0] / sends * 1000:.2f} ms (every process of it){backends}, "
          f"clients {cpu[1] / sends * 1000:.2f} ms (the bench's process); "
          f"load average now {os.getloadavg()[0]:.1f}")
    return {"rate": rate, "p95": p[95], "acked": len(acked), "lost": missing, "errors": errors,
            "raw_rate": raw[1] / 2}


@contextlib.contextmanager
def database(server: str) -> Iterator[str]:
    """A migrated schema of the run's own on ``server``, as a store URL; this process's pool on it
    is closed and the schema dropped when the run ends."""
    import psycopg

    from bench_postgres import fresh_schema
    from dovecote.store.postgres.store import release

    with psycopg.connect(server, autocommit=True) as admin, fresh_schema(admin, server) as url:
        try:
            yield f"{url}&application_name={BACKENDS}"
        finally:
            release(f"{url}&application_name={BACKENDS}")


#: One round of a bench: (port, tokens, names, sends per client, round number, server pid) -> Round.
OneRound = Callable[[int, dict[str, str], list[str], int, int, int], Round]


def run(doc: str, name: str, argv: Callable[[int], list[str]], one: OneRound, rate_target: int,
        p95_target: int) -> None:
    """The whole of a server bench: parse the options, then for each store (with ``--store``: the
    database, then the home's files, in the same run) build the home, measure the raw reference,
    start the server (``argv(port)``), run the rounds, stop it, report."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--clients", type=int, default=30)
    ap.add_argument("--sends", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=1, help="server processes (serve --workers)")
    ap.add_argument("--store", metavar="URL", help="keep the ledgers on this PostgreSQL server (postgresql://…), "
                    "in a schema of the run's own, dropped afterwards; the home's files are measured after it")
    ap.add_argument("--no-files", action="store_true",
                    help="with --store: measure the database only, not the home's files after it")
    args = ap.parse_args()
    with contextlib.ExitStack() as cleanup:
        stores = [cleanup.enter_context(database(args.store)), None] if args.store else [None]
        if args.store and args.no_files:
            stores = stores[:1]
        for store in stores:
            where = f"ledgers on PostgreSQL {shown(store)}" if store else "ledgers in the home's files"
            print(f"-- {where}", flush=True)
            one_store(args, store, f"{name}, {args.clients} clients x {args.sends} sends, "
                      f"{args.workers} server process(es), {where}", argv, one, rate_target, p95_target)


def one_store(args: argparse.Namespace, store: str | None, title: str, argv: Callable[[int], list[str]],
              one: OneRound, rate_target: int, p95_target: int) -> dict[str, float]:
    """Build a home on ``store`` with ``args.clients`` agents, serve it (``args.workers`` processes), run
    ``args.rounds`` rounds of ``args.sends`` sends a client, report; the figures of ``summary``."""
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        home, names, tokens = agents_home(Path(tmp), args.clients, store)
        raw = raw_fsync_rate(Path(tmp))
        port = free_port()
        server = start([*argv(port), "--workers", str(args.workers)], home, port)
        try:
            fd_start = fds(server.pid)
            # from here on: the server's start-up (imports, the warm handle) is not a send's cost, and
            # the clients are this process alone (the server is its child: not counted twice)
            server_cpu, client_cpu = cpu_seconds(server.pid), cpu_seconds(os.getpid(), children=False)
            rounds = []
            for r in range(args.rounds):
                before = cpu_seconds(server.pid)
                res = one(port, tokens, names, args.sends, r, server.pid)
                rounds.append(res)
                # the server's CPU per send of each round: flat while the boxes grow, or a cost that grows with data
                per_send = (cpu_seconds(server.pid) - before) / max(len(res.acked), 1) * 1000
                print(f"{res.line(r + 1)}; server CPU {per_send:.2f} ms a send", flush=True)
            cpu: tuple[float, ...] = (cpu_seconds(server.pid) - server_cpu,
                                      cpu_seconds(os.getpid(), children=False) - client_cpu)
            if store:
                cpu += (backends_cpu(store),)
            time.sleep(1.0)
            fd_end = fds(server.pid)
        finally:
            stop(server)
        raw_after = raw_fsync_rate(Path(tmp))
        return summary(title, rounds, home, rate_target, p95_target,
                       min(raw, raw_after, key=lambda x: x[0]), fd_start, fd_end, cpu)

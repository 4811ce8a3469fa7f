"""The PostgreSQL store: batch append, durable single append, and a cold sweep against the files.

Targets (issue 12):

* a batch append through ``PostgresStore.append`` (one transaction, one
  binary ``COPY`` sent a slice at a time: ``store_pgcopy``) runs at >= 50,000
  letters/s; the CPU of the first read of the box after it is shown too (the
  warm box decodes the batch's letters then, not during the append);
* a durable single append (advisory lock, read of what is new, insert,
  notify, commit with ``synchronous_commit=on``) is compared with a bare
  ``INSERT …; COMMIT`` of the same line on one connection, interleaved;
* a cold sweep of the corpus (a new store and handle, no cache on either
  side) costs at most 3x the file store's cold sweep of the same letters (the
  home's files, its ``cache/`` removed before each round), interleaved.

Each run makes a schema of its own on ``$DOVECOTE_BENCH_PG`` (default: the
machine's server, database ``test``) and drops it at the end.

Run: .venv/bin/python bench/bench_postgres.py [--singles N] [--batch N] [--letters N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg

import dovecote
from _common import build, fmt_s, med, runs, settle, timed, verdict
from dovecote.handle import api
from dovecote.handle.api import Dovecote, init
from dovecote.model.addresses import Address
from dovecote.model.letters import canonical_line
from dovecote.store.postgres import schema as store_pgschema
from dovecote.store.postgres.store import PostgresStore
from dovecote.verbs import Sweep

BATCH_TARGET = 50_000
SWEEP_TARGET = 3.0
SERVER = os.environ.get("DOVECOTE_BENCH_PG", "postgresql://127.0.0.1:5432/test")


def line(n: int, tag: str) -> bytes:
    return canonical_line({
        "ts": "2026-07-05T10:00:00Z", "agent": "bench", "repo": "repo-a", "tool": "seek", "class": "friction",
        "what": f"postgres benchmark letter {tag} #{n}: the result came back empty after ingest",
        "expected": "the symbol that was just ingested",
    })


def sweep(home: Path, store: Any) -> tuple[Any, tuple[int, int, int]]:
    """What `dovecote sweep --no-distribute` computes from a cold handle (the result freed outside the clock)."""
    shutil.rmtree(home / "cache", ignore_errors=True)
    res = Dovecote(home, store=store).sweep(Sweep(distribute=False))
    return res, (res.total, res.open, len(res.letter_ids()))


def backend_cpu(conn: psycopg.Connection[Any]) -> float:
    """CPU seconds (user + system) the server process behind ``conn`` has used: it runs on this machine."""
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    conn.commit()
    fields = Path(f"/proc/{row[0] if row else 0}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def singles(url: str, n: int) -> None:
    store = PostgresStore(url)
    bare = psycopg.connect(url)
    bare.execute("SET synchronous_commit = on")
    bare.execute("CREATE TABLE bench_bare (id serial PRIMARY KEY, line bytea NOT NULL)")
    bare.commit()
    box = Address("entity", "singles")
    store.append(box, [line(-1, "warm")])
    lib: list[float] = []
    raw: list[float] = []
    for i in range(n):
        ln = line(i, "single")
        t0 = time.perf_counter()
        store.append(box, [ln])
        t1 = time.perf_counter()
        bare.execute("INSERT INTO bench_bare (line) VALUES (%s)", (ln,))
        bare.commit()
        t2 = time.perf_counter()
        lib.append(t1 - t0)
        raw.append(t2 - t1)
    lib_m, raw_m = med(lib), med(raw)
    print(f"  single durable append, {n} interleaved with a bare INSERT; COMMIT (synchronous_commit=on)")
    print(f"    PostgresStore.append (lock, read new, insert, notify, commit)  median {lib_m * 1e6:8.1f} us")
    print(f"    bare INSERT …; COMMIT                                          median {raw_m * 1e6:8.1f} us")
    print(f"    ratio: {lib_m / raw_m:.2f}x")
    bare.close()
    store.close()


def batch(url: str, size: int, repeat: int) -> None:
    store = PostgresStore(url, pool_size=1)  # one connection: its server process is the one measured
    with store._conn() as conn:
        server = backend_cpu(conn)
    rates: list[float] = []
    times: list[float] = []
    cpu_rates: list[float] = []
    reads: list[float] = []
    for r in range(repeat):
        lines = [line(n, f"batch{r}") for n in range(size)]
        settle()
        c0 = time.process_time()
        t, got = timed(lambda lines=lines, r=r: store.append(Address("entity", f"batch{r}"), lines))
        client = time.process_time() - c0
        with store._conn() as conn:
            now = backend_cpu(conn)
        assert sum(new for _, new in got) == size
        times.append(t)
        rates.append(size / t)
        cpu_rates.append(size / (client + now - server))
        c0 = time.process_time()
        store.read(Address("entity", f"batch{r}"))  # outside the clock: the warm box decodes the letters now
        reads.append(time.process_time() - c0)
        print(f"    round {r}: wall {fmt_s(t)}, client CPU {fmt_s(client)}, server backend CPU {fmt_s(now - server)}; "
              f"the first read after: client CPU {fmt_s(reads[-1])}")
        with store._conn() as conn:
            server = backend_cpu(conn)
    rate = med(rates)
    print(f"  batch of {size:,} in one call: median {fmt_s(med(times))}, {rate:,.0f} letters/s wall "
          f"[{', '.join(f'{x:,.0f}/s' for x in rates)}]; {med(cpu_rates):,.0f} letters per CPU second "
          "(client + server backend: what a machine with the cores free would reach, less WAL fsync)")
    print(f"    the first read of the box after each: median client CPU {fmt_s(med(reads))} (its letters decoded)")
    print(f"    target >= {BATCH_TARGET:,} letters/s: wall {verdict(rate >= BATCH_TARGET)}, "
          f"CPU {verdict(med(cpu_rates) >= BATCH_TARGET)}")
    store.close()


def cold_sweeps(url: str, letters: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory(prefix="dovecote-bench-pg-") as d:
        root = Path(d)
        t_build, (corpus, _) = timed(lambda: build(root, letters))
        t_copy, copied = timed(lambda: api.copy_store(corpus.home, to=url))
        assert copied["identical"] and copied["copied"] == copied["letters"]
        print(f"  corpus: {letters:,} letters in {len(corpus.paths)} boxes ({corpus.bytes / 1e6:.1f} MB), built in "
              f"{t_build:.1f} s; copied into PostgreSQL by `copy --to` in {t_copy:.1f} s "
              f"({letters / t_copy:,.0f} letters/s)")
        warm, _ = init(root / "warmup")  # load every lazily imported module outside the clock
        dovecote.open(warm).sweep(Sweep(distribute=False)).letter_ids()
        t_pg: list[float] = []
        t_files: list[float] = []
        answers: set[tuple[int, int, int]] = set()
        for _ in range(repeat):
            store = PostgresStore(url)  # cold: nothing warm, its own pool
            t, (res, got) = timed(lambda store=store: sweep(corpus.home, store))
            t_pg.append(t)
            answers.add(got)
            del res
            store.close()
            settle()
            t, (res, got) = timed(lambda: sweep(corpus.home, None))
            t_files.append(t)
            answers.add(got)
            del res
            settle()
        assert len(answers) == 1, f"the two stores disagree: {answers}"
        pg_m, f_m = med(t_pg), med(t_files)
        print(f"  cold sweep on PostgreSQL   median {fmt_s(pg_m):>10}   [{runs(t_pg)}]")
        print(f"  cold sweep on the files    median {fmt_s(f_m):>10}   [{runs(t_files)}]")
        total, open_, _ = answers.pop()
        print(f"    ratio: {pg_m / f_m:.2f}x (target <= {SWEEP_TARGET}x): {verdict(pg_m / f_m <= SWEEP_TARGET)}; "
              f"same answer on both (total={total:,}, open={open_:,})")


@contextmanager
def fresh_schema(admin: psycopg.Connection[Any], server: str = SERVER) -> Iterator[str]:
    """A migrated schema of this run's own on ``server`` (``admin`` is connected to it), as a
    store URL; dropped afterwards."""
    schema = f"dovecote_bench_{secrets.token_hex(4)}"
    admin.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in server else "?"
    url = f"{server}{sep}options={quote(f'-csearch_path={schema}')}"
    try:
        with psycopg.connect(url) as conn:
            store_pgschema.migrate(conn)
        yield url
    finally:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--singles", type=int, default=300)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--letters", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with psycopg.connect(SERVER, autocommit=True) as admin:
        row = admin.execute("SELECT version()").fetchone()
        print(f"bench_postgres: {row[0] if row else '?'}; load average {os.getloadavg()[0]:.1f}")
        with fresh_schema(admin) as url:
            singles(url, args.singles)
            batch(url, args.batch, args.repeat)
        with fresh_schema(admin) as url:
            cold_sweeps(url, args.letters, args.repeat)


if __name__ == "__main__":
    main()

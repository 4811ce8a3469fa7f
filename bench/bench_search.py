"""Search benchmark (issue 7): index build, index size, cold CLI search after one new message, warm searches.

Builds ``--messages`` messages spread over ``--entities`` entity boxes (ledgers
written directly with ``canonical_line`` of ``envelope.build_message`` dicts;
about a third of the items are taken through seen, claim and complete, so the
DONE filter has work to do). Word frequencies are Zipf-like: a few words are
in most messages, most words in few. Then, each repeated ``--rounds`` times
(medians quoted, every round listed):

* the first index build: a new process (``dovecote search WORD``) on a home
  whose cache was deleted, against ``python -c pass`` (target <= 3 s);
* the index file's size against the ledgers' bytes (target <= 0.6x);
* a cold CLI search after one new message: another handle sends one message,
  then a new process searches (target <= 100 ms), against ``python -c pass``;
* ``--queries`` warm searches of varied words on one handle (very common,
  middling and rare words, two-word queries, JSON key names, absent words, with
  and without ``--entity`` and ``--include-terminal``): p50 and p95.

Prints the numbers; asserts nothing.
Run: .venv/bin/python bench/bench_search.py [--messages 100000] [--queries 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dovecote.handle.api import Dovecote, init, open_home
from dovecote.model.addresses import entity
from dovecote.model.envelope import build_message
from dovecote.model.letters import canonical_line, letter_id
from dovecote.ops.search.index import WARM_KEY
from dovecote.verbs import EntityAdd, Message, Search

TARGET_P50_MS = 20.0
SYLLABLES = ("ka", "lo", "mi", "ren", "tas", "vor", "qui", "del", "sun", "bra", "tek", "zu", "pan", "ost", "il")
KEY_NAMES = ("subject", "routing", "content", "body", "entity_id", "priority", "lifecycle", "thread_id")


def vocabulary(rng: random.Random, n: int) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def iso(i: int, total: int) -> str:
    s = int(i * (30 * 86400) / max(total, 1))
    day, rest = divmod(s, 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    return f"2026-06-{day + 1:02d}T{h:02d}:{m:02d}:{sec:02d}Z"


def build(root: Path, messages: int, entities: int, rng: random.Random) -> tuple[Path, list[str], list[str]]:
    home, _ = init(root / ".dovecote", owner_root=str(root))
    dc = open_home(home)
    names = [f"ent_{k}" for k in range(entities)]
    for n in names:
        dc.add_entity(EntityAdd(entity_id=n))
    vocab = vocabulary(rng, 3000)
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    per_box: dict[str, list[bytes]] = {n: [] for n in names}
    for i in range(messages):
        to = names[i % entities]
        sender = names[(i + 1) % entities]
        ts = iso(i, messages)
        subject = " ".join(rng.choices(vocab, weights, k=rng.randint(3, 7)))
        body = " ".join(rng.choices(vocab, weights, k=rng.randint(15, 60)))
        msg = build_message(ts=ts, sender=sender, recipient=to, subject=subject, body=body, source_tic=i // 100)
        line = canonical_line(msg)
        per_box[to].append(line)
        if i % 3 == 0:
            item = prev = letter_id(line)
            for kind in ("seen", "claim", "complete"):
                link = canonical_line({"ts": ts, "agent": to, "kind": kind, "ref": item, "prev": prev})
                per_box[to].append(link)
                prev = letter_id(link)
    for n, lines in per_box.items():
        path = dc.store.path(entity(n))
        assert path is not None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\n".join(lines) + b"\n")
    return home, vocab, names


def queries(rng: random.Random, vocab: list[str], names: list[str], n: int) -> list[tuple[str, dict[str, object]]]:
    out: list[tuple[str, dict[str, object]]] = []
    for k in range(n):
        r = k % 10
        if r in (0, 1):
            q = rng.choice(vocab[:20])  # very common: in a large share of messages
        elif r in (2, 3, 4):
            q = rng.choice(vocab[20:300])
        elif r in (5, 6):
            q = rng.choice(vocab[300:])  # rare
        elif r == 7:
            q = f"{rng.choice(vocab[:100])} {rng.choice(vocab[:600])}"
        elif r == 8:
            q = rng.choice(KEY_NAMES)
        else:
            q = "nosuchword" + str(k)
        opts: dict[str, object] = {}
        if k % 4 == 1:
            opts["entity_id"] = rng.choice(names)
        if k % 5 == 2:
            opts["include_terminal"] = True
        out.append((q, opts))
    rng.shuffle(out)
    return out


def pct(xs: list[float], p: float) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, round(p / 100 * (len(ys) - 1)))] * 1000


def process(argv: list[str], env: dict[str, str]) -> float:
    """Wall time of one new process, its output discarded."""
    t = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def ms(xs: list[float]) -> str:
    return ", ".join(f"{x * 1000:.0f}" for x in xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--entities", type=int, default=4)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    rng = random.Random(20260705)
    tmp = Path(tempfile.mkdtemp(prefix="dovecote-bench-search-"))
    try:
        t = time.perf_counter()
        home, vocab, names = build(tmp, args.messages, args.entities, rng)
        ledgers = sum(p.stat().st_size for p in (home / "boxes").rglob("*.jsonl"))
        print(f"search, {args.messages:,} messages in {args.entities} entity boxes, {ledgers / 1e6:.1f} MB of ledgers "
              f"(built in {time.perf_counter() - t:.1f} s)")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed: .pyc kept
        env["DOVECOTE_HOME"] = str(home)
        cli = [sys.executable, str(Path(sys.executable).parent / "dovecote"), "search"]
        bare = [process([sys.executable, "-c", "pass"], env) for _ in range(args.rounds)]
        builds, sizes = [], []
        for _ in range(args.rounds):
            shutil.rmtree(home / "cache", ignore_errors=True)
            builds.append(process([*cli, vocab[0], "--json"], env))
            index = home / "cache" / "search.sqlite"
            sizes.append(sum(p.stat().st_size for p in index.parent.glob(index.name + "*")))
        b, r = statistics.median(builds), statistics.median(sizes) / ledgers
        print(f"  first index build (new process): median {b:.2f} s [{', '.join(f'{x:.2f}' for x in builds)}] "
              f"(target <= 3 s: {'meets' if b <= 3 else 'MISSES'})")
        print(f"  index size: {statistics.median(sizes) / 1e6:.1f} MB = {r:.3f}x the ledgers "
              f"(target <= 0.6x: {'meets' if r <= 0.6 else 'MISSES'})")
        writer = Dovecote(home)
        cold: list[float] = []
        for k in range(max(args.rounds, 5) * 2):
            writer.send(Message(recipient=names[k % len(names)], sender=names[(k + 1) % len(names)],
                                subject=f"fresh zyxwv{k}", body="appended after the index"))
            cold.append(process([*cli, vocab[50], "--json"], env))
        c, p0 = statistics.median(cold), statistics.median(bare)
        print(f"  cold CLI search after one new message: median {c * 1000:.0f} ms [{ms(cold)}]; python -c pass "
              f"median {p0 * 1000:.0f} ms [{ms(bare)}] (target <= 100 ms: {'meets' if c <= 0.1 else 'MISSES'})")
        dc = Dovecote(home)
        dc.search(Search(query=vocab[1]))
        samples: list[float] = []
        counts: list[int] = []
        for q, opts in queries(rng, vocab, names, args.queries):
            t = time.perf_counter()
            res = dc.search(Search(query=q, **opts))  # type: ignore[arg-type]
            samples.append(time.perf_counter() - t)
            counts.append(res.count)
        p50, p95 = pct(samples, 50), pct(samples, 95)
        verdict = "meets" if p50 <= TARGET_P50_MS else "MISSES"
        print(f"  {len(samples)} warm searches: p50 {p50:.2f} ms, p95 {p95:.2f} ms, max {max(samples) * 1000:.2f} ms "
              f"(target p50 <= {TARGET_P50_MS:.0f} ms: {verdict}); matches per query: median "
              f"{statistics.median(counts):,.0f}, max {max(counts):,}")
        after: list[float] = []
        before = dict(dc.warm[WARM_KEY].stats)
        for k in range(20):
            body = "appended after the index"
            dc.send(Message(recipient=names[0], sender=names[1], subject=f"fresh qwxyz{k}", body=body))
            t = time.perf_counter()
            res = dc.search(Search(query=f"qwxyz{k}"))
            after.append(time.perf_counter() - t)
            assert res.count == 1
        stats = dc.warm[WARM_KEY].stats
        print(f"  warm search after one new message: p50 {pct(after, 50):.2f} ms, max {max(after) * 1000:.2f} ms "
              f"({stats['indexed'] - before['indexed']} messages indexed for 20 appends; "
              f"rebuilds {stats['rebuilds'] - before['rebuilds']}, box re-indexes {stats['box_rebuilds']})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()

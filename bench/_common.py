"""Shared pieces of the benchmarks: a realistic corpus and honest reporting.

The corpus is built with the library's own canonical form and ids, written
straight into the box files (building a million letters through ``append``
would measure the builder, not the sweep). Every number printed is a median of
repeated runs in the same process, next to the reference measured in the same
run, so a slow disk or a busy machine moves both sides.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dovecote.handle.api import Dovecote, init
from dovecote.model.addresses import Address
from dovecote.model.letters import canonical_line, letter_id
from dovecote.verbs import ProjectAdd

MONTH_SECONDS = 30 * 24 * 3600
FOREIGN_TOOLS = ("playwright", "context7 (docs lookup)", "semgrep", "browseros")
OWN_TOOLS = ("seek", "impact", "trace", "ingest", "recall", "surgical_context", "activate", "warmup")
CLASSES = ("bug", "friction", "friction", "honesty", "win", "memory_misdelivery")
WORDS = (
    "graph", "node", "edge", "stale", "index", "missing", "result", "query", "empty", "timeout",
    "returned", "expected", "symbol", "path", "file", "ranking", "wrong", "after", "ingest", "cache",
)  # fmt: skip


def iso(seconds: int) -> str:
    """An ISO-8601 UTC stamp inside June 2026 (cheaper than datetime for a million calls)."""
    day, rest = divmod(seconds, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"2026-06-{day + 1:02d}T{h:02d}:{m:02d}:{s:02d}Z"


def sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


@dataclass
class Corpus:
    """A home with project boxes and what the builder knows about them."""

    home: Path
    boxes: list[Address]
    paths: list[Path]
    reports: dict[str, list[str]] = field(default_factory=dict)  # box -> ids of non-receipt reports
    letters: int = 0
    bytes: int = 0
    seq: int = 0  # next sequence number (keeps every generated letter distinct)


class Maker:
    """Generates letters with the sweep's realistic mix (receipts, foreign tools, pickers)."""

    def __init__(self, corpus: Corpus, rng: random.Random) -> None:
        self.c = corpus
        self.rng = rng

    def letter(self, box: Address, ts: int) -> tuple[bytes, bool]:
        """One canonical line for ``box``; returns (line, is_non_receipt_report)."""
        rng = self.rng
        c = self.c
        c.seq += 1
        pool = c.reports.setdefault(box.name, [])
        r = rng.random()
        obj: dict[str, Any] = {
            "ts": iso(ts),
            "agent": f"agent-{rng.randrange(40)}",
            "repo": box.name,
            "tool": rng.choice(OWN_TOOLS),
            "class": rng.choice(CLASSES),
            "what": f"{sentence(rng, 8, 18)} #{c.seq}",
            "expected": sentence(rng, 4, 10),
        }
        if rng.random() < 0.3:
            obj["snippet"] = sentence(rng, 10, 25)
        if r < 0.20 and len(pool) >= 3:  # a receipt answering ~3 earlier reports
            window = pool[-3000:]
            obj["class"] = "triage"
            obj["answers"] = rng.sample(window, min(len(window), rng.choice((2, 3, 3, 4))))
            obj["disposition"] = rng.choice(("fixed", "declined", "moot"))
            return canonical_line(obj), False
        if r < 0.28:
            obj["tool"] = rng.choice(FOREIGN_TOOLS)
        elif r < 0.33 and pool:  # picked up by another agent: in flight
            obj["answers"] = [rng.choice(pool[-3000:])]
        return canonical_line(obj), True

    def batch(self, box: Address, stamps: list[int]) -> list[bytes]:
        out = []
        pool = self.c.reports.setdefault(box.name, [])
        for ts in stamps:
            line, is_report = self.letter(box, ts)
            if is_report:
                pool.append(letter_id(line))
            out.append(line)
        return out


def build(root: Path, letters: int, boxes: int = 20, seed: int = 20260705) -> tuple[Corpus, Maker]:
    """A home with ``boxes`` project boxes holding ``letters`` letters spread over a month."""
    home, _ = init(root / "home", owner_root=str(root / "owner"))
    dc = Dovecote(home)
    for b in range(boxes):
        dc.add_project(ProjectAdd(name=f"p{b:02d}", root=str(root / "repos" / f"p{b:02d}")))
    addrs = [Address("project", f"p{b:02d}") for b in range(boxes)]
    paths = []
    for a in addrs:
        p = dc.store.path(a)
        assert p is not None
        paths.append(p)
    corpus = Corpus(home, addrs, paths)
    rng = random.Random(seed)
    maker = Maker(corpus, rng)
    step = MONTH_SECONDS / max(letters, 1)
    per_box: list[list[int]] = [[] for _ in range(boxes)]
    for i in range(letters):
        per_box[rng.randrange(boxes)].append(int(i * step) + rng.randrange(60))
    for addr, path, stamps in zip(addrs, paths, per_box, strict=True):
        data = b"\n".join(maker.batch(addr, sorted(stamps))) + b"\n" if stamps else b""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        corpus.bytes += len(data)
    corpus.letters = letters
    return corpus, maker


def write_box(dc: Dovecote, address: Address, lines: list[bytes]) -> None:
    """Write a whole box's ledger at once (a benchmark's corpus, not an append to measure)."""
    path = dc.store.path(address)
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Run ``fn`` once; the result is returned so it is freed outside the clock."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def settle() -> None:
    """Collect garbage between runs so one run's heap does not bill the next."""
    gc.collect()


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.3f} s"


def runs(xs: list[float]) -> str:
    return ", ".join(fmt_s(x) for x in xs)


def verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"

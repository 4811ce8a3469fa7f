"""What the soak watches of its servers, and how it judges "flat".

Every few seconds it reads, for each server's process tree (``serve`` and any
workers it forked), the open file descriptors (``/proc/PID/fd``), the threads
(``Threads:`` of ``/proc/PID/status``) and the resident memory (``VmRSS:``).

Flat is judged on the samples after the first minute (the warm-up: thread
pools fill, connections open, the allocator and the caches reach their
working size); for a run shorter than five minutes the warm-up and each
window are a fifth of it. Descriptors are the clients' connections, each
held open for the whole run, and the files the handle's workers hold open for
the moment of an append (a ledger, a lock file): so the last minute's highest
may exceed the second minute's by ``FD_SLACK`` only, one for each worker thread
of the server's two pools (REST's and MCP's) caught mid-append in a sample,
where a connection reopened is one more. Threads are the
servers' pools, each of which starts all its threads on its first call
(``http.runner.started``) and never ends one, so after the warm-up their number
is fixed: the last minute may reach no higher than the highest of the run's
first half after the warm-up, plus ``THREAD_SLACK`` (a thread the database
driver or the libraries start for a while; a leak of one thread a minute goes
over it in a ten-minute run).
Memory may grow with the data itself: the ledgers grow with every letter and
a server keeps derived state of them (each box's id index, the fold caches),
so the last minute's median RSS may exceed the second minute's by
``RSS_SLACK_MIB`` plus, for every letter appended between the two,
``RSS_HELD_FACTOR`` times what a warm handle holds per letter it appends to
the soak's home (the reference, measured after the run in a new process;
once per server, as each server reads every box); memory lost per call, not
per letter, goes over that in minutes.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from _load import tree

#: How far the late window's highest count may exceed the run's earlier high: files open mid-append (one a worker
#: thread of the two pools: a sample caught 9 more than the second minute's high in a ten-minute run with the
#: counts otherwise flat at 77-82), connections reopened; a pool thread.
FD_SLACK = 16
THREAD_SLACK = 4
#: RSS growth allowed between the windows: allocator arenas settling, plus the derived state of the new letters
#: (``RSS_HELD_FACTOR`` times what a warm handle holds per letter it appends, ``held_per_letter_kib``: the
#: server also reads, and freed objects leave pymalloc arenas partly used).
RSS_SLACK_MIB = 16.0
RSS_HELD_FACTOR = 1.5


@dataclass(frozen=True, slots=True)
class Sample:
    """The servers at one moment: seconds since the start, fds, threads, RSS (KiB), letters acknowledged so far."""

    t: float
    fds: int
    threads: int
    rss_kib: int
    letters: int


def _status_field(pid: int, key: str) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def sample(pids: Sequence[int], t: float, letters: int) -> Sample:
    """One sample of every server's process tree, summed."""
    procs = [p for pid in pids for p in tree(pid)]
    fds = 0
    for p in procs:
        with contextlib.suppress(OSError):
            fds += len(os.listdir(f"/proc/{p}/fd"))
    return Sample(t, fds, sum(_status_field(p, "Threads") for p in procs),
                  sum(_status_field(p, "VmRSS") for p in procs), letters)


def windows(samples: Sequence[Sample], seconds: float) -> tuple[list[Sample], list[Sample], list[Sample]]:
    """The early window (the second minute, or the second fifth of a short run), the run's first half after
    the warm-up, and the late window (the last minute, or fifth).

    The run is counted from the last sample before the first letter was acknowledged: on a loaded machine a
    server may take seconds to answer anything, and an early window of a short run would otherwise sample a
    server still starting (its clients connecting, no pool started) and call the served one a leak.
    """
    served = next((i for i, s in enumerate(samples) if s.letters > 0), 0)
    start = samples[served - 1].t if served > 0 else 0.0
    span = min(60.0, max(seconds - start, 0.0) / 5)
    end = max((s.t for s in samples), default=0.0)
    early = [s for s in samples if start + span <= s.t < start + 2 * span]
    before = [s for s in samples if start + span <= s.t < max(start + (end - start) / 2, start + 2 * span)]
    late = [s for s in samples if s.t >= end - span]
    return early, before, late


@dataclass(frozen=True, slots=True)
class Flatness:
    """The verdict on the servers' resources, with the figures it rests on."""

    early: tuple[Sample, ...]
    between: tuple[Sample, ...]
    late: tuple[Sample, ...]
    held_kib: float
    problems: tuple[str, ...]

    @property
    def flat(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        def show(name: str, ws: Sequence[Sample]) -> str:
            if not ws:
                return f"{name}: no samples"
            rss = statistics.median(s.rss_kib for s in ws) / 1024
            return (f"{name} ({ws[0].t:.0f}-{ws[-1].t:.0f} s, {len(ws)} samples): fds {min(s.fds for s in ws)}-"
                    f"{max(s.fds for s in ws)}, threads {min(s.threads for s in ws)}-{max(s.threads for s in ws)}, "
                    f"RSS median {rss:.1f} MiB, letters {ws[-1].letters}")

        verdict = "flat" if self.flat else "NOT flat: " + "; ".join(self.problems)
        high = (f"first half after the warm-up ({self.between[0].t:.0f}-{self.between[-1].t:.0f} s): highest threads "
                f"{max(s.threads for s in self.between)}") if self.between else "no samples in the first half"
        return [show("early window", self.early), high, show("late window", self.late),
                f"reference: warm handles (one a server) hold {self.held_kib:.2f} KiB per letter appended",
                f"resources: {verdict}"]


def judge(samples: Sequence[Sample], seconds: float, held_kib: float) -> Flatness:
    """The late window against the run after its warm-up (see the module docstring for the bounds and why)."""
    early, before, late = windows(samples, seconds)
    if not early or not before or not late:
        return Flatness(tuple(early), tuple(before), tuple(late), held_kib, ("too few samples to compare windows",))
    problems = []
    fd_growth = max(s.fds for s in late) - max(s.fds for s in early)
    if fd_growth > FD_SLACK:
        problems.append(f"fds grew by {fd_growth} from the early window (allowed {FD_SLACK})")
    thread_growth = max(s.threads for s in late) - max(s.threads for s in before)
    if thread_growth > THREAD_SLACK:
        problems.append(f"threads grew by {thread_growth} over the first half's high (allowed {THREAD_SLACK})")
    new_letters = late[-1].letters - early[0].letters
    rss_growth = (statistics.median(s.rss_kib for s in late) - statistics.median(s.rss_kib for s in early)) / 1024
    allowed = RSS_SLACK_MIB + new_letters * RSS_HELD_FACTOR * held_kib / 1024
    if rss_growth > allowed:
        problems.append(f"RSS grew by {rss_growth:.1f} MiB (allowed {allowed:.1f} MiB for {new_letters} new letters "
                        f"at {held_kib:.2f} KiB each held by warm handles)")
    return Flatness(tuple(early), tuple(before), tuple(late), held_kib, tuple(problems))


#: A warm handle's cost per new letter, as a server pays it: a new process opens the soak's home, reads every
#: entity's inbox and search once, then sends ``SENDS`` messages among the agents (every fifth recipient's
#: inbox and search read after it, as the soak's clients do). Prints "<RSS growth KiB> <letters appended>".
_HOLD = """
import gc, random, sys
from dovecote.handle.api import open_home
from dovecote.verbs import Inbox, Message, Search
def rss():
    return next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmRSS:"))
dc = open_home(sys.argv[1])
sends, names = int(sys.argv[2]), sys.argv[3:]
rng = random.Random(7)
def read(n):
    dc.inbox(Inbox(entity_id=n))
    dc.search(Search(query="harbor", entity_id=n))
for n in names:
    read(n)
gc.collect()
before = rss()
for i in range(sends):
    to = rng.choice(names)
    dc.send(Message(recipient=to, sender=rng.choice([n for n in names if n != to]), subject=f"harbor ref {i}",
                    body="ember quartz via reference"))
    if i % 5 == 0:
        read(to)
gc.collect()
print(rss() - before, 2 * sends)
"""
SENDS = 1500
#: A run shorter than five minutes appends a few thousand letters, whose derived state stays inside
#: ``RSS_SLACK_MIB`` anyway: a fifth of the reference's sends is enough to tell a leak per call from it.
SHORT_SENDS = 300


def reference_sends(seconds: float) -> int:
    """How many sends the memory reference of a run of ``seconds`` makes (its windows are a minute
    from five minutes on, ``windows``; below, a fifth of the run and a few thousand letters)."""
    return SENDS if seconds >= 5 * 60 else SHORT_SENDS


def held_per_letter_kib(home: Path, names: Sequence[str], sends: int = SENDS) -> float:
    """The reference for memory that grows with the data: KiB a warm handle on ``home`` holds per letter
    appended (a send is two: the recipient's and the sender's), measured in a new process after the run."""
    out = subprocess.run([sys.executable, "-c", _HOLD, str(home), str(sends), *names], capture_output=True,
                         text=True, check=True, env={**os.environ, "DOVECOTE_HOME": str(home)}).stdout.split()
    grown, letters = int(out[0]), int(out[1])
    return grown / letters if letters else 0.0

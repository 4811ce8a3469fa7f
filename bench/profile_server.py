"""Run a dovecote server under cProfile, counting CPU per thread: the event loop and every handle call.

Use it as the prefix of a server bench (the bench starts the server through it):

    BENCH_SERVER_PREFIX=".venv/bin/python bench/profile_server.py" PROF_OUT=/tmp/rest.prof \\
        .venv/bin/python bench/bench_rest.py --rounds 1

When the server stops, ``PROF_OUT`` gets the top functions by own time and by
cumulative time. The timer is ``time.thread_time`` (CPU of the thread that ran
the code), so threads waiting on fsyncs or locks do not count as busy. Calls
made off the ``Runner`` (the MCP face's own workers, the token check) are
profiled only when they run on the event loop's thread.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import os
import pstats
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import dovecote.http.runner as runner_mod
from dovecote.cli.entry import main as cli_main

_profiles: list[cProfile.Profile] = []
_lock = threading.Lock()
_local = threading.local()
_call = runner_mod.Runner._call


def _profiled_call(self: runner_mod.Runner, fn: Any, *args: Any) -> Any:
    p = getattr(_local, "profile", None)
    if p is None:
        p = _local.profile = cProfile.Profile(time.thread_time)
        with _lock:
            _profiles.append(p)
    p.enable()
    try:
        return _call(self, fn, *args)
    finally:
        p.disable()


def _report(loop: cProfile.Profile) -> None:
    loop.disable()
    stats = pstats.Stats(loop)
    for p in _profiles:
        stats.add(p)
    out = io.StringIO()
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(45)
    stats.sort_stats("cumtime").print_stats(45)
    Path(os.environ.get("PROF_OUT", "server.prof.txt")).write_text(out.getvalue())


def main() -> None:
    runner_mod.Runner._call = _profiled_call  # type: ignore[method-assign]
    loop = cProfile.Profile(time.thread_time)

    def on_term(signum: int, frame: object) -> None:  # uvicorn re-raises SIGTERM after its graceful stop
        _report(loop)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    args = sys.argv[1:]
    if args and args[0].endswith("/dovecote"):  # the bench passes the entry point's path first
        args = args[1:]
    sys.argv = ["dovecote", *args]
    loop.enable()
    with contextlib.suppress(SystemExit):
        cli_main()
    _report(loop)


if __name__ == "__main__":
    main()

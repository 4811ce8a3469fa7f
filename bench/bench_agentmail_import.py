"""Importing an mcp_agent_mail database of 100,000 messages: ``import agent-mail --write``.

Target: the import (read the database read-only, plan, register the names,
append and fsync every letter) of a 100,000-message archive in their schema
(four projects, 100 agents, one to three recipients a message, most read, some
acknowledged, a thousand file reservations) takes at most 30 s, median of the
runs, each into a fresh home. The dry run (read and plan only) is timed too.

Run: .venv/bin/python bench/bench_agentmail_import.py [--messages N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

from _common import fmt_s, med, runs, settle, timed, verdict
from dovecote.handle.api import Dovecote, init
from dovecote.verbs import ImportAgentMail

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from agentmail_archive import DDL, t  # the schema the tests write: one copy

TARGET_S = 30.0
PROJECTS = 4
PER_PROJECT = 25


def archive(path: Path, messages: int) -> Path:
    """A database in their schema with ``messages`` messages (see the module doc)."""
    con = sqlite3.connect(path)
    con.executescript(DDL)
    con.executemany("INSERT INTO projects VALUES (?,?,?,?,NULL)",
                    [(p, f"srv-p{p}", f"/srv/p{p}", t(1)) for p in range(1, PROJECTS + 1)])
    agents = [(a, (a - 1) // PER_PROJECT + 1) for a in range(1, PROJECTS * PER_PROJECT + 1)]
    con.executemany("INSERT INTO agents VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    [(a, p, f"agent-{a}", "claude-code", "opus", "bench", t(1, a), t(2, a), "auto", "auto", None,
                      t(2, 9) if a % 40 == 0 else None) for a, p in agents])
    msgs, recips = [], []
    for m in range(1, messages + 1):
        p = m % PROJECTS + 1
        base = (p - 1) * PER_PROJECT
        sender = base + m % PER_PROJECT + 1
        ack = m % 5 == 0
        msgs.append((m, p, sender, f"th-{m // 4}" if m % 3 == 0 else None, None, f"bench message {m}",
                     f"body of bench message {m}, with a few words to make it a body", "normal", int(ack),
                     t(3 + m // 86400, m % 86400), "[]"))
        for k, kind in enumerate(("to", "cc", "bcc")[: 1 + m % 3]):
            who = base + (m + 7 * (k + 1)) % PER_PROJECT + 1
            read = t(4, m % 86400) if (m + k) % 5 < 3 else None
            recips.append((m, who, kind, read, t(5, m % 86400) if read and ack and k == 0 else None))
    con.executemany("INSERT INTO messages VALUES (?,?,?,?,?,?,?,?,?,?,?)", msgs)
    con.executemany("INSERT OR IGNORE INTO message_recipients VALUES (?,?,?,?,?)", recips)
    con.executemany("INSERT INTO file_reservations VALUES (?,?,?,?,?,?,?,?,?)",
                    [(r, r % PROJECTS + 1, (r % PROJECTS) * PER_PROJECT + r % PER_PROJECT + 1, f"src/m{r}/**", 1,
                      "bench", t(3, r), t(3, r + 3600), t(3, r + 60) if r % 2 else None) for r in range(1, 1001)])
    con.commit()
    con.close()
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dovecote-bench-am-") as tmp:
        root = Path(tmp)
        db = archive(root / "storage.sqlite3", args.messages)
        dry, wet, letters = [], [], 0
        for i in range(args.repeat):
            home, _ = init(root / f"home{i}", owner_root=str(root / f"owner{i}"))
            dc = Dovecote(home)
            settle()
            s, _ = timed(lambda dc=dc: dc.import_agent_mail(ImportAgentMail(path=str(db))))
            dry.append(s)
            settle()
            s, r = timed(lambda dc=dc: dc.import_agent_mail(ImportAgentMail(path=str(db), write=True)))
            wet.append(s)
            letters = r.letters["appended"]
        print(f"{args.messages} messages, {letters} letters appended into {r.boxes} boxes")
        print(f"dry run: median {fmt_s(med(dry))} ({runs(dry)})")
        print(f"import --write: median {fmt_s(med(wet))} ({runs(wet)}); target <= {TARGET_S:.0f} s: "
              f"{verdict(med(wet) <= TARGET_S)}")


if __name__ == "__main__":
    main()

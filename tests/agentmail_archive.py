"""mcp_agent_mail databases in their exact schema, for the importer's tests and its benchmark.

The DDL is theirs as SQLite reports it (the reference notes, section 1.2), with
their indexes; times are written as their ORM writes them (space, six fraction
digits) and, for a few rows, as their raw-SQL writers do (``T``, no fraction).
``their_counts`` is what their own ``fetch_inbox`` would return for an agent,
counted by their rule straight from the rows.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DDL = """
CREATE TABLE projects (id INTEGER NOT NULL, slug VARCHAR(255) NOT NULL, human_key VARCHAR(255) NOT NULL,
  created_at DATETIME NOT NULL, archived_at DATETIME, PRIMARY KEY (id));
CREATE UNIQUE INDEX ix_projects_slug ON projects (slug);
CREATE INDEX ix_projects_human_key ON projects (human_key);
CREATE TABLE agents (id INTEGER NOT NULL, project_id INTEGER NOT NULL, name VARCHAR(128) NOT NULL,
  program VARCHAR(128) NOT NULL, model VARCHAR(128) NOT NULL, task_description VARCHAR(2048) NOT NULL,
  inception_ts DATETIME NOT NULL, last_active_ts DATETIME NOT NULL, attachments_policy VARCHAR(16) NOT NULL,
  contact_policy VARCHAR(16) NOT NULL, registration_token VARCHAR(64), retired_at DATETIME, PRIMARY KEY (id),
  CONSTRAINT uq_agent_project_name UNIQUE (project_id, name), FOREIGN KEY(project_id) REFERENCES projects (id));
CREATE TABLE messages (id INTEGER NOT NULL, project_id INTEGER NOT NULL, sender_id INTEGER NOT NULL,
  thread_id VARCHAR(128), topic VARCHAR(64), subject VARCHAR(512) NOT NULL, body_md VARCHAR NOT NULL,
  importance VARCHAR(16) NOT NULL, ack_required BOOLEAN NOT NULL, created_ts DATETIME NOT NULL,
  attachments JSON DEFAULT '[]' NOT NULL, PRIMARY KEY (id), FOREIGN KEY(project_id) REFERENCES projects (id),
  FOREIGN KEY(sender_id) REFERENCES agents (id));
CREATE INDEX ix_messages_project_created ON messages (project_id, created_ts);
CREATE INDEX ix_messages_thread_id ON messages (thread_id);
CREATE TABLE message_recipients (message_id INTEGER NOT NULL, agent_id INTEGER NOT NULL, kind VARCHAR(8) NOT NULL,
  read_ts DATETIME, ack_ts DATETIME, PRIMARY KEY (message_id, agent_id),
  FOREIGN KEY(message_id) REFERENCES messages (id), FOREIGN KEY(agent_id) REFERENCES agents (id));
CREATE INDEX ix_message_recipients_agent ON message_recipients (agent_id, message_id);
CREATE TABLE file_reservations (id INTEGER NOT NULL, project_id INTEGER NOT NULL, agent_id INTEGER NOT NULL,
  path_pattern VARCHAR(512) NOT NULL, "exclusive" BOOLEAN NOT NULL, reason VARCHAR(512) NOT NULL,
  created_ts DATETIME NOT NULL, expires_ts DATETIME NOT NULL, released_ts DATETIME, PRIMARY KEY (id),
  FOREIGN KEY(project_id) REFERENCES projects (id), FOREIGN KEY(agent_id) REFERENCES agents (id));
CREATE TABLE agent_links (id INTEGER NOT NULL, a_project_id INTEGER NOT NULL, a_agent_id INTEGER NOT NULL,
  b_project_id INTEGER NOT NULL, b_agent_id INTEGER NOT NULL, status VARCHAR(16) NOT NULL,
  reason VARCHAR(512) NOT NULL, created_ts DATETIME NOT NULL, updated_ts DATETIME NOT NULL, expires_ts DATETIME,
  PRIMARY KEY (id), CONSTRAINT uq_agentlink_pair UNIQUE (a_project_id, a_agent_id, b_project_id, b_agent_id));
"""


def t(day: int, sec: int = 0, raw: bool = False) -> str:
    """A time as their ORM writes it (``2026-12-05 13:48:50.157787``), or as raw SQL does (``T``, no fraction)."""
    h, rest = divmod(sec, 3600)
    m, s = divmod(rest, 60)
    if raw:
        return f"2026-12-{day:02d}T{h:02d}:{m:02d}:{s:02d}"
    return f"2026-12-{day:02d} {h:02d}:{m:02d}:{s:02d}.{(sec * 7919) % 1_000_000:06d}"


@dataclass
class Builder:
    """Rows written into a new database in their schema (``close`` commits)."""

    path: Path
    con: sqlite3.Connection = field(init=False)
    next_message: int = 1

    def __post_init__(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.con = sqlite3.connect(self.path)
        self.con.executescript(DDL)

    def project(self, pid: int, human_key: str, slug: str | None = None) -> None:
        self.con.execute("INSERT INTO projects VALUES (?,?,?,?,NULL)",
                         (pid, slug or human_key.strip("/").replace("/", "-").lower(), human_key, t(1)))

    def agent(self, aid: int, pid: int, name: str, *, retired: str | None = None, inception: str | None = None,
              last_active: str | None = None) -> None:
        self.con.execute("INSERT INTO agents VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                         (aid, pid, name, "claude-code", "opus", f"{name}'s task", inception or t(1, 60),
                          last_active or t(2, 60), "auto", "auto", "tok" + str(aid), retired))

    def message(self, pid: int, sender: int, subject: str, recipients: list[tuple[int, str, str | None, str | None]],
                *, thread: str | None = None, topic: str | None = None, importance: str = "normal",
                ack: bool = False, created: str | None = None, attachments: str = "[]",
                mid: int | None = None) -> int:
        """A message and its recipient rows: (agent id, kind, read_ts, ack_ts) each."""
        mid = mid or self.next_message
        self.next_message = max(self.next_message, mid) + 1
        self.con.execute("INSERT INTO messages VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                         (mid, pid, sender, thread, topic, subject, f"body of {subject}", importance, int(ack),
                          created or t(3, mid), attachments))
        self.con.executemany("INSERT INTO message_recipients VALUES (?,?,?,?,?)",
                             [(mid, a, k, r, k2) for a, k, r, k2 in recipients])
        return mid

    def reservation(self, rid: int, pid: int, aid: int, pattern: str, created: str, expires: str,
                    released: str | None = None, exclusive: bool = True) -> None:
        self.con.execute("INSERT INTO file_reservations VALUES (?,?,?,?,?,?,?,?,?)",
                         (rid, pid, aid, pattern, int(exclusive), f"editing {pattern}", created, expires, released))

    def close(self) -> Path:
        self.con.commit()
        self.con.close()
        return self.path


#: The sample's agents: id -> (project slug, name). Agent 4 is retired.
AGENTS = {1: ("srv-alpha", "GreenCastle"), 2: ("srv-alpha", "BlueLake"), 3: ("srv-alpha", "cc-0"),
          4: ("srv-alpha", "RedFox"), 5: ("srv-beta", "GreenCastle"), 6: ("srv-beta", "NavyPeak")}


def sample(root: Path) -> Path:
    """A small storage root: two projects, six agents (one retired), messages with to/cc/bcc, read and acked
    ones, threads (one named, one a reply to a thread-less message), and reservations active, released and
    expired. Its database file is returned."""
    b = Builder(root / "storage.sqlite3")
    b.project(1, "/srv/alpha")
    b.project(2, "/srv/beta")
    for aid, (slug, name) in AGENTS.items():
        b.agent(aid, 1 if slug == "srv-alpha" else 2, name, retired=t(2, 5) if aid == 4 else None)
    first = b.message(1, 1, "Plan for the week", [(2, "to", t(3, 100), None), (3, "cc", None, None),
                                                  (4, "bcc", t(3, 200, raw=True), None)], ack=True)
    b.message(1, 2, "Re: Plan for the week", [(1, "to", t(4, 10), t(4, 20))], thread=str(first), ack=True)
    b.message(1, 1, "Schema review", [(2, "to", t(4, 30), t(4, 31)), (3, "to", None, None)],
              thread="schema-1", topic="db", importance="high", ack=True,
              attachments='[{"type":"inline","media_type":"image/webp","bytes":10,"width":1,"height":1,'
                          '"sha1":"ab","data_base64":"AAAA"}]')
    b.message(1, 3, "Schema review notes", [(1, "to", None, None), (2, "cc", t(4, 50), None)],
              thread="schema-1", importance="urgent")
    b.message(1, 1, "FYI", [(1, "to", t(4, 60), None)], importance="low")  # to itself
    b.message(2, 5, "Beta kickoff", [(6, "to", None, None)], ack=True, created=t(5, 1, raw=True))
    b.message(2, 6, "Re: Beta kickoff", [(5, "to", t(5, 90), t(5, 95))])
    b.reservation(1, 1, 1, "src/api/*.py", t(3, 0), "2099-01-01 00:00:00.000000")  # active
    b.reservation(2, 1, 2, "docs/**", t(3, 10), t(3, 3610), released=t(3, 600))  # released
    b.reservation(3, 1, 3, "README.md", t(3, 20), t(3, 80), exclusive=False)  # expired
    b.reservation(4, 2, 6, "web/**", t(5, 0), "2099-01-01 00:00:00")  # active, raw time
    return b.close()


def their_counts(db: Path, agent_id: int) -> dict[str, int]:
    """What their fetch_inbox returns for an agent, counted: messages, unread, ack-required not acknowledged."""
    con = sqlite3.connect(db)
    try:
        row: Any = con.execute(
            "SELECT count(*), sum(r.read_ts IS NULL), sum(m.ack_required AND r.ack_ts IS NULL) "
            "FROM message_recipients r JOIN messages m ON m.id = r.message_id WHERE r.agent_id = ?",
            (agent_id,)).fetchone()
    finally:
        con.close()
    return {"messages": row[0], "unread": row[1] or 0, "ack_pending": row[2] or 0}


#: The published fork's tables (``mcp_agent_mail`` 0.1.0 on PyPI), as its SQLModel creates them: no
#: ``archived_at``, ``registration_token``, ``retired_at`` or ``topic``; agents retire by ``is_active = 0``
#: with a ``deleted_ts``.
FORK_DDL = """
CREATE TABLE projects (id INTEGER NOT NULL, slug VARCHAR(255) NOT NULL, human_key VARCHAR(255) NOT NULL,
  created_at DATETIME NOT NULL, PRIMARY KEY (id));
CREATE TABLE agents (id INTEGER NOT NULL, project_id INTEGER NOT NULL, name VARCHAR(128) NOT NULL,
  program VARCHAR(128) NOT NULL, model VARCHAR(128) NOT NULL, task_description VARCHAR(2048) NOT NULL,
  inception_ts DATETIME NOT NULL, last_active_ts DATETIME NOT NULL, attachments_policy VARCHAR(16) NOT NULL,
  contact_policy VARCHAR(16) NOT NULL, is_active BOOLEAN NOT NULL, deleted_ts DATETIME, PRIMARY KEY (id));
CREATE TABLE messages (id INTEGER NOT NULL, project_id INTEGER NOT NULL, sender_id INTEGER NOT NULL,
  thread_id VARCHAR(128), subject VARCHAR(512) NOT NULL, body_md VARCHAR NOT NULL, importance VARCHAR(16) NOT NULL,
  ack_required BOOLEAN NOT NULL, created_ts DATETIME NOT NULL, attachments JSON DEFAULT '[]' NOT NULL,
  PRIMARY KEY (id));
CREATE TABLE message_recipients (message_id INTEGER NOT NULL, agent_id INTEGER NOT NULL, kind VARCHAR(8) NOT NULL,
  read_ts DATETIME, ack_ts DATETIME, PRIMARY KEY (message_id, agent_id));
CREATE TABLE file_reservations (id INTEGER NOT NULL, project_id INTEGER NOT NULL, agent_id INTEGER NOT NULL,
  path_pattern VARCHAR(512) NOT NULL, "exclusive" BOOLEAN NOT NULL, reason VARCHAR(512) NOT NULL,
  created_ts DATETIME NOT NULL, expires_ts DATETIME NOT NULL, released_ts DATETIME, PRIMARY KEY (id));
"""


def fork_sample(root: Path) -> Path:
    """A storage root in the fork's schema: one project, an active agent, one it retired (inactive, with a
    ``deleted_ts``), one inactive with no ``deleted_ts``, and a message from the retired one, read."""
    path = root / "storage.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript(FORK_DDL)
    con.execute("INSERT INTO projects VALUES (1, 'srv-alpha', '/srv/alpha', ?)", (t(1),))
    for aid, name, active, deleted in ((1, "GreenCastle", 1, None), (2, "RedFox", 0, t(2, 7)),
                                       (3, "BlueLake", 0, None)):
        con.execute("INSERT INTO agents VALUES (?,1,?,'codex-cli','gpt-5','',?,?,'auto','auto',?,?)",
                    (aid, name, t(1, 60), t(2, 60), active, deleted))
    con.execute("INSERT INTO messages VALUES (1, 1, 2, NULL, 'Handing over', 'notes', 'high', 1, ?, '[]')",
                (t(2, 1),))
    con.execute("INSERT INTO message_recipients VALUES (1, 1, 'to', ?, NULL)", (t(2, 9),))
    con.commit()
    con.close()
    return path

"""A storage root written by mcp_agent_mail's own server code (the ``mcp_agent_mail==0.1.0`` package on PyPI),
and what their own ``fetch_inbox`` shows each agent in it.

``DRIVER`` is run by a throwaway venv's python that has their package (never by ours): it builds their
FastMCP app in-process and calls its tools by name through fastmcp's in-memory client, so every row is
written by their code, with their validation and their timestamps. No network: their LLM features are off
and litellm reads its bundled price map. It writes ``their_view.json`` beside the database: for each
agent, the ids of the messages their ``fetch_inbox`` lists, and of those the unread ones (their row's
``read_ts`` is NULL) and the ack-required ones not acknowledged (``ack_ts`` NULL: their tool returns
neither time); and every reservation row, released or not. ``environment`` is the process environment
the driver needs.
"""

from __future__ import annotations

from pathlib import Path

#: The package version the archive is made with (the published fork of upstream mcp_agent_mail).
VERSION = "0.1.0"
PACKAGE = f"mcp_agent_mail=={VERSION}"
#: The two projects (absolute paths: dovecote's roster roots) and the agents of each.
ALPHA, BETA = "/srv/am/alpha", "/srv/am/beta"


def environment(root: Path) -> dict[str, str]:
    """Their settings for a fresh storage root at ``root`` (database inside it), with nothing reaching out."""
    return {"STORAGE_ROOT": str(root), "DATABASE_URL": f"sqlite+aiosqlite:///{root}/storage.sqlite3",
            "MCP_TOOLS_MODE": "extended",  # every tool by name (the default shows a core few)
            "LLM_ENABLED": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "TOOLS_LOG_ENABLED": "false",
            "LOG_RICH_ENABLED": "false", "LOG_LEVEL": "WARNING", "FASTMCP_LOG_LEVEL": "WARNING",
            "HTTP_RATE_LIMIT_ENABLED": "false"}


DRIVER = r'''
import asyncio, json, sqlite3, sys
from fastmcp import Client
from mcp_agent_mail.app import build_mcp_server

ALPHA, BETA = sys.argv[2], sys.argv[3]
OUT = sys.argv[1]


def active_agents(root):
    con = sqlite3.connect(root + "/storage.sqlite3")
    try:
        return con.execute("SELECT p.human_key, a.name FROM agents a JOIN projects p ON p.id = a.project_id "
                           "WHERE a.is_active = 1 ORDER BY a.id").fetchall()
    finally:
        con.close()


async def main():
    app = build_mcp_server()
    view = {"agents": [], "calls": 0}
    async with Client(app) as c:
        async def call(tool, **args):
            r = await c.call_tool(tool, args, raise_on_error=False)
            view["calls"] += 1
            if r.is_error:
                raise RuntimeError(f"{tool} {args}: {[getattr(x, 'text', x) for x in r.content]}")
            data = r.structured_content
            return data["result"] if isinstance(data, dict) and set(data) == {"result"} else data

        async def inbox(project, name):
            rows = await call("fetch_inbox", project_key=project, agent_name=name, limit=1000,
                              include_bodies=False)
            return rows

        await call("ensure_project", human_key=ALPHA)
        await call("ensure_project", human_key=BETA)
        names = {}
        for project, name, program in [(ALPHA, "GreenCastle", "claude-code"), (ALPHA, "BlueLake", "codex-cli"),
                                       (ALPHA, "RedFox", "claude-code"), (ALPHA, "cc-0", "gemini-cli"),
                                       (BETA, "NavyPeak", "claude-code"), (BETA, "GoldHawk", "codex-cli"),
                                       (BETA, "SilverWolf", "codex-cli")]:
            a = await call("register_agent", project_key=project, program=program, model="opus",
                           name=name, task_description=f"{name} works on {project}")
            names[(project, name)] = a["name"]  # their sanitiser may change it (cc-0 -> cc0)
        g, b, r, c0 = (names[(ALPHA, n)] for n in ("GreenCastle", "BlueLake", "RedFox", "cc-0"))
        n, h, w = (names[(BETA, n)] for n in ("NavyPeak", "GoldHawk", "SilverWolf"))

        def mid(res):
            return res["deliveries"][0]["payload"]["id"]

        async def send(project, sender, to, subject, **kw):
            return mid(await call("send_message", project_key=project, sender_name=sender, to=to, subject=subject,
                                  body_md=f"{subject}: body text", **kw))

        # alpha: to/cc/bcc, importance, ack_required, named threads and replies (which thread by the original)
        plan = await send(ALPHA, g, [b], "Plan for the week", cc=[c0], bcc=[r], ack_required=True)
        await call("mark_message_read", project_key=ALPHA, agent_name=b, message_id=plan)
        await call("acknowledge_message", project_key=ALPHA, agent_name=r, message_id=plan)
        re1 = await call("reply_message", project_key=ALPHA, message_id=plan, sender_name=b,
                         body_md="Looks good to me.")
        await call("acknowledge_message", project_key=ALPHA, agent_name=g, message_id=re1["id"])
        ids = []
        for i in range(6):
            ids.append(await send(ALPHA, [g, b, c0][i % 3], [[b], [c0], [g]][i % 3], f"Schema review {i}",
                                  thread_id="schema-1", importance=["normal", "high", "urgent", "low"][i % 4],
                                  ack_required=i % 2 == 0, cc=[r] if i == 3 else None))
        for i, m in enumerate(ids):
            target = [b, c0, g][i % 3]
            if i % 3 == 0:
                await call("acknowledge_message", project_key=ALPHA, agent_name=target, message_id=m)
            elif i % 3 == 1:
                await call("mark_message_read", project_key=ALPHA, agent_name=target, message_id=m)
        await call("reply_message", project_key=ALPHA, message_id=ids[1], sender_name=c0, body_md="Replying",
                   cc=[g])
        for i in range(10):
            await send(ALPHA, [b, c0, r, g][i % 4], [[g, c0], [b], [g], [b, c0]][i % 4], f"Status {i}",
                       bcc=[r] if i % 4 == 0 else None, ack_required=i % 3 == 0,
                       importance="high" if i % 5 == 0 else "normal")
        await send(ALPHA, g, [g], "Note to self")
        # beta
        kick = await send(BETA, n, [h, w], "Beta kickoff", ack_required=True, importance="urgent")
        await call("acknowledge_message", project_key=BETA, agent_name=h, message_id=kick)
        await call("reply_message", project_key=BETA, message_id=kick, sender_name=h, body_md="On it")
        for i in range(14):
            m = await send(BETA, [h, w, n][i % 3], [[n], [n, h], [w]][i % 3], f"Beta task {i}",
                           cc=[h] if i % 3 == 2 else None, ack_required=i % 2 == 1, thread_id=f"beta-{i % 2}")
            if i % 4 == 0:
                await call("mark_message_read", project_key=BETA, agent_name=[n, n, w][i % 3], message_id=m)
        # a message across projects: their fork writes it twice (an empty row in the sender's project and
        # one from an alias agent it registers in the other project)
        await send(ALPHA, g, [f"{n}@{BETA}"], "Cross-project hello")

        # reservations: exclusive and shared, two released, one asked for twice (this fork adds a second row)
        for ttl in (7200, 9000):
            await call("file_reservation_paths", project_key=ALPHA, agent_name=g, paths=["src/api/*.py"],
                       ttl_seconds=ttl, reason="api work")
        await call("file_reservation_paths", project_key=ALPHA, agent_name=b, paths=["docs/**", "README.md"],
                   exclusive=False, reason="docs")
        await call("file_reservation_paths", project_key=ALPHA, agent_name=c0, paths=["tests/**"])
        await call("file_reservation_paths", project_key=BETA, agent_name=n, paths=["web/**"], ttl_seconds=600)
        await call("file_reservation_paths", project_key=ALPHA, agent_name=r, paths=["infra/*.tf"])
        await call("release_file_reservations", project_key=ALPHA, agent_name=b, paths=["docs/**"])
        await call("release_file_reservations", project_key=ALPHA, agent_name=c0)

        # every agent's view by their fetch_inbox. RedFox is retired the one way this fork has (registering
        # its name in another project retires the first holder and releases its reservations); a retired
        # agent can no longer read, so its view is taken just before
        fetched = {(ALPHA, r): await inbox(ALPHA, r)}
        r2 = await call("register_agent", project_key=BETA, program="claude-code", model="opus", name=r)
        await send(BETA, r2["name"], [n], "New here")
        for p, a in active_agents(OUT):  # every agent that can still read, their alias of GreenCastle included
            fetched[(p, a)] = await inbox(p, a)
    con = sqlite3.connect(OUT + "/storage.sqlite3")
    try:
        agents = {(row[0], row[1]): (row[2], row[3]) for row in con.execute(
            "SELECT p.human_key, a.name, a.id, a.is_active FROM agents a JOIN projects p ON p.id = a.project_id")}
        state = {(row[0], row[1]): (row[2], row[3]) for row in con.execute(
            "SELECT agent_id, message_id, read_ts, ack_ts FROM message_recipients")}
        view["reservations"] = [dict(zip(("id", "project", "agent", "pattern", "exclusive", "released"), row))
                                for row in con.execute(
            "SELECT f.id, p.human_key, a.name, f.path_pattern, f.exclusive, f.released_ts IS NOT NULL "
            "FROM file_reservations f JOIN agents a ON a.id = f.agent_id JOIN projects p ON p.id = f.project_id "
            "ORDER BY f.id")]
    finally:
        con.close()
    for (p, a), rows in fetched.items():
        aid, active = agents[(p, a)]
        view["agents"].append({
            "project": p, "name": a, "id": aid, "active": bool(active),
            "messages": [m["id"] for m in rows],
            "unread": [m["id"] for m in rows if state[(aid, m["id"])][0] is None],
            "ack_pending": [m["id"] for m in rows if m["ack_required"] and state[(aid, m["id"])][1] is None]})
    view["unlisted_agents"] = sorted(f"{p}|{a}" for p, a in agents if (p, a) not in fetched)
    with open(OUT + "/their_view.json", "w") as f:
        json.dump(view, f, indent=1, sort_keys=True)


asyncio.run(main())
'''

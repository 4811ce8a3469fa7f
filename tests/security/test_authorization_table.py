"""Who may read whose mail, as one table run against every face: REST, MCP, the Human View's pages, the events.

The table is generated from the one rule, never written out by hand: each read of agent A's box on each face (and
a move in it, over REST and MCP) is a row naming the verb it is (``tokens.VERBS``), and what each principal gets
is what the rule answers for that verb in A's box (``remote.own``, which asks ``tokens.authorize``; no token is
the local reader, who reads every box and writes nothing, ``remote.writer``). The principals: no token on
loopback, agent A (the box's owner), agent B, an operator token, and the signed-in person's page session. A read
that names A's box answers it or refuses with the rule's keyword; a read that names no box (a search of
everything, the overview, the event stream) answers everyone, with A's items shown exactly when the rule lets the
principal read A's box.

It runs in process on a server open to the network (``create_app(..., remote=True)``: no token is no one), and
against a real ``dovecote serve`` over a socket (REST, the pages, MCP through the SDK's client, and the event
stream resumed from a forged ``Last-Event-ID`` that names no box: every box's history from the start).

Then the trust cap, from the same rule's table (``tokens.TRUST_CAP``): a message's trust level above its
sender's role is refused ``forbidden`` on the CLI, REST and MCP alike, and nothing is appended; ``human`` is the
signed-in person's alone.

Then the person's writes (the Human View's compose, reply and move forms): the session's alone, every token
refused ``human_gesture_required`` and a request with neither refused the same; each has its REST twin (a send,
a reply to an item, a move), which follows the API's rule: a token's, never the session's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from starlette.testclient import TestClient

from dovecote.errors import REASONS, Refusal
from dovecote.handle import remote
from dovecote.handle.api import Dovecote, Principal
from dovecote.http.app import create_app
from dovecote.http.session import COOKIE, Sessions
from dovecote.mcp.server import Face
from dovecote.mcp.tools import TOOLS
from dovecote.model import credentials as tokens
from dovecote.model.results import builtins
from dovecote.model.vocab import PERSON_ROLE, TrustLevel
from dovecote.model.vocab_delivery import SendType
from dovecote.ops.agents import feed
from dovecote.verbs import EntityAdd, Inbox, Message, Send, Show
from helpers import run_cli
from mailhelpers import send
from mcphelpers import http_client
from serverhelpers import ENTITY, SENDER, Server, assert_error_shape, served_home, serving

pytestmark = pytest.mark.files_only

A, B = ENTITY, SENDER
#: Who sends A the secret: neither principal's box may hold a copy (a sender keeps a record of what it sent).
THIRD = "ent_third"
#: The subject of an item in A's box: wherever it shows, A's mail showed.
SECRET = "kestrelfeather"
REF = "{ref}"  # that item's id, filled in per home
#: The subject of a blocked response in A's box: it waits on a person, so the needs list shows it to A's readers.
BLOCKED = "stuckonthekey"

#: Each principal by name; None is a request with no token (the local reader, or the signed-in person).
PRINCIPALS: dict[str, Principal | None] = {
    "none": None, "agent_a": Principal(A, "agent"), "agent_b": Principal(B, "agent"),
    "operator": Principal(B, "operator"), "session": None,
}
#: The faces a principal reaches: MCP takes a token on every request (no session, no tokenless caller).
TOKENS = ("agent_a", "agent_b", "operator")


@dataclass(frozen=True)
class Row:
    """One read (or, ``writes``, a move) in A's box on one face: a path (REST, page, events) or a tool's
    arguments (MCP).

    ``narrows``: the read names no box and answers everyone; A's mail is in the answer (``mark`` shows: the
    secret subject, or the item's id where the answer repeats the query) exactly when the rule lets the
    principal read A's box."""

    face: str
    name: str
    verb: str
    target: str | dict[str, Any]
    narrows: bool = False
    mark: str = SECRET
    writes: bool = False
    #: A write's JSON body (REST), for a verb that takes more than the path says.
    body: dict[str, Any] | None = None


ROWS: tuple[Row, ...] = (
    Row("rest", "inbox", "inbox", f"/api/v1/entities/{A}/inbox"),
    Row("rest", "item", "show", f"/api/v1/entities/{A}/items/{REF}"),
    Row("rest", "search", "search", f"/api/v1/search?query={SECRET}&entity_id={A}"),
    Row("rest", "search_everything", "search", f"/api/v1/search?query={SECRET}", narrows=True, mark=REF),
    Row("rest", "wait", "wait", f"/api/v1/entities/{A}/wait?timeout=0"),
    Row("rest", "trackers", "trackers", f"/api/v1/trackers?entity_id={A}"),
    Row("rest", "move", "seen", f"/api/v1/entities/{A}/items/{REF}/seen", writes=True),
    Row("rest", "lease_take", "lease_take", f"/api/v1/entities/{A}/leases", writes=True, body={"globs": ["src/**"]}),
    Row("rest", "lease_release", "lease_release", f"/api/v1/entities/{A}/leases/releases", writes=True, body={}),
    Row("page", "entity", "inbox", f"/entities/{A}"),
    Row("page", "item", "show", f"/entities/{A}/items/{REF}"),
    Row("page", "search", "search", f"/search?q={SECRET}&entity={A}"),
    Row("page", "search_everything", "search", f"/search?q={SECRET}", narrows=True, mark=REF),
    Row("page", "overview", "inbox", "/", narrows=True, mark=f"/entities/{A}?show="),
    Row("rest", "needs", "inbox", "/api/v1/needs", narrows=True, mark=BLOCKED),
    Row("page", "needs", "inbox", "/needs", narrows=True, mark=BLOCKED),
    Row("mcp", "inbox", "inbox", {"entity_id": A}),
    Row("mcp", "show", "show", {"entity_id": A, "ref": REF}),
    Row("mcp", "search", "search", {"query": SECRET, "entity_id": A}),
    Row("mcp", "search_everything", "search", {"query": SECRET}, narrows=True, mark=REF),
    Row("mcp", "wait", "wait", {"entity_id": A, "timeout": 0}),
    Row("mcp", "trackers", "trackers", {"entity_id": A}),
    Row("mcp", "move", "seen", {"kind": "seen", "entity_id": A, "ref": REF}, writes=True),
    Row("mcp", "lease", "lease_take", {"action": "take", "entity_id": A, "globs": ["src/**"]}, writes=True),
    Row("mcp", "lease", "lease_release", {"action": "release", "entity_id": A}, writes=True),
    Row("events", "replay", "inbox", "/api/v1/events", narrows=True, mark=f"entity:{A}"),
)


def expected(who: str, read: Row, *, off_loopback: bool = False) -> str:
    """What the rule promises ``who`` for ``read``: ``ok``/``shown``/``hidden``, or the refusal keyword."""
    if off_loopback and who == "none":
        return "unauthorized"  # open to the network, a request with neither token nor session is no one
    try:
        if read.writes:
            remote.writer(PRINCIPALS[who], read.verb)  # a write has a token's entity behind it
        remote.own(PRINCIPALS[who], read.verb, A)  # the rule: an agent reads its own box, the rest every box
    except Refusal as refused:
        return "hidden" if read.narrows else refused.reason
    return "shown" if read.narrows else "ok"


def _filled(target: Any, ref: str) -> Any:
    if isinstance(target, str):
        return target.replace(REF, ref)
    return {k: (ref if v == REF else v) for k, v in target.items()}


def home(tmp: Path) -> tuple[Dovecote, str]:
    """``served_home`` with the secret item in A's box (its id, sent by a third entity) and one item in B's."""
    dc = served_home(tmp)
    dc.add_entity(EntityAdd(entity_id=THIRD))
    ref = send(dc, SECRET, recipient=A, sender=THIRD)
    send(dc, "for ops alone", recipient=B, sender=A)
    task = dc.send(Send(recipient=THIRD, type=SendType.task, work_item_id="wi-1", subject="unblock me"), actor=A)
    dc.send(Send(recipient=A, type=SendType.response, work_item_id="wi-1", parent_id=task.envelope_id,
                 subject=BLOCKED, blocker_flag=True), actor=THIRD)
    return dc, ref


def _judge(read: Row, want: str, r: httpx.Response, ref: str) -> str | None:
    """None if an HTTP answer is what the rule promised, else what went wrong."""
    status, text, mark = r.status_code, r.text, _filled(read.mark, ref)
    if want in ("ok", "shown", "hidden"):
        if status not in (200, 201):  # a write that makes something (a lease) answers 201
            return f"status {status}: {text[:200]}"
        if want != "ok" and (mark in text) != (want == "shown"):
            return f"{read.mark!r} {'missing' if want == 'shown' else 'leaked'}"
        return None
    if status != REASONS[want][0] or want not in text or SECRET in text:
        return f"status {status}, not {want}: {text[:200]}"
    if read.face == "rest":
        assert_error_shape(r, status, want)
    return None


def _pages_and_rest(client: Any, headers: dict[str, dict[str, str]], ref: str, off_loopback: bool) -> list[str]:
    """Every REST and page row for every principal: the mismatches."""
    wrong = []
    for read in ROWS:
        if read.face not in ("rest", "page"):
            continue
        for who, given in headers.items():
            want = expected(who, read, off_loopback=off_loopback)
            method = "POST" if read.writes else "GET"
            answer = client.request(method, _filled(read.target, ref), headers=given, json=read.body)
            problem = _judge(read, want, answer, ref)
            if problem:
                wrong.append(f"{read.face} {read.name} as {who} (want {want}): {problem}")
    return wrong


def _bearers(dc: Dovecote) -> dict[str, str]:
    return {who: dc.token_issue(p.entity, p.role).token for who, p in PRINCIPALS.items() if p is not None}


def test_rest_and_the_pages_follow_the_rule_in_process_off_loopback(tmp_path: Path) -> None:
    dc, ref = home(tmp_path)
    sessions = Sessions()
    with TestClient(create_app(dc, remote=True, sessions=sessions)) as c:
        c.get(f"/login/{sessions.issue('alice')}")
        cookie = {"Cookie": f"{COOKIE}={c.cookies[COOKIE]}"}
        c.cookies.clear()
        headers = {"none": {}, **{w: {"Authorization": f"Bearer {t}"} for w, t in _bearers(dc).items()},
                   "session": cookie}
        assert _pages_and_rest(c, headers, ref, off_loopback=True) == []


def _replay(url: str, headers: dict[str, str], want: int) -> list[dict[str, Any]]:
    """The first ``want`` events of a stream resumed from a forged cursor that names no box (from the start)."""
    got: list[dict[str, Any]] = []
    resume = {**headers, "Last-Event-ID": feed.encode_cursor({})}
    with httpx.stream("GET", url + "/api/v1/events", headers=resume, timeout=10) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line.startswith("data: "):
                got.append(json.loads(line[len("data: "):]))
                if len(got) == want:
                    break
    return got


def _events(server: Server, dc: Dovecote, headers: dict[str, dict[str, str]]) -> list[str]:
    """The event stream row for every principal: A's box replayed exactly when the rule says it may be read."""
    held = {label: len(dc.context.store.read(where).letters) for label, where in feed.sources(dc.context)}
    (read,) = [r for r in ROWS if r.face == "events"]
    wrong = []
    for who, given in headers.items():
        p = PRINCIPALS[who]
        boxes = {label for label in held if p is None or p.role == "operator" or label == f"entity:{p.entity}"}
        got = _replay(server.url, given, sum(held[b] for b in boxes))
        seen = {e["box"] for e in got}
        want = expected(who, read)
        if not seen <= boxes or (read.mark in seen) != (want == "shown"):
            wrong.append(f"events as {who} (want {want}): boxes {sorted(seen)}")
    return wrong


async def _mcp(url: str, bearers: dict[str, str], ref: str) -> list[str]:
    wrong = []
    for who in TOKENS:
        async with http_client(url + "/mcp", bearers[who]) as c:
            for read in (r for r in ROWS if r.face == "mcp"):
                want = expected(who, read)
                name = read.name.removesuffix("_everything")
                answer = await c.call_tool(name, _filled(read.target, ref))
                text = answer.content[0].text if answer.content else ""
                shown = json.dumps(answer.structured_content or {})
                if want in ("ok", "shown", "hidden"):
                    bad = answer.is_error or (want != "ok" and (_filled(read.mark, ref) in shown) != (want == "shown"))
                else:
                    bad = not (answer.is_error and text.startswith(f"{want}: ") and SECRET not in text)
                if bad:
                    wrong.append(f"mcp {read.name} as {who} (want {want}): {text[:200]}")
    return wrong


def test_every_face_follows_the_rule_on_a_real_server(tmp_path: Path) -> None:
    # the table: each row is a verb the rule decides, and each face serves each verb it has
    assert all(tokens.VERBS[r.verb] == "own" for r in ROWS)
    by_face = {face: {r.verb for r in ROWS if r.face == face} for face in ("rest", "page", "mcp")}
    assert by_face["rest"] == by_face["mcp"] == {"inbox", "show", "search", "wait", "trackers", "seen", "lease_take",
                                                 "lease_release"}
    assert by_face["page"] == {"inbox", "show", "search"}  # the pages that show mail
    assert {r.target.get("entity_id", A) for r in ROWS if isinstance(r.target, dict)} == {A}
    assert {r.name for r in ROWS if r.face == "mcp"} - {"search_everything"} <= set(TOOLS)
    assert {r.verb for r in ROWS if r.verb.startswith("lease")} == {v for v, s in tokens.VERBS.items()
                                                                    if v.startswith("lease")} - {"lease_renew"}
    dc, ref = home(tmp_path)
    bearers = _bearers(dc)
    with serving(tmp_path, dc.layout.root) as server, httpx.Client(base_url=server.url, timeout=30) as h:
        h.get(server.line("login"))  # the person at the screen signs in
        cookie = {"Cookie": f"{COOKIE}={h.cookies[COOKIE]}"}
        h.cookies.clear()
        headers = {"none": {}, **{w: {"Authorization": f"Bearer {t}"} for w, t in bearers.items()},
                   "session": cookie}
        wrong = _pages_and_rest(h, headers, ref, off_loopback=False)
        wrong += _events(server, dc, headers)
        wrong += anyio.run(_mcp, server.url, bearers, ref)
    assert wrong == []


# -- the trust cap: a message's trust level is its sender's role's at most -------------------------------------

#: Each sender by its role, with the face it sends through; ``local`` is the person at this machine (the CLI).
SENDERS = {"agent": Principal(A, "agent"), "operator": Principal(A, "operator"), "local": None}


def cap_allows(role: str, level: TrustLevel) -> bool:
    """The rule's own answer, asked of ``tokens.cap_trust``; the person at this machine acts as an operator."""
    try:
        tokens.cap_trust("operator" if role == "local" else role, level)
    except Refusal:
        return False
    return True


def test_the_cap_table_keeps_an_agent_below_an_operator_and_both_below_a_person() -> None:
    assert [lvl for lvl in TrustLevel if cap_allows("agent", lvl)] == ["peer", "subordinate", "visitor"]
    assert [lvl for lvl in TrustLevel if not cap_allows("operator", lvl)] == ["human"]
    assert all(cap_allows(PERSON_ROLE, lvl) for lvl in TrustLevel)
    assert PERSON_ROLE not in tokens.ROLES  # no token is issued with the person's role
    with pytest.raises(Refusal) as refused:
        tokens.cap_trust("someone", TrustLevel.operator)  # a role the table does not know: capped as an agent
    assert refused.value.reason == "forbidden"


def _send_rest(dc: Dovecote, client: TestClient, role: str, level: TrustLevel) -> str:
    p = SENDERS[role]
    assert p is not None
    r = client.post(f"/api/v1/entities/{B}/messages", json={"subject": f"rest {role} {level}", "trust_level": level},
                    headers={"Authorization": f"Bearer {dc.token_issue(p.entity, p.role).token}"})
    if r.status_code == 201:
        return "ok"
    return str(assert_error_shape(r, 403)["reason"])


def _send_mcp(dc: Dovecote, role: str, level: TrustLevel) -> str:
    p = SENDERS[role] or Principal(A, "operator", local=True)

    async def call() -> Any:
        return await Face(dc).call(TOOLS["send"], p, {"recipient": B, "subject": f"mcp {role} {level}",
                                                      "trust_level": level})
    try:
        anyio.run(call)
    except Refusal as refused:
        return refused.reason
    return "ok"


def _send_cli(tmp: Path, dc: Dovecote, level: TrustLevel) -> str:
    r = run_cli(tmp, "send", "--to", B, "--from", A, "--subject", f"cli local {level}", "--trust-level", level,
                home=dc.layout.root)
    if r.returncode == 0:
        return "ok"
    assert r.returncode == 2 and b"Traceback" not in r.stderr, r.stderr
    return r.stderr.decode().removeprefix("Error: ").split(":")[0]


def test_a_messages_trust_level_is_capped_by_its_senders_role_on_every_face(tmp_path: Path) -> None:
    dc, _ = home(tmp_path)
    wrong = []
    with TestClient(create_app(dc)) as client:
        for level in TrustLevel:
            before = builtins(dc.inbox(Inbox(entity_id=B)))
            got = {("rest", role): _send_rest(dc, client, role, level) for role in ("agent", "operator")}
            got |= {("mcp", role): _send_mcp(dc, role, level) for role in SENDERS}
            got[("cli", "local")] = _send_cli(tmp_path, dc, level)
            for (face, role), answer in got.items():
                want = "ok" if cap_allows(role, level) else "forbidden"
                if answer != want:
                    wrong.append(f"{face} {role} {level}: {answer}, want {want}")
            sent = {r["subject"] for r in builtins(dc.inbox(Inbox(entity_id=B)))["items"]} - {
                r["subject"] for r in before["items"]}
            assert sent == {f"{face} {role} {level}" for (face, role), a in got.items() if a == "ok"}, level
    assert wrong == []
    # a draft is the same message, kept for later: capped when it is written
    with pytest.raises(Refusal) as refused:
        remote.draft(dc, SENDERS["agent"], Message(recipient=B, subject="d", trust_level=TrustLevel.operator))
    assert refused.value.reason == "forbidden"


# -- the person's writes: the page's forms are the session's, their REST twins the tokens' ---------------------

#: Each write the page offers (path, form) and its REST twin (path, JSON body): compose, a reply, a move.
WRITES: dict[str, tuple[str, dict[str, str], str, dict[str, Any]]] = {
    "compose": ("/compose", {"to": B, "subject": "page compose"},
                f"/api/v1/entities/{B}/messages", {"subject": "rest compose"}),
    "reply": (f"/entities/{A}/items/{REF}/reply", {"to": THIRD, "subject": "page reply"},
              f"/api/v1/entities/{A}/items/{REF}/replies", {"recipient": THIRD, "subject": "rest reply"}),
    "move": (f"/entities/{A}/items/{REF}/seen", {}, f"/api/v1/entities/{A}/items/{REF}/seen", {}),
}


def page_write_expected(who: str) -> str:
    """A page's write is the signed-in person's: any token, or no session, is ``human_gesture_required``."""
    return "ok" if who == "session" else "human_gesture_required"


def rest_write_expected(who: str, name: str) -> str:
    """The REST twin follows the API's one rule: a token (``remote.writer``), an agent's move in its own box."""
    try:
        w = remote.writer(PRINCIPALS[who], "send" if name != "move" else "seen")
        if name != "compose":  # a move, and a reply (A's answer to the item it reads), are in A's box
            remote.own(w, "seen" if name == "move" else "show", A)
    except Refusal as refused:
        return refused.reason
    return "ok"


def test_the_persons_writes_are_the_sessions_and_their_rest_twins_the_tokens(tmp_path: Path) -> None:
    dc, ref = home(tmp_path)
    bearers = _bearers(dc)
    sessions = Sessions()
    wrong = []
    with TestClient(create_app(dc, sessions=sessions)) as c:
        c.get(f"/login/{sessions.issue('alice')}")
        cookie = {"Cookie": f"{COOKIE}={c.cookies[COOKIE]}"}
        c.cookies.clear()
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', c.get("/compose", headers=cookie).text)
        assert csrf, "the compose page has no form"
        headers = {"none": {}, **{w: {"Authorization": f"Bearer {t}"} for w, t in bearers.items()},
                   "session": {**cookie, "Origin": "http://testserver"}}
        for name, (page, form, twin, body) in WRITES.items():
            for who, given in headers.items():
                want = page_write_expected(who)
                r = c.post(_filled(page, ref), data={**form, "csrf": csrf.group(1)}, headers=given,
                           follow_redirects=False)
                got = "ok" if r.status_code == 303 else str(r.json()["reason"] if r.headers["content-type"].startswith(
                    "application/json") else re.sub(r"(?s).*<code>(\w+)</code>.*", r"\1", r.text))
                if got != want:
                    wrong.append(f"page {name} as {who}: {got}, want {want}")
                want = rest_write_expected(who, name)
                r = c.post(_filled(twin, ref), json={k: _filled(v, ref) for k, v in body.items()}, headers=given)
                got = "ok" if r.status_code in (200, 201) else str(r.json()["reason"])
                if got != want:
                    wrong.append(f"rest {name} as {who}: {got}, want {want}")
    assert wrong == []
    sent = {r["subject"]: r["sender"] for r in builtins(dc.inbox(Inbox(entity_id=B)))["items"]}
    assert sent["page compose"] == "human.alice"
    answers = [r for r in builtins(dc.inbox(Inbox(entity_id=THIRD)))["items"] if r["subject"] == "rest reply"]
    assert len(answers) == 2  # agent A's, and the operator's on A's behalf
    for answer in answers:
        shown = builtins(dc.show(Show(entity_id=THIRD, ref=answer["id"])))["envelope"]
        assert (shown["sender"], shown["reply_to"]) == (A, ref)  # A's answer, naming the item it answers

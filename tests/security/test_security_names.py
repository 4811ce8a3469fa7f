"""Path tricks and look-alikes in every name and address, on REST and MCP: refused with a keyword, nothing written.

One table names each argument that names something (entity, recipient, box address, ref, mission id, project)
with the REST request and the MCP call that carry it. Each hostile value (``../``, absolute paths, NUL, an
overlong name, mixed case, NFC/NFD variants, Cyrillic and full-width look-alikes, zero-width and bidi
characters, the engine's reserved name) goes through both faces as an operator: every answer is a 4xx in the
one error shape (``isError`` with a keyword on MCP), never a 2xx naming another box; and no file changes,
inside the home or anywhere else under the test's directory. The engine's agent name cannot be registered,
hold a token, or be used as the author of a send.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from starlette.testclient import TestClient

from dovecote import verbs
from dovecote.errors import REASONS, Refusal
from dovecote.handle.api import Principal
from dovecote.http.app import create_app
from dovecote.mcp.server import Face
from dovecote.mcp.tools import TOOLS
from dovecote.model.results import builtins
from dovecote.model.vocab import ENGINE_AGENT
from helpers import run_cli, snapshot
from serverhelpers import ENTITY, SENDER, assert_error_shape, served_home

pytestmark = pytest.mark.files_only

HOSTILE = (
    "../ent_ops", "..", "/etc/passwd", "a\x00b", "x" * 300, "ent_builder/../ent_ops", "entity:../../x",
    ENTITY.upper(), "Ent_Builder", "ent_buil\u0434er", "\uff45nt_builder", "ent_builder\u200b", "\u202eent_builder",
    "caf\u00e9", "cafe\u0301", ENGINE_AGENT, "entity:" + ENGINE_AGENT, "home/../entity:ent_ops", "project:../atlas",
    "msn_../../x", ".", "~", "%2e%2e", "\\..\\x",
)

#: argument -> (REST method, path template, JSON body or None; MCP tool, its arguments). ``{v}`` is the value.
TABLE: dict[str, tuple[str, str, dict[str, Any] | None, str, dict[str, Any]]] = {
    "entity": ("GET", "/entities/{v}/inbox", None, "inbox", {"entity_id": "{v}"}),
    "recipient": ("POST", "/entities/{v}/messages", {"subject": "s"}, "send", {"recipient": "{v}", "subject": "s"}),
    "address": ("GET", "/boxes/{v}", None, "box", {"address": "{v}"}),
    "ref": ("GET", f"/entities/{ENTITY}/items/{{v}}", None, "show", {"entity_id": ENTITY, "ref": "{v}"}),
    "mission_id": ("GET", "/missions/{v}", None, "missions", {"view": "mission", "mission_id": "{v}"}),
    "block": ("POST", "/blocks/{v}/bumps", {"project": "atlas"}, "missions", {"view": "blocks"}),
    "project": ("POST", "/blocks", {"block_id": "sb_new", "project": "{v}"}, "missions", {"project": "{v}"}),
}


def _fill(value: Any, v: str) -> Any:
    if isinstance(value, str):
        return value.replace("{v}", v)
    if isinstance(value, dict):
        return {k: _fill(x, v) for k, x in value.items()}
    return value


def _mcp(face: Face, name: str, args: dict[str, Any]) -> Any:
    async def call() -> Any:
        return await face.call(TOOLS[name], Principal(SENDER, "operator"), args)

    try:
        return anyio.run(call)
    except Refusal as r:
        return r


@pytest.mark.parametrize("argument", sorted(TABLE))
def test_path_tricks_and_look_alikes_are_refused_on_rest_and_mcp_and_write_nothing(tmp_path: Path,
                                                                                   argument: str) -> None:
    dc = served_home(tmp_path)
    token = dc.token_issue(SENDER, "operator").token
    method, template, body, tool, args = TABLE[argument]
    before = snapshot(tmp_path)
    face = Face(dc)
    with TestClient(create_app(dc), headers={"Authorization": f"Bearer {token}"}) as client:
        for v in HOSTILE:
            if v not in (".", "..") or "{v}" not in template:  # a client resolves a dot segment (RFC 3986)
                path = "/api/v1" + template.replace("{v}", quote(v, safe=""))
                r = client.request(method, path, json=_fill(body, v) if body is not None else None)
                assert 400 <= r.status_code < 500, (argument, v, r.status_code, r.text)
                assert_error_shape(r, r.status_code)
            got = _mcp(face, tool, _fill(args, v))
            if argument != "block":  # the blocks view takes no name: only REST carries a block id
                assert isinstance(got, Refusal) and got.reason in REASONS, (argument, v, got)
    after = snapshot(tmp_path)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)
                     and "/cache/" not in k and not k.endswith("tokens.json"))
    assert not changed, changed


def test_the_engines_agent_name_is_reserved_on_every_door(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    for attempt in (lambda: dc.add_entity(verbs.EntityAdd(entity_id=ENGINE_AGENT)),
                    lambda: dc.token_issue(ENGINE_AGENT, "agent"), lambda: dc.token_issue(ENGINE_AGENT, "operator"),
                    lambda: dc.send(verbs.Message(sender=ENGINE_AGENT, recipient=ENTITY, subject="s")),
                    lambda: dc.report([{"tool": "t", "class": "bug", "what": "w", "agent": ENGINE_AGENT}])):
        with pytest.raises(Refusal) as refused:
            attempt()
        assert refused.value.reason in ("reserved_agent", "invalid_name"), refused.value
    token = dc.token_issue(SENDER, "operator").token
    with TestClient(create_app(dc), headers={"Authorization": f"Bearer {token}"}) as client:
        r = client.post("/api/v1/reports", json={"tool": "t", "class": "bug", "what": "w", "agent": ENGINE_AGENT})
        assert r.status_code in (400, 403), r.text
        assert r.json()["reason"] in ("reserved_agent", "invalid_name", "unknown_field")


# -- the CLI column: every name and address argument of the CLI, the same hostile names ----------------

#: CLI argument -> argv (``{v}`` the hostile value, ``{ref}`` a real item of the builder's inbox). Every run
#: must exit 2 with ``Error: <keyword>:`` (a registered keyword), no traceback, and change no file.
CLI_TABLE: dict[str, list[str]] = {
    "send --recipient": ["send", "--sender", SENDER, "--recipient", "{v}", "--subject", "s"],
    "send --sender": ["send", "--sender", "{v}", "--recipient", ENTITY, "--subject", "s"],
    "send --reply-to": ["send", "--sender", SENDER, "--recipient", ENTITY, "--subject", "s", "--reply-to", "{v}"],
    "send --escalation-target": ["send", "--sender", SENDER, "--recipient", ENTITY, "--subject", "s",
                                 "--type", "task", "--escalation-target", "{v}"],
    "draft --recipient": ["draft", "--sender", SENDER, "--recipient", "{v}", "--subject", "s"],
    "outbox send --sender": ["outbox", "send", "--sender", "{v}"],
    "inbox E": ["inbox", "{v}"],
    "show E": ["show", "{v}", "{ref}"],
    "show E REF": ["show", ENTITY, "{v}"],
    "claim E": ["claim", "{v}", "{ref}"],
    "claim E REF": ["claim", ENTITY, "{v}"],
    "seen E": ["seen", "{v}", "{ref}"],
    "complete E REF": ["complete", ENTITY, "{v}"],
    "ack E": ["ack", "{v}", "{ref}"],
    "view E": ["view", "{v}"],
    "organize E": ["organize", "{v}"],
    "wait E": ["wait", "{v}", "--timeout", "0"],
    "search --entity-id": ["search", "s", "--entity-id", "{v}"],
    "import inbox-tree --entity-id": ["import", "inbox-tree", "{tmp}", "--entity-id", "{v}"],
    "hooks install --entity-id": ["hooks", "install", "--agent", "claude-code", "--entity-id", "{v}",
                                  "--project-dir", "{tmp}"],
    "box ADDRESS": ["box", "{v}"],
    "cases --box": ["cases", "--box", "{v}"],
    "entity add": ["entity", "add", "{v}"],
    "entity remove": ["entity", "remove", "{v}"],
    "token issue": ["token", "issue", "{v}"],
    "project add": ["project", "add", "{p}", "--root", "{tmp}/newroot"],
    "project remove": ["project", "remove", "{v}"],
    "blocks --project": ["blocks", "--project", "{v}"],
    "missions --project": ["missions", "--project", "{v}"],
    "block add --project": ["block", "add", "sb_new", "--project", "{v}"],
    "block bump": ["block", "bump", "{v}", "--project", "atlas"],
    "mission show": ["mission", "show", "{v}"],
    "mission archive": ["mission", "archive", "{v}"],
    "receipt import": ["receipt", "import", "{v}"],
}


def _project_twin(v: str) -> str:
    """The hostile value aimed at the project ``atlas`` (its case variants too) instead of the builder: a new
    project may not differ from one by case alone (a look-up may: project names resolve case-insensitively)."""
    return v.replace(ENTITY.upper(), "ATLAS").replace("Ent_Builder", "Atlas").replace(ENTITY, "atlas")


@pytest.mark.parametrize("argument", sorted(CLI_TABLE))
def test_path_tricks_and_look_alikes_are_refused_by_the_cli_and_write_nothing(tmp_path: Path, argument: str) -> None:
    """In process through the console script's entry (as ``tests/security/test_hostile_cli.py``): exit 2 and a keyword.

    A name that only differs by case from an existing one is refused too (``duplicate_entity``,
    ``unknown_entity``, ``invalid_name`` for a sender): on a case-insensitive disk it would be the same folder.
    """
    dc = served_home(tmp_path)
    ref = builtins(dc.inbox(verbs.Inbox(entity_id=ENTITY)))["items"][0]["id"]
    before = snapshot(tmp_path)
    for v in HOSTILE:
        argv = [a.replace("{v}", v).replace("{p}", _project_twin(v)).replace("{ref}", ref)
                .replace("{tmp}", str(tmp_path)) for a in CLI_TABLE[argument]]
        r = run_cli(tmp_path, *argv, home=dc.layout.root)
        err = r.stderr.decode()
        assert r.returncode == 2, (argv, r.returncode, err)
        assert "Traceback" not in err + r.stdout.decode(), (argv, err)
        assert err.startswith("Error: ") and err[7:].split(":", 1)[0] in REASONS, (argv, err)
    after = snapshot(tmp_path)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k) and "/cache/" not in k)
    assert not changed, changed


@pytest.mark.parametrize("argv", [
    ["send", "--sender", SENDER, "--recipient", "ent_builder/../ent_ops", "--subject", "s"],
    ["inbox", "\u202eent_builder"],
    ["entity", "add", ENTITY.upper()],
])
def test_a_real_process_refuses_a_hostile_name_the_same_way(tmp_path: Path, argv: list[str]) -> None:
    dc = served_home(tmp_path)
    before = snapshot(tmp_path)
    r = run_cli(tmp_path, *argv, home=dc.layout.root, process=True)
    assert r.returncode == 2, r.stderr
    assert r.stderr.split(b":", 2)[1].strip().decode() in REASONS and b"Traceback" not in r.stderr, r.stderr
    assert snapshot(tmp_path) == before

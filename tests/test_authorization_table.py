"""Who may do what, from the one rule's own tables.

The trust cap (``tokens.TRUST_CAP``): a message's trust level above its sender's role is refused ``forbidden``
on the CLI, REST and MCP alike, and nothing is appended.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.testclient import TestClient

from dovecote import remote, tokens
from dovecote.api import Dovecote, Principal
from dovecote.errors import Refusal
from dovecote.http.app import create_app
from dovecote.mcp.server import Face
from dovecote.mcp.tools import TOOLS
from dovecote.verbs import Inbox, Message
from dovecote.vocab import TrustLevel
from helpers import run_cli
from serverhelpers import ENTITY, SENDER, assert_error_shape, served_home

pytestmark = pytest.mark.files_only

A, B = ENTITY, SENDER


def home(tmp: Path) -> tuple[Dovecote, str]:
    return served_home(tmp), ""


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


def test_the_cap_table_keeps_an_agent_below_an_operator() -> None:
    assert [lvl for lvl in TrustLevel if cap_allows("agent", lvl)] == ["peer", "subordinate", "visitor"]
    assert all(cap_allows("operator", lvl) for lvl in TrustLevel)
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
            before = dc.inbox(Inbox(entity_id=B))
            got = {("rest", role): _send_rest(dc, client, role, level) for role in ("agent", "operator")}
            got |= {("mcp", role): _send_mcp(dc, role, level) for role in SENDERS}
            got[("cli", "local")] = _send_cli(tmp_path, dc, level)
            for (face, role), answer in got.items():
                want = "ok" if cap_allows(role, level) else "forbidden"
                if answer != want:
                    wrong.append(f"{face} {role} {level}: {answer}, want {want}")
            sent = {r["subject"] for r in dc.inbox(Inbox(entity_id=B))["items"]} - {
                r["subject"] for r in before["items"]}
            assert sent == {f"{face} {role} {level}" for (face, role), a in got.items() if a == "ok"}, level
    assert wrong == []
    # a draft is the same message, kept for later: capped when it is written
    with pytest.raises(Refusal) as refused:
        remote.draft(dc, SENDERS["agent"], Message(recipient=B, subject="d", trust_level=TrustLevel.operator))
    assert refused.value.reason == "forbidden"

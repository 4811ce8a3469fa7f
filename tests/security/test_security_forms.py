"""Every form of the Human View refuses a cross-site or tokenless post, and no bearer token reaches one.

The page's POST routes are read from the app itself, so a form added later without a row here fails the first
test. Each form gets the five CSRF cases (no token, a wrong one, a foreign Origin, no Origin at all, no Origin
with a cross-site Referer): 403 ``csrf_failed`` and no ledger changed. A bearer token (agent or operator) sent
beside no session gets ``human_gesture_required``: the gestures are a person's, never a token's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from dovecote import verbs
from dovecote.handle.api import Dovecote
from dovecote.http.app import create_app
from dovecote.http.session import COOKIE, Sessions
from dovecote.model.results import builtins
from dovecote.verbs import Inbox
from helpers import snapshot
from missionhelpers import VECTOR, for_phase
from serverhelpers import ENTITY, served_home

pytestmark = pytest.mark.files_only
ORIGIN = {"Origin": "http://testserver"}
MID = VECTOR["mission_id"]

#: Route name -> (the page whose form carries the CSRF token, the POST path, the form's other fields).
FORMS: dict[str, tuple[str, str, dict[str, str]]] = {
    "act": (f"/entities/{ENTITY}", f"/entities/{ENTITY}/items/{{ref}}/claim", {}),
    "mission_gesture": (f"/missions?mission={MID}", f"/missions/{MID}/archive", {"confirm": MID}),
    "compose_send": ("/compose", "/compose", {"to": ENTITY, "subject": "forged"}),
    "reply": (f"/entities/{ENTITY}/items/{{ref}}", f"/entities/{ENTITY}/items/{{ref}}/reply", {"subject": "forged"}),
}
CASES = {
    "no-token": ("", ORIGIN),
    "wrong-token": ("0" * 64, ORIGIN),
    "other-origin": (None, {"Origin": "http://evil.example"}),
    "no-origin": (None, {}),
    "other-referer": (None, {"Referer": "http://evil.example/entities"}),
}


def _home(tmp: Path) -> tuple[Dovecote, str]:
    dc = served_home(tmp)
    dc.block_add(verbs.BlockAdd(block_id="sb_alpha", project="atlas"))
    prev = None
    for seq, phase in enumerate(["judging", "failed"], 1):  # a failed mission: archive is its gesture
        prev = builtins(dc.mission_post(verbs.MissionPost(letter=for_phase(phase, seq, prev, brain_ref="atlas"),
                                                 as_project="atlas"), actor="runner-1"))["letter_id"]
    ref = next(i["id"] for i in builtins(dc.inbox(Inbox(entity_id=ENTITY)))["items"] if not i["seen"])
    return dc, ref


def _ledgers(dc: Dovecote) -> dict[str, bytes]:
    return {k: v for k, v in snapshot(dc.layout.root).items() if k.endswith(".jsonl")}


def test_every_page_form_has_a_row_here(tmp_path: Path) -> None:
    dc, _ = _home(tmp_path)
    posts = {r.name for r in create_app(dc).routes if isinstance(r, Route) and "POST" in (r.methods or ())
             and not r.path.startswith(("/api", "/mcp", "/login"))}
    assert posts == set(FORMS), "a page form without a row here has no checked CSRF rule"


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_refuses_every_cross_site_or_tokenless_post(tmp_path: Path, form: str) -> None:
    dc, ref = _home(tmp_path)
    sessions = Sessions()
    c = TestClient(create_app(dc, sessions=sessions))
    cookie, _ = sessions.redeem(sessions.issue("alice"))
    c.cookies.set(COOKIE, cookie)
    page, path, fields = FORMS[form]
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', c.get(page.format(ref=ref)).text)
    assert found, f"{page} shows no form"
    good = found.group(1)
    before = _ledgers(dc)
    for name, (csrf, headers) in CASES.items():
        data: dict[str, Any] = {**fields, "csrf": good if csrf is None else csrf}
        r = c.post(path.format(ref=ref), data=data, headers=headers, follow_redirects=False)
        assert r.status_code == 403 and "csrf_failed" in r.text, (form, name, r.status_code, r.text[:300])
    assert _ledgers(dc) == before


@pytest.mark.parametrize("role", ["agent", "operator"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_no_token_reaches_a_form(tmp_path: Path, form: str, role: str) -> None:
    dc, ref = _home(tmp_path)
    token = dc.token_issue(ENTITY, role).token
    _, path, fields = FORMS[form]
    before = _ledgers(dc)
    with TestClient(create_app(dc)) as c:
        r = c.post(path.format(ref=ref), data={**fields, "csrf": "0" * 64},
                   headers={**ORIGIN, "Authorization": f"Bearer {token}"}, follow_redirects=False)
    assert r.status_code == 403 and "human_gesture_required" in r.text, (form, r.status_code, r.text[:300])
    assert _ledgers(dc) == before

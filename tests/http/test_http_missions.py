"""The missions page (in process): heads by phase and the landing count as links, each chain, and the two
human gestures as the signed-in person's confirmed forms; a token (agent or operator), no session, a wrong
confirmation or a missing CSRF token is refused and appends nothing; a read-only server refuses them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dovecote import verbs
from dovecote.handle.api import Dovecote
from dovecote.http.app import create_app
from dovecote.http.session import COOKIE, Sessions
from dovecote.model.results import builtins
from helpers import snapshot
from missionhelpers import PASSPHRASE, VECTOR, for_phase, keyed
from serverhelpers import SENDER, served_home

pytestmark = pytest.mark.files_only
MID = VECTOR["mission_id"]
ORIGIN = {"Origin": "http://testserver"}


def post(dc: Dovecote, data: dict[str, Any]) -> str:
    return dc.mission_post(verbs.MissionPost(letter=data, as_project="atlas"), actor="runner-1").letter_id


def walk(dc: Dovecote, phases: list[str]) -> list[str]:
    ids: list[str] = []
    for seq, phase in enumerate(phases, 1):
        ids.append(post(dc, for_phase(phase, seq, ids[-1] if ids else None, brain_ref="atlas")))
    return ids


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    dc = served_home(tmp_path)
    dc.block_add(verbs.BlockAdd(block_id="sb_alpha", project="atlas"))
    return dc


def signed_in(dc: Dovecote, **options: Any) -> TestClient:
    sessions = Sessions()
    c = TestClient(create_app(dc, sessions=sessions, **options))
    cookie, _ = sessions.redeem(sessions.issue("alice"))
    c.cookies.set(COOKIE, cookie)
    return c


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, "the page has no gesture form"
    return found.group(1)


def test_the_page_counts_heads_by_phase_and_each_count_links_its_heads(client: TestClient, dc: Dovecote) -> None:
    walk(dc, ["judging", "executing", "gate", "merge_wait"])
    dc.mission_post(verbs.MissionPost(letter={**for_phase("judging", 1, None), "mission_id": "msn_00000000000b",
                                              "brain_ref": "atlas", "synthetic": True}))
    html = client.get("/missions").text
    assert '<a href="/missions" aria-current="page">Missions</a>' in html
    landing = re.search(r'id="landing">.*?<a class="n" href="([^"]+)">(\d+)</a>', html)
    assert landing and landing.groups() == ("/missions?phase=merge_wait#heads", "1")
    listed = client.get(landing.group(1)).text
    assert re.findall(r'<tr data-id="(msn_[0-9a-f]+)"', listed) == [MID]
    judging = client.get("/missions?phase=judging").text
    assert re.findall(r'<tr data-id="(msn_[0-9a-f]+)"', judging) == ["msn_00000000000b"]
    chain = client.get(f"/missions?mission={MID}").text
    assert len(re.findall(r'<tr data-id="letter-', chain)) == 4
    assert "Not signed in" in chain and 'name="confirm"' not in chain  # no gesture without a session
    assert client.get("/missions?mission=msn_ffffffffffff").status_code == 404
    assert client.get("/missions?phase=asleep").status_code == 400


def test_the_gestures_through_the_session_with_a_typed_confirmation_and_the_passphrase(dc: Dovecote) -> None:
    """The signed-in session (which the login link gives whoever holds it) is not enough: the form carries the
    person's gesture passphrase, checked as the terminal's is; without it, or wrong, nothing is appended."""
    keyed(dc)
    ids = walk(dc, ["judging", "executing", "gate", "merge_wait"])
    c = signed_in(dc)
    page = c.get(f"/missions?mission={MID}").text
    assert 'data-gesture="receipt-import"' in page and 'data-gesture="archive"' not in page
    assert '<input type="password" name="passphrase"' in page
    token = csrf_of(page)
    before = snapshot(dc.layout.root)
    wrong = c.post(f"/missions/{MID}/receipt-import", data={"csrf": token, "confirm": "msn_0",
                                                            "passphrase": PASSPHRASE}, headers=ORIGIN)
    assert wrong.status_code == 403 and "human_gesture_required" in wrong.text
    bad = c.post(f"/missions/{MID}/receipt-import", data={"csrf": "x", "confirm": MID, "passphrase": PASSPHRASE},
                 headers=ORIGIN)
    assert bad.status_code == 403 and "csrf_failed" in bad.text
    for secret in ({}, {"passphrase": ""}, {"passphrase": "kestrel"}):  # the session and the link alone
        r = c.post(f"/missions/{MID}/receipt-import", data={"csrf": token, "confirm": MID, **secret},
                   headers=ORIGIN, follow_redirects=False)
        assert r.status_code == 403 and "human_gesture_required" in r.text, (secret, r.text)
        assert "gesture passphrase" in r.text
    assert snapshot(dc.layout.root) == before
    r = c.post(f"/missions/{MID}/receipt-import", data={"csrf": token, "confirm": MID, "passphrase": PASSPHRASE},
               headers=ORIGIN, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/missions?mission={MID}"
    assert dc.blocks(verbs.Blocks()).blocks[0].store_version == 1
    post(dc, for_phase("landed", 5, ids[-1], brain_ref="atlas"))
    page = c.get(f"/missions?mission={MID}").text
    assert 'data-gesture="archive"' in page
    before = snapshot(dc.layout.root)
    r = c.post(f"/missions/{MID}/archive", data={"csrf": csrf_of(page), "confirm": MID}, headers=ORIGIN)
    assert r.status_code == 403 and "human_gesture_required" in r.text and snapshot(dc.layout.root) == before
    r = c.post(f"/missions/{MID}/archive", data={"csrf": csrf_of(page), "confirm": MID, "passphrase": PASSPHRASE},
               headers=ORIGIN, follow_redirects=False)
    assert r.status_code == 303
    chain = builtins(dc.mission(verbs.Mission(mission_id=MID)))["chain"]
    assert chain[-1]["phase"] == "archived" and chain[-1]["agent"] == "human.alice"


def test_an_agent_cannot_post_landed_over_rest_without_the_persons_import(dc: Dovecote) -> None:
    """The landed law on REST, as on every face: the letter's claim of an import is not an import."""
    ids = walk(dc, ["judging", "executing", "gate", "merge_wait"])
    auth = {"Authorization": f"Bearer {dc.token_issue(SENDER).token}"}
    before = snapshot(dc.layout.root)
    with TestClient(create_app(dc)) as c:
        r = c.post("/api/v1/missions", headers=auth, json={
            "letter": for_phase("landed", 5, ids[-1], brain_ref="atlas"), "as_project": "atlas"})
    assert r.status_code == 409 and r.json()["reason"] == "landed_law", r.text
    assert snapshot(dc.layout.root) == before


@pytest.mark.parametrize("role", ["agent", "operator"])
def test_a_token_never_reaches_a_gesture(dc: Dovecote, role: str) -> None:
    walk(dc, ["judging", "executing", "gate", "merge_wait"])
    token = dc.token_issue(SENDER, role).token
    c = signed_in(dc)
    csrf = csrf_of(c.get(f"/missions?mission={MID}").text)
    before = snapshot(dc.layout.root)
    for which in ("receipt-import", "archive"):
        r = c.post(f"/missions/{MID}/{which}", data={"csrf": csrf, "confirm": MID},
                   headers={**ORIGIN, "Authorization": f"Bearer {token}"})  # even beside a session cookie
        assert r.status_code == 403 and "human_gesture_required" in r.text, r.text
        anon = TestClient(create_app(dc)).post(f"/missions/{MID}/{which}", data={"confirm": MID}, headers=ORIGIN)
        assert anon.status_code == 403 and "human_gesture_required" in anon.text
    assert snapshot(dc.layout.root) == before


def test_a_read_only_server_refuses_the_gestures(dc: Dovecote) -> None:
    walk(dc, ["judging", "executing", "gate", "merge_wait"])
    c = signed_in(dc, read_only=True)
    page = c.get(f"/missions?mission={MID}")
    assert page.status_code == 200
    r = c.post(f"/missions/{MID}/receipt-import", data={"csrf": csrf_of(page.text), "confirm": MID}, headers=ORIGIN)
    assert r.status_code == 403 and "read_only" in r.text

"""Leases over REST and on the Human View: an agent token takes, renews and releases its own leases (an
operator token anyone's), a conflict is 409 ``lease_conflict`` naming the holder and expiry and writes nothing,
the listing is open; ``/leases`` shows per project who holds what until when."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from dovecote.handle.api import Dovecote
from dovecote.model.addresses import project as project_box
from dovecote.verbs import EntityAdd
from helpers import add_project, box_ids, new_home
from serverhelpers import assert_error_shape

pytestmark = pytest.mark.files_only
API = "/api/v1"


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "atlas")
    add_project(dc, tmp_path, "zephyr")
    for e in ("aya", "tariq", "ops"):
        dc.add_entity(EntityAdd(entity_id=e))
    return dc


def bearer(dc: Dovecote, entity: str, role: str = "agent") -> dict[str, str]:
    return {"Authorization": f"Bearer {dc.token_issue(entity, role).token}"}


def test_an_agent_takes_its_own_lease_and_a_conflict_is_409_naming_the_holder(client: TestClient, dc: Dovecote
                                                                            ) -> None:
    aya, tariq, ops = bearer(dc, "aya"), bearer(dc, "tariq"), bearer(dc, "ops", "operator")
    r = client.post(f"{API}/entities/aya/leases", headers=aya,
                    json={"globs": ["src/**"], "project": "atlas", "reason": "auth refactor"})
    assert r.status_code == 201, r.text
    lease = r.json()["lease"]
    assert (lease["entity"], lease["globs"], lease["state"]) == ("aya", ["src/**"], "active")
    before = box_ids(dc, project_box("atlas"))
    assert_error_shape(client.post(f"{API}/entities/aya/leases", headers=tariq,
                                   json={"globs": ["x"], "project": "atlas"}), 403, "forbidden")
    refused = client.post(f"{API}/entities/tariq/leases", headers=tariq, json={"globs": ["src/a.py"],
                                                                               "project": "atlas"})
    body = assert_error_shape(refused, 409, "lease_conflict")
    assert f"aya holds src/** (exclusive) until {lease['expires']}" in str(body)
    assert box_ids(dc, project_box("atlas")) == before
    assert_error_shape(client.post(f"{API}/entities/tariq/leases", json={"globs": ["x"], "project": "atlas"}),
                       401, "unauthorized")
    # the same path in another project is no conflict; an operator takes one for anyone
    assert client.post(f"{API}/entities/tariq/leases", headers=ops,
                       json={"globs": ["src/a.py"], "project": "zephyr"}).status_code == 201
    listed = client.get(f"{API}/leases").json()
    assert [(x["project"], x["entity"]) for x in listed["leases"]] == [("atlas", "aya"), ("zephyr", "tariq")]
    renewed = client.post(f"{API}/entities/aya/leases/renewals", headers=aya, json={"project": "atlas", "ttl": 7200})
    assert renewed.status_code == 200 and renewed.json()["count"] == 1
    released = client.post(f"{API}/entities/aya/leases/releases", headers=aya, json={"project": "atlas"})
    assert released.json()["leases"][0]["state"] == "released"
    assert client.get(f"{API}/leases?project=atlas").json()["count"] == 0


def test_the_page_shows_per_project_who_holds_what_until_when(client: TestClient, dc: Dovecote) -> None:
    aya = bearer(dc, "aya")
    lease = client.post(f"{API}/entities/aya/leases", headers=aya,
                        json={"globs": ["src/**", "docs"], "project": "atlas", "reason": "auth <refactor>"}).json()
    html = client.get("/leases").text
    atlas = html.split('data-project="atlas"', 1)[1].split("</table>", 1)[0]
    assert f'data-id="lease-{lease["lease"]["id"]}"' in atlas and "<code>src/**</code> <code>docs</code>" in atlas
    assert lease["lease"]["expires"][:16].replace("T", " ") in atlas and "exclusive" in atlas
    assert "auth &lt;refactor&gt;" in atlas  # escaped
    zephyr = html.split('data-project="zephyr"', 1)[1].split("</table>", 1)[0]
    assert "Nobody holds a path here now" in zephyr
    client.post(f"{API}/entities/aya/leases/releases", headers=aya, json={"project": "atlas"})
    assert "Nobody holds a path here now" in client.get("/leases").text.split('data-project="atlas"', 1)[1]
    ended = client.get("/leases?ended=1").text
    assert "lease-released" in ended and 'href="/leases?ended=1#projects"' in ended

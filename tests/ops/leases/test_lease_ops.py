"""Leases through the handle: a lease is a letter in its project's box; taking one that overlaps another
agent's is refused ``lease_conflict`` naming the holders and their expiry, and appends nothing; shared leases
share; ``advisory`` grants despite conflicts and names them; renew and release are letters too; expiry is the
clock's. Runs on every store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.addresses import project as project_box
from dovecote.model.results import builtins
from dovecote.verbs import EntityAdd, LeaseCheck, LeaseRelease, LeaseRenew, Leases, LeaseTake
from helpers import add_project, box_ids, new_home

pytestmark = pytest.mark.both_stores
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
BOX = project_box("repo-a")


@pytest.fixture
def dc(tmp_path: Path) -> Dovecote:
    dc = new_home(tmp_path)
    add_project(dc, tmp_path, "repo-a")
    for e in ("ent_a", "ent_b", "ent_c"):
        dc.add_entity(EntityAdd(entity_id=e))
    return dc


def refused(call: object) -> Refusal:
    with pytest.raises(Refusal) as e:
        call()  # type: ignore[operator]
    return e.value


def test_a_lease_is_a_letter_and_an_overlapping_one_is_refused_naming_holder_and_expiry(dc: Dovecote) -> None:
    got = dc.lease_take(LeaseTake(entity_id="ent_a", globs=("src/**",), ttl=600, reason="refactor"), now=T0)
    lease = builtins(got)["lease"]
    assert box_ids(dc, BOX) == [lease["id"]]  # the lease's id is its letter's
    assert (lease["entity"], lease["globs"], lease["exclusive"], lease["state"], lease["expires"]) == (
        "ent_a", ["src/**"], True, "active", "2026-12-01T12:10:00Z")
    before = box_ids(dc, BOX)
    r = refused(lambda: dc.lease_take(LeaseTake(entity_id="ent_b", globs=("./src/deep/a.py",)), now=T0))
    assert r.reason == "lease_conflict"
    assert "ent_a holds src/** (exclusive) until 2026-12-01T12:10:00Z" in r.detail and lease["id"] in r.detail
    assert r.extra["conflicts"] == [{"lease_id": lease["id"], "holder": "ent_a", "glob": "src/**", "exclusive": True,
                                     "expires": "2026-12-01T12:10:00Z", "wanted": "src/deep/a.py"}]
    assert box_ids(dc, BOX) == before  # a refusal appends nothing
    # a shared request runs into an exclusive lease too; the holder itself never conflicts with its own
    assert refused(lambda: dc.lease_take(LeaseTake(entity_id="ent_b", globs=("src",), shared=True), now=T0)
                   ).reason == "lease_conflict"
    dc.lease_take(LeaseTake(entity_id="ent_a", globs=("src/a.py",)), now=T0)
    # disjoint paths are no conflict
    dc.lease_take(LeaseTake(entity_id="ent_b", globs=("docs/**", "*.md")), now=T0)


def test_shared_leases_share_and_an_exclusive_one_waits_for_them(dc: Dovecote) -> None:
    dc.lease_take(LeaseTake(entity_id="ent_a", globs=("docs",), shared=True), now=T0)
    dc.lease_take(LeaseTake(entity_id="ent_b", globs=("docs/guide.md",), shared=True), now=T0)
    r = refused(lambda: dc.lease_take(LeaseTake(entity_id="ent_c", globs=("docs/*",)), now=T0))
    assert "ent_a holds docs (shared)" in r.detail and "ent_b holds docs/guide.md (shared)" in r.detail


def test_advisory_grants_despite_conflicts_and_names_them(dc: Dovecote) -> None:
    first = builtins(dc.lease_take(LeaseTake(entity_id="ent_a", globs=("src/**",)), now=T0))["lease"]
    got = builtins(dc.lease_take(LeaseTake(entity_id="ent_b", globs=("src/x.py",), advisory=True), now=T0))
    assert got["appended"] and got["lease"]["advisory"] and got["lease"]["state"] == "active"
    assert [(c["holder"], c["lease_id"]) for c in got["conflicts"]] == [("ent_a", first["id"])]
    clean = builtins(dc.lease_take(LeaseTake(entity_id="ent_c", globs=("docs",), advisory=True), now=T0))
    assert clean["conflicts"] == [] and not clean["lease"]["advisory"]  # advisory only marks a lease it helped


def test_expiry_is_the_clocks_and_renew_and_release_are_letters(dc: Dovecote) -> None:
    a = builtins(dc.lease_take(LeaseTake(entity_id="ent_a", globs=("src/**",), ttl=600), now=T0))["lease"]
    later = T0 + timedelta(seconds=600)
    assert builtins(dc.leases(Leases(include_ended=True), now=later))["leases"][0]["state"] == "expired"
    dc.lease_take(LeaseTake(entity_id="ent_b", globs=("src/a.py",)), now=later)  # an expired lease holds nothing
    assert builtins(dc.lease_renew(LeaseRenew(entity_id="ent_a"), now=later))["count"] == 0  # only active ones

    b = builtins(dc.lease_take(LeaseTake(entity_id="ent_c", globs=("docs",), ttl=60), now=T0))["lease"]
    renewed = builtins(dc.lease_renew(LeaseRenew(entity_id="ent_c", lease_ids=(b["id"][:6],), ttl=3600),
                                      now=T0 + timedelta(seconds=30)))
    assert renewed["count"] == 1 and renewed["leases"][0]["expires"] == "2026-12-01T13:00:30Z"
    assert builtins(dc.leases(Leases(entity_id="ent_c"), now=T0 + timedelta(minutes=30)))["count"] == 1
    n = len(box_ids(dc, BOX))
    released = builtins(dc.lease_release(LeaseRelease(entity_id="ent_c"), now=T0 + timedelta(minutes=31)))
    assert released["count"] == 1 and released["leases"][0]["state"] == "released"
    assert len(box_ids(dc, BOX)) == n + 1  # the release is one letter; nothing was deleted or rewritten
    assert builtins(dc.lease_release(LeaseRelease(entity_id="ent_c"), now=T0 + timedelta(minutes=32)))["count"] == 0
    listing = builtins(dc.leases(Leases(include_ended=True), now=T0 + timedelta(minutes=32)))
    assert listing["counts"] == {"active": 1, "released": 1, "expired": 1}
    assert {x["id"]: x["state"] for x in listing["leases"]}[a["id"]] == "expired"
    assert refused(lambda: dc.lease_release(LeaseRelease(entity_id="ent_c", lease_ids=("ffffff",)))
                   ).reason == "unknown_letter"


def test_the_commit_check_blocks_only_on_another_holders_exclusive_lease(dc: Dovecote) -> None:
    dc.lease_take(LeaseTake(entity_id="ent_a", globs=("src/**",)), now=T0)
    dc.lease_take(LeaseTake(entity_id="ent_b", globs=("docs",), shared=True), now=T0)
    r = refused(lambda: dc.lease_check(LeaseCheck(paths=("src/a.py", "README.md"), entity_id="ent_b"), now=T0))
    assert r.reason == "lease_conflict" and "ent_a holds src/**" in r.detail and "README" not in r.detail
    assert builtins(dc.lease_check(LeaseCheck(paths=("src/a.py",), entity_id="ent_a"), now=T0))["held"] == []
    assert builtins(dc.lease_check(LeaseCheck(paths=("docs/x.md",), entity_id="ent_c"), now=T0))["paths"] == 1


def test_bad_input_is_refused_with_its_keyword(dc: Dovecote, tmp_path: Path) -> None:
    cases = [
        ("unknown_entity", lambda: dc.lease_take(LeaseTake(entity_id="ghost", globs=("x",)))),
        ("invalid_field", lambda: dc.lease_take(LeaseTake(entity_id="ent_a", globs=("../etc",)))),
        ("invalid_field", lambda: dc.lease_take(LeaseTake(entity_id="ent_a", globs=()))),  # at least one glob
        ("invalid_field", lambda: dc.lease_take(LeaseTake(entity_id="ent_a", globs=("x",), ttl=0))),
        ("unknown_project", lambda: dc.lease_take(LeaseTake(entity_id="ent_a", globs=("x",), project="nope"))),
    ]
    for keyword, call in cases:
        assert refused(call).reason == keyword, keyword
    add_project(dc, tmp_path, "repo-b")  # with two projects, the project must be named
    r = refused(lambda: dc.lease_take(LeaseTake(entity_id="ent_a", globs=("x",))))
    assert r.reason == "missing_field" and "repo-a, repo-b" in r.detail
    assert box_ids(dc, BOX) == []

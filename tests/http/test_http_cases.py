"""Case intelligence over REST and on the cases page: what an agent may file (a receipt, never a probe), what
only an operator may run (sentinels, monitors, labels), a fingerprint (it has a slash) in a path, a GET that
never writes, and a page whose every count leads to exactly the letters it counts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dovecote import verbs
from dovecote.handle.api import Dovecote
from dovecote.http.app import create_app
from dovecote.model.addresses import parse_address
from dovecote.model.results import builtins
from helpers import rep
from serverhelpers import ENTITY, SENDER, assert_error_shape, served_home

pytestmark = pytest.mark.files_only

FP = "fp:north/false_absence"


def trilogy(dc: Dovecote) -> list[str]:
    """Three witnesses of one case (a symptom the vocabulary derives from an honesty report)."""
    filed = dc.report([rep("empty answer over data that exists", tool="north", klass="honesty", repo="atlas",
                           ts=f"2026-07-05T10:00:0{n}Z") for n in range(3)])
    return [lid for lid, _ in filed]


def bearer(dc: Dovecote, entity: str, role: str = "agent") -> dict[str, str]:
    return {"Authorization": f"Bearer {dc.token_issue(entity, role).token}"}


def test_a_case_by_its_fingerprint_in_the_path_and_an_unknown_one(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    ids = trilogy(dc)
    with TestClient(create_app(dc)) as client:
        listed = client.get("/api/v1/cases").json()
        assert listed["recurrence"] == {FP: 3} and listed["kindless"] == builtins(dc.cases())["kindless"]
        case = client.get(f"/api/v1/cases/{FP}")
        assert case.status_code == 200 and sorted(case.json()["witness_ids"]) == sorted(ids)
        assert client.get("/api/v1/cases/" + FP.replace("/", "%2F")).json()["fingerprint"] == FP
        assert_error_shape(client.get("/api/v1/cases/fp:north/nothing_like_it"), 404, "unknown_case")


def test_an_agent_files_a_receipt_but_never_a_probe(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    ids = trilogy(dc)
    agent = bearer(dc, ENTITY)
    with TestClient(create_app(dc)) as client:
        probe = {"answers": ids, "disposition": "fixed", "sentinel_probe": "true", "sentinel_expect": "exit0"}
        assert_error_shape(client.post("/api/v1/receipts", json=probe, headers=agent), 403, "forbidden")
        assert builtins(dc.cases())["cases"][0]["receipt"] is None, "a refusal stores nothing"
        filed = client.post("/api/v1/receipts", json={"answers": ids, "disposition": "fixed", "ref": "abc123"},
                            headers=agent)
        assert filed.status_code == 201 and filed.json()["fingerprint"] == FP
        case = builtins(dc.cases())["cases"][0]
        assert case["label"] == "answered" and case["receipt"]["ref"] == "abc123" and case["sentinel"] is None
        operator = bearer(dc, SENDER, "operator")
        by_operator = client.post("/api/v1/receipts", json=probe, headers=operator)
        assert by_operator.status_code == 201
        where = by_operator.json()["box"]  # the receipt as stored (two receipts in one second: either is newest)
        held = dc.store.read(parse_address(where) if where != "spool" else "spool").letters
        stored = next(lt for lt in held if lt.id == by_operator.json()["id"]).data()
        assert stored["sentinel"] == {"probe": "true", "expect": "exit0"} and stored["agent"] == SENDER


def test_sentinels_monitors_and_labels_are_an_operators(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    ids = trilogy(dc)
    dc.receipt(verbs.Receipt(answers=ids, disposition=verbs.Disposition.fixed, sentinel_probe="false",
                             sentinel_expect=verbs.SentinelExpect.exit0))
    agent, operator = bearer(dc, ENTITY), bearer(dc, SENDER, "operator")
    monitor = {"name": "nightly", "expect": "tool=north", "every": "1d"}
    labels = Path(builtins(dc.claims())["labels_path"])
    with TestClient(create_app(dc)) as client:
        for path, body in (("/sentinels", {}), ("/monitors", monitor), ("/claims/labels", {})):
            assert_error_shape(client.post("/api/v1" + path, json=body, headers=agent), 403, "forbidden")
            assert_error_shape(client.post("/api/v1" + path, json=body), 401, "unauthorized")
        assert builtins(dc.cases())["cases"][0]["regressions"] == [] and builtins(dc.monitors())["count"] == 0
        assert not labels.exists()
        ran = client.post("/api/v1/sentinels", json={"timeout": 10}, headers=operator).json()
        assert (ran["guarded"], ran["red"]) == (1, 1) and len(ran["minted"]) == 1
        assert client.post("/api/v1/monitors", json=monitor, headers=operator).status_code == 201
        assert [m["name"] for m in client.get("/api/v1/monitors").json()["monitors"]] == ["nightly"]
        read = client.get("/api/v1/claims").json()
        assert read["totals"]["claims"] == 3 and read["labels_appended"] == 0 and not labels.exists()
        assert_error_shape(client.get("/api/v1/claims", params={"write_labels": "true"}), 400)  # a GET never writes
        wrote = client.post("/api/v1/claims/labels", json={}, headers=operator).json()
        assert wrote["labels_appended"] == 3 and len(labels.read_text().splitlines()) == 3


def _numbers(html: str, table: str) -> dict[str, str]:
    """Each linked count in ``table`` of the page: its link -> its number."""
    part = html.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    return {href.replace("&amp;", "&"): n for href, n in re.findall(r'<a class="n" href="([^"]+)">(\d+)</a>', part)}


def _letter_ids(client: TestClient, href: str) -> list[str]:
    page = client.get(href).text
    rows = page.split('id="letter-rows"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'data-id="letter-([0-9a-f]+)"', rows)


def test_the_cases_page_links_every_count_to_the_letters_it_counts(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    ids = trilogy(dc)
    dc.receipt(verbs.Receipt(answers=ids[:2], disposition=verbs.Disposition.fixed, ref="abc123",
                             sentinel_probe="false", sentinel_expect=verbs.SentinelExpect.exit0))
    minted = builtins(dc.sentinels())["minted"]
    dc.monitor_add(verbs.MonitorAdd(name="nightly", expect="tool=north", every="1d"))
    case = builtins(dc.case(verbs.Case(fingerprint=FP)))
    with TestClient(create_app(dc)) as client:
        page = client.get("/cases")
        assert page.status_code == 200
        html = page.text
        assert '<a href="/cases"' in client.get("/").text, "the nav links the cases page"
        assert "abc123" in html and "sentinel-red" in html and "monitor-" in html and "nightly" in html
        numbers: dict[str, Any] = _numbers(html, "cases")
        link = f"/cases?case={FP.replace(':', '%3A')}&show="
        want = {"witnesses": case["witness_ids"], "unanswered": case["unanswered"], "answered": case["answered"],
                "regressions": minted}
        for show, letters in want.items():
            href = link + show + "#letters"
            assert numbers[href] == str(len(letters)), show
            assert sorted(_letter_ids(client, href)) == sorted(letters), show
        cards = {href.replace("&amp;", "&"): n for href, n in
                 re.findall(r'<a class="n" href="([^"]+)">(\d+)</a>', html.split('id="cases"', 1)[0])}
        kindless_ids = _letter_ids(client, "/cases?show=kindless#letters")
        assert cards["/cases?show=kindless#letters"] == str(builtins(dc.cases())["kindless"]) == str(len(kindless_ids))
        assert not set(kindless_ids) & {w for c in builtins(dc.cases())["cases"] for w in c["witness_ids"]}
        assert client.get("/cases", params={"case": "fp:north/nothing_like_it"}).status_code == 404

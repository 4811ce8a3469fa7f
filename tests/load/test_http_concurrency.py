"""Concurrent requests against a real ``dovecote serve``: the server runs handle calls side by
side (``http/runner.py``), so the compare-and-swap and group commit meet real contention.

Users rely on: one winner when agents race to claim one item (no lost update),
and every send the server answered 201 being in the recipient's ledger.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx2 as httpx

from dovecote.handle.api import open_home
from dovecote.model.addresses import entity
from dovecote.verbs import Move
from mailhelpers import ENTITY, SENDER, mail_home, send
from serverhelpers import assert_error_shape, serving

RACERS = 8


def _race(n: int, call: Any) -> list[Any]:
    """``call(i)`` from ``n`` threads released together; their answers by thread."""
    gate = threading.Barrier(n)
    out: list[Any] = [None] * n

    def run(i: int) -> None:
        gate.wait()
        out[i] = call(i)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
    return out


def test_concurrent_claims_over_http_have_exactly_one_winner(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    ref = send(dc, "one job, many hands")
    dc.move(Move(kind="seen", entity_id=ENTITY, ref=ref))
    tokens = [dc.token_issue(ENTITY).token for _ in range(RACERS)]  # several sessions of the one agent
    with serving(tmp_path, dc.layout.root) as server:
        api = server.line("api")
        with httpx.Client() as warm:  # the server's folds are warm before the race
            warm.get(f"{api}/entities/{ENTITY}/inbox", headers={"Authorization": f"Bearer {tokens[0]}"})

        def claim(i: int) -> httpx.Response:
            with httpx.Client(timeout=30) as c:
                return c.post(f"{api}/entities/{ENTITY}/items/{ref}/claim", json={},
                              headers={"Authorization": f"Bearer {tokens[i]}"})

        answers = _race(RACERS, claim)
    won = [a for a in answers if a.status_code < 300]
    lost = [a for a in answers if a.status_code >= 300]
    assert len(won) == 1, [(a.status_code, a.text) for a in answers]
    for a in lost:
        assert_error_shape(a, 409, "already_claimed")
    claims = [x for x in open_home(dc.layout.root).store.read(entity(ENTITY)).letters
              if x.data().get("kind") == "claim"]
    assert len(claims) == 1


def test_concurrent_sends_over_http_all_land(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    token = dc.token_issue(SENDER).token
    per = 10
    with serving(tmp_path, dc.layout.root) as server:
        api = server.line("api")

        def burst(i: int) -> list[str]:
            ids = []
            with httpx.Client(timeout=30) as c:
                for n in range(per):
                    r = c.post(f"{api}/entities/{ENTITY}/messages", json={"subject": f"t{i} #{n}", "body": "b"},
                               headers={"Authorization": f"Bearer {token}"})
                    assert r.status_code == 201, r.text
                    ids.append(r.json()["id"])
            return ids

        sent = [x for ids in _race(RACERS, burst) for x in ids]
    box = open_home(dc.layout.root).store.read(entity(ENTITY)).index
    assert len(set(sent)) == RACERS * per and set(sent) <= box.keys()
    sent_records = [x for x in open_home(dc.layout.root).store.read(entity(SENDER)).letters
                    if x.data().get("kind") == "sent"]
    assert {x.data()["message"] for x in sent_records} >= set(sent)


def _threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("Threads:"))


def test_a_server_runs_as_many_threads_after_bursts_of_concurrent_sends_as_after_its_first(tmp_path: Path) -> None:
    # a pool that added a thread whenever a burst found none idle would creep up for as long as the server runs
    dc = mail_home(tmp_path)
    token = dc.token_issue(SENDER).token
    with serving(tmp_path, dc.layout.root) as server:
        api = server.line("api")

        def sends(i: int, n: int = 4) -> None:
            with httpx.Client(timeout=30) as c:
                for k in range(n):
                    r = c.post(f"{api}/entities/{ENTITY}/messages", json={"subject": f"t{i} #{k}", "body": "b"},
                               headers={"Authorization": f"Bearer {token}"})
                    assert r.status_code == 201, r.text

        sends(0, 1)
        first = _threads(server.proc.pid)
        for racers in (RACERS, 2 * RACERS, 3 * RACERS):
            _race(racers, sends)
            assert _threads(server.proc.pid) == first, f"after {racers} concurrent senders"

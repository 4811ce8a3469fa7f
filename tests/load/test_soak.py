"""The soak (issue 13): 30 agents mixing MCP and REST calls against real servers, judged afterwards.

``bench/soak.py`` is the driver; these tests run it in both modes (one serve on
a file home; two serve processes on two homes over one PostgreSQL schema) and
assert what a user relies on: no call answered wrongly, nothing acknowledged
lost, the servers' fds, threads and memory flat. ``make test`` runs a short
sample of each mode (``DOVECOTE_SOAK_SAMPLE_SECONDS``, default 10 s); ``make
stress`` runs the whole soak (``DOVECOTE_SOAK_SECONDS``, default 600 s, the
issue's ten minutes, each mode). The judges themselves are checked on made-up
samples and refusals, so a soak that passes cannot pass by judging nothing.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _soak_clients import Answer
from _soak_samples import FD_SLACK, RSS_SLACK_MIB, THREAD_SLACK, Sample, judge, windows
from dovecote.store.postgres.store import release
from pghelpers import schema
from soak import Agent, Result, Tally, move, refused, soak

pytestmark = pytest.mark.files_only  # real processes; the postgres mode's store is the test's own schema

SAMPLE_SECONDS = float(os.environ.get("DOVECOTE_SOAK_SAMPLE_SECONDS", "10"))
FULL_SECONDS = float(os.environ.get("DOVECOTE_SOAK_SECONDS", "600"))


@pytest.fixture(params=["files", "postgres"])
def mode(request: pytest.FixtureRequest) -> Iterator[tuple[str, str | None]]:
    if request.param == "files":
        yield "files", None
        return
    with schema() as url:
        yield "postgres", url
        release(url)


def assert_soak_held(result: Result, *, threads: bool = True) -> None:
    """No error, nothing lost, the resources flat (``threads``: their verdict too), every verb reached."""
    report = "\n".join(result.lines())
    assert result.tally.errors == [], report
    assert result.lost == 0, report
    problems = [p for p in result.flatness.problems if threads or not p.startswith("threads")]
    assert problems == [], report
    # the mix reached every verb, on both faces' worth of calls: a soak of sends alone proves little
    for verb in ("send", "inbox", "claim", "seen", "complete", "wait", "search", "show"):
        assert result.tally.lat.get(verb), f"no {verb} answered:\n{report}"
    assert len(result.tally.acked) > 0


def test_a_short_soak_of_30_agents_answers_every_call_loses_nothing_and_stays_flat(
        tmp_path: Path, mode: tuple[str, str | None]) -> None:
    name, store = mode
    result = soak(name, tmp_path, agents=30, seconds=SAMPLE_SECONDS, every=1.0, store=store)
    # each pool starts its threads on its first call (http.runner.started), and the first wait or long poll may
    # come after a sample's short warm-up: the sample judges the fds and the memory; the full soak the threads too
    assert_soak_held(result, threads=False)


@pytest.mark.stress
def test_the_full_soak_of_30_agents_for_ten_minutes(tmp_path: Path, mode: tuple[str, str | None]) -> None:
    name, store = mode
    result = soak(name, tmp_path, agents=30, seconds=FULL_SECONDS, every=5.0, store=store)
    print("\n".join(result.lines()))
    assert_soak_held(result)


# -- the judges ---------------------------------------------------------------------------------


def steady(seconds: int, *, fds: int = 70, threads: int = 12, rss_mib: float = 90, per_s: int = 40) -> list[Sample]:
    return [Sample(float(t), fds, threads, int(rss_mib * 1024), t * per_s) for t in range(0, seconds + 1, 5)]


def test_windows_are_the_second_minute_the_first_half_and_the_last_minute_and_fifths_of_a_short_run() -> None:
    early, between, late = windows(steady(600), 600)
    assert (early[0].t, early[-1].t, late[0].t, late[-1].t) == (60, 115, 540, 600)
    assert (between[0].t, between[-1].t) == (60, 295)
    early, between, late = windows([Sample(float(t), 1, 1, 1, 0) for t in range(21)], 20)
    assert (early[0].t, early[-1].t, between[-1].t, late[0].t) == (4, 7, 9, 16)


def test_the_windows_count_from_when_the_server_first_answered() -> None:
    # a short sample on a loaded machine: nothing acknowledged for 3 s (a server still starting: few fds, one
    # thread), then a steady served server whose fds are twice the starting ones; the windows begin at 3 s
    starting = [Sample(float(t), 40, 1, 77_000, 0) for t in (0, 3)]
    served = [Sample(float(t), 80 if t < 11 else 26, 97, 85_000, 30 * (t - 3)) for t in range(4, 12)]
    early, between, late = windows(starting + served, 11)
    assert (early[0].t, early[-1].t, late[0].t, late[-1].t) == (5, 6, 10, 11)
    assert (between[0].t, between[-1].t) == (5, 6)
    assert judge(starting + served, 11, 1.0).flat, judge(starting + served, 11, 1.0).problems
    leaking = [Sample(s.t, s.fds + 5 * int(s.t), s.threads, s.rss_kib, s.letters) for s in served]
    assert "fds grew" in judge(starting + leaking, 11, 1.0).problems[0]  # a leak after the start still shows


def test_steady_counts_and_memory_that_grows_with_the_letters_are_flat() -> None:
    samples = steady(600)
    grown = [Sample(s.t, s.fds + (FD_SLACK if s.t > 500 else 0), s.threads + THREAD_SLACK, s.rss_kib
                    + int(s.letters * 1.5), s.letters) for s in samples]  # 1.5 KiB a letter: derived state
    assert judge(samples, 600, 1.0).flat
    assert judge(grown, 600, 1.0).flat, judge(grown, 600, 1.0).problems


@pytest.mark.parametrize(("change", "word"), [
    (lambda s: Sample(s.t, s.fds + int(s.t / 10), s.threads, s.rss_kib, s.letters), "fds grew"),
    (lambda s: Sample(s.t, s.fds, s.threads + int(s.t / 60), s.rss_kib, s.letters), "threads grew"),
    (lambda s: Sample(s.t, s.fds, s.threads, s.rss_kib + s.letters * 4, s.letters), "RSS grew"),
    (lambda s: Sample(s.t, s.fds, s.threads, s.rss_kib + int((RSS_SLACK_MIB + 8) * 1024 * s.t / 600), 0),
     "RSS grew"),
])
def test_a_leak_of_fds_threads_or_memory_is_not_flat(change: object, word: str) -> None:
    verdict = judge([change(s) for s in steady(600)], 600, 1.0)  # type: ignore[operator]
    assert not verdict.flat
    assert any(p.startswith(word) for p in verdict.problems), verdict.problems


def test_too_short_a_run_is_not_judged_flat() -> None:
    assert not judge(steady(5), 600, 1.0).flat


def test_a_refusal_the_agents_own_moves_explain_is_asked_for_and_anything_else_an_error() -> None:
    tally, agent = Tally(), Agent("ent_agent00", ["ent_agent01"])
    agent.moved_to["abc"] = "DONE"  # a move of the agent's (either client) completed it
    refused(tally, agent, "rest", "seen", "abc", Answer(reason="illegal_transition"))
    agent.moved_to["act"] = "ACTIVE"
    refused(tally, agent, "mcp", "claim", "act", Answer(reason="already_claimed"))
    # the other client's move overlapped the call (a defer and its undefer while this claim was out)
    refused(tally, agent, "rest", "claim", "def", Answer(reason="illegal_transition"), overlapped=True)
    assert tally.expected == {"seen: illegal_transition": 1, "claim: already_claimed": 1,
                              "claim: illegal_transition": 1}
    assert tally.errors == []
    refused(tally, agent, "mcp", "seen", "def", Answer(reason="illegal_transition"))  # no overlap: no race
    agent.moved_to["wai"] = "WAIT"
    refused(tally, agent, "rest", "claim", "wai", Answer(reason="already_claimed"))  # WAIT allows claim
    refused(tally, agent, "rest", "claim", "xyz", Answer(reason="illegal_transition"))  # nothing explains it
    refused(tally, agent, "rest", "send", None, Answer(reason="unknown_entity"))
    refused(tally, agent, "rest", "complete", "abc", Answer(reason="transport", detail="reset"))
    assert len(tally.errors) == 5 and sum(tally.expected.values()) == 3


class _Scripted:
    """A client whose move answers are given in advance (the server's answers, in the order they arrive)."""

    def __init__(self, face: str, answers: list[Answer]) -> None:
        self.face, self.answers = face, answers

    async def move(self, me: str, ref: str, kind: str, **opts: object) -> Answer:
        return self.answers.pop(0)


def test_a_seen_answered_after_the_other_clients_claim_does_not_hide_the_claim_from_the_judge() -> None:
    # the REST claim is answered ACTIVE; the MCP seen, served before the claim, arrives later saying WAIT; the
    # agent's view (WAIT) then asks MCP for a nack, refused from ACTIVE: the agent's own claim explains it
    tally, agent = Tally(), Agent("ent_agent00", ["ent_agent01"])
    rest = _Scripted("rest", [Answer(data={"to": "ACTIVE"})])
    mcp = _Scripted("mcp", [Answer(data={"to": "WAIT"}), Answer(reason="illegal_transition", detail="from ACTIVE")])

    async def script() -> None:
        assert await move(tally, agent, rest, "abc", "claim")
        assert await move(tally, agent, mcp, "abc", "seen")
        assert not await move(tally, agent, mcp, "abc", "nack", reason="soak")

    asyncio.run(script())
    assert tally.errors == [] and tally.expected == {"nack: illegal_transition": 1}


class _Gated(_Scripted):
    """A scripted client whose first answer waits until ``release`` is set (a reply slow on its way back)."""

    def __init__(self, face: str, answers: list[Answer]) -> None:
        super().__init__(face, answers)
        self.release = asyncio.Event()
        self.calls = 0

    async def move(self, me: str, ref: str, kind: str, **opts: object) -> Answer:
        self.calls += 1
        if self.calls == 1:
            await self.release.wait()
        return await super().move(me, ref, kind, **opts)


def test_a_claim_answered_after_the_other_clients_defer_and_undefer_leaves_the_state_unknown() -> None:
    # the MCP claim is written first (ACTIVE), the REST defer (ACTIVE -> DEFER) and undefer (-> WAIT) after it,
    # but the claim's answer arrives last: the agent's moves made WAIT of the item, not ACTIVE, so the MCP
    # complete that follows is refused from WAIT, and the overlap explains it; a move that did not overlap
    # makes the state known again, and a refusal from it is an error once more
    tally, agent = Tally(), Agent("ent_agent00", ["ent_agent01"])
    mcp = _Gated("mcp", [Answer(data={"to": "ACTIVE"}), Answer(data={"to": "WAIT"}),
                         Answer(reason="illegal_transition", detail="complete is not allowed from WAIT"),
                         Answer(data={"to": "ACTIVE"}), Answer(reason="illegal_transition", detail="from ACTIVE")])
    rest = _Scripted("rest", [Answer(data={"to": "DEFER"}), Answer(data={"to": "WAIT"})])

    async def script() -> None:
        claim = asyncio.ensure_future(move(tally, agent, mcp, "abc", "claim"))
        await asyncio.sleep(0)
        assert await move(tally, agent, rest, "abc", "defer", until="2099-01-01T00:00:00Z")
        assert await move(tally, agent, rest, "abc", "undefer")
        mcp.release.set()
        assert await claim
        assert await move(tally, agent, mcp, "abc", "seen")
        assert not await move(tally, agent, mcp, "abc", "complete", result_ref="soak")
        assert await move(tally, agent, mcp, "abc", "claim")  # alone: ACTIVE is known again
        assert not await move(tally, agent, mcp, "abc", "complete", result_ref="soak")  # ACTIVE allows it

    asyncio.run(script())
    assert tally.expected == {"complete: illegal_transition": 1}
    assert tally.errors == ["mcp complete ent_agent00 abc: illegal_transition: from ACTIVE"]


def test_an_mcp_session_whose_server_dies_under_a_call_is_a_counted_transport_error_then_reopened(
    tmp_path: Path,
) -> None:
    """The driver's MCP client: a server killed while a ``wait`` is out is an answer (``transport``, with
    what the session died of), never a ``CancelledError`` that ends the run (the SDK hands a POST that
    fails before any response to its caller as a bare cancellation); the next call, once a server
    answers on the port again, opens a new session and is answered."""
    from _load import agents_home, free_port, start, stop
    from _soak_clients import TRANSPORT, Mcp

    home, names, tokens = agents_home(tmp_path / "host", 2)
    port = free_port()
    server = start(["serve", "--port", str(port)], home, port)
    client = Mcp(f"http://127.0.0.1:{port}/mcp", tokens[names[0]])

    async def run() -> tuple[Answer, Answer, Answer]:
        try:
            await client.open()
            first = await client.inbox(names[0])
            pending = asyncio.ensure_future(client.wait(names[0], None, 20.0))
            await asyncio.sleep(1.0)
            server.kill()
            server.wait()
            died = await asyncio.wait_for(pending, 60)
            again = start(["serve", "--port", str(port)], home, port)
            try:
                after = await client.inbox(names[0])
            finally:
                stop(again)
            return first, died, after
        finally:
            await client.close()

    try:
        first, died, after = asyncio.run(run())
    finally:
        if server.poll() is None:
            stop(server)
    assert first.ok, first
    assert died.reason == TRANSPORT, died
    assert after.ok and after.data.get("entity") == names[0], after

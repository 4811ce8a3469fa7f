"""Tokens: shown once, stored as hashes in a 0600 file, revoked by an appended record; the rule table."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson
import pytest

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model import credentials as tk
from helpers import cli_json, ledger_lines, run_cli
from mailhelpers import ENTITY, SENDER, mail_home

# -- the pure part ----------------------------------------------------------------


def test_a_token_is_recognizable_and_its_hash_is_not_the_token() -> None:
    token = tk.new_token()
    assert token.startswith("dct_") and len(token) > 40
    digest = tk.token_hash(token)
    assert len(digest) == 64 and token not in digest and tk.token_id(digest) == digest[:12]
    assert tk.new_token() != token


def _rows(*records: dict[str, object]) -> dict[str, tk.TokenRow]:
    return tk.fold(records)


def test_the_fold_keeps_the_first_revoke_and_ignores_junk() -> None:
    token = tk.new_token()
    digest = tk.token_hash(token)
    tid = tk.token_id(digest)
    rows = _rows(
        tk.issue_record(digest, "ent_a", "agent", "2026-07-01T10:00:00Z", "op"),
        {"kind": tk.ISSUE, "hash": "short", "entity": "x", "role": "agent"},  # not a sha256
        {"kind": tk.ISSUE, "hash": "f" * 64, "entity": "x", "role": "king"},  # no such role
        tk.revoke_record("000000000000", "2026-07-01T10:30:00Z", "op"),  # unknown id: nothing
        tk.revoke_record(tid, "2026-07-01T11:00:00Z", "op"),
        tk.revoke_record(tid, "2026-07-01T12:00:00Z", "op"),
    )
    assert list(rows) == [tid]
    assert rows[tid].revoked == "2026-07-01T11:00:00Z"
    with pytest.raises(Refusal) as e:
        tk.principal_of(rows, token)
    assert e.value.reason == "unauthorized"


@pytest.mark.parametrize("token", ["", "Bearer x", "dct_not-issued", "dct_" + "A" * 43])
def test_an_unknown_token_is_unauthorized(token: str) -> None:
    digest = tk.token_hash(tk.new_token())
    rows = _rows(tk.issue_record(digest, "ent_a", "agent", "t", "op"))
    with pytest.raises(Refusal) as e:
        tk.principal_of(rows, token)
    assert e.value.reason == "unauthorized"


AGENT = tk.Principal("ent_a", "agent")
OPERATOR = tk.Principal("ent_ops", "operator")


@pytest.mark.parametrize(
    ("principal", "verb", "target", "allowed"),
    [
        (AGENT, "send", "ent_b", True),  # an agent may send to anyone
        (AGENT, "send", "ent_a", True),
        (AGENT, "draft", "ent_b", True),
        *((AGENT, verb, "ent_a", True) for verb in ("inbox", "wait", "show", "search", "seen", "claim",
                                                    "complete", "defer", "undefer", "nack")),
        *((AGENT, verb, "ent_b", False) for verb in ("inbox", "wait", "show", "search", "seen", "claim",
                                                     "complete", "defer", "undefer", "nack")),
        *((OPERATOR, verb, "ent_b", True) for verb in ("inbox", "show", "search", "wait", "send")),
    ],
)
def test_the_rule_table(principal: tk.Principal, verb: str, target: str, allowed: bool) -> None:
    if allowed:
        tk.authorize(principal, verb, target)
        return
    with pytest.raises(Refusal) as e:
        tk.authorize(principal, verb, target)
    assert e.value.reason == "forbidden" and e.value.status == 403


def test_every_verb_is_in_the_table_and_an_unknown_one_is_a_bug() -> None:
    assert set(tk.VERBS.values()) == {"any", "own"}
    with pytest.raises(ValueError, match="unknown verb"):
        tk.authorize(OPERATOR, "archive", "ent_b")


# -- through the handle and the CLI -------------------------------------------------


def test_issue_stores_only_the_hash_in_a_0600_file(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    issued = dc.token_issue(ENTITY)
    path = dc.layout.root / "tokens.jsonl"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    raw = path.read_bytes()
    assert issued.token.encode() not in raw
    assert tk.token_hash(issued.token).encode() in raw
    assert dc.authenticate(issued.token) == tk.Principal(ENTITY, "agent")
    ops = dc.token_issue(SENDER, "operator")
    assert dc.authenticate(ops.token) == tk.Principal(SENDER, "operator")
    assert [r.id for r in dc.tokens()] == [issued.row.id, ops.row.id]


def test_revoke_is_an_appended_record_and_the_token_stops_working(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    issued = dc.token_issue(ENTITY)
    path = dc.layout.root / "tokens.jsonl"
    before = path.read_bytes()
    row = dc.token_revoke(issued.row.id)
    assert row.revoked is not None
    assert path.read_bytes().startswith(before) and len(ledger_lines(path)) == 2  # never rewritten
    with pytest.raises(Refusal) as e:
        dc.authenticate(issued.token)
    assert e.value.reason == "unauthorized"
    assert dc.token_revoke(issued.row.id).revoked == row.revoked  # twice: nothing more appended
    assert len(ledger_lines(path)) == 2
    with pytest.raises(Refusal) as e2:
        dc.token_revoke("0123456789ab")
    assert e2.value.reason == "unknown_token"


def test_the_event_loops_check_answers_only_from_a_table_that_is_the_file_now(tmp_path: Path) -> None:
    """``authenticate_cached`` (what a server's event loop does itself) never answers from a stale table:
    before the first read and after any change of the file it says None, and a worker reads the file."""
    dc = mail_home(tmp_path)
    issued = dc.token_issue(ENTITY)
    assert dc.authenticate_cached(issued.token) is None  # nothing read yet
    assert dc.authenticate(issued.token).entity == ENTITY
    cached = dc.authenticate_cached(issued.token)
    assert cached is not None and cached.entity == ENTITY
    with pytest.raises(Refusal, match="unauthorized"):
        dc.authenticate_cached("dvc_" + "0" * 40)  # an unknown token is refused from the table as well
    dc.token_revoke(issued.row.id)
    assert dc.authenticate_cached(issued.token) is None  # the file changed: not answered from the old table
    with pytest.raises(Refusal, match="unauthorized"):
        dc.authenticate(issued.token)
    with pytest.raises(Refusal, match="unauthorized"):
        dc.authenticate_cached(issued.token)  # the new table, once read, refuses it too


def test_refusals_append_nothing(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    for call, reason in (
        (lambda: dc.token_issue("ent_nobody"), "unknown_entity"),
        (lambda: dc.token_issue(ENTITY, "root"), "invalid_field"),
        (lambda: dc.token_issue("../x", "operator"), "invalid_name"),
    ):
        with pytest.raises(Refusal) as e:
            call()
        assert e.value.reason == reason
    assert not (dc.layout.root / "tokens.jsonl").exists()


def test_a_world_readable_token_file_is_refused_and_reported(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    issued = dc.token_issue(ENTITY)
    path = dc.layout.root / "tokens.jsonl"
    assert dc.doctor().tokens.to_dict() == {
        "path": str(path), "exists": True, "private": True, "issued": 1, "active": 1}
    os.chmod(path, 0o644)
    before = path.read_bytes()
    for call in (lambda: dc.authenticate(issued.token), lambda: dc.token_issue(ENTITY), dc.tokens,
                 lambda: dc.token_revoke(issued.row.id)):
        with pytest.raises(Refusal) as e:
            call()
        assert e.value.reason == "insecure_tokens"
    assert path.read_bytes() == before
    report = dc.doctor().tokens.to_dict()
    assert report["private"] is False and "chmod 600" in report["problem"]


def test_the_cli_prints_the_token_once_and_list_never_shows_it(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    home = dc.layout.root
    r = run_cli(tmp_path, "token", "issue", ENTITY, home=home)
    assert r.returncode == 0, r.stderr
    token = r.stdout.decode().strip()
    assert token.startswith("dct_") and "shown only now" in r.stderr.decode()
    listed = run_cli(tmp_path, "token", "list", home=home)
    assert token not in listed.stdout.decode() and ENTITY in listed.stdout.decode()
    rows = cli_json(tmp_path, "token", "list", "--json", home=home)
    assert rows == [{"id": tk.token_id(tk.token_hash(token)), "entity": ENTITY, "role": "agent",
                     "created": rows[0]["created"], "revoked": None}]
    revoked = cli_json(tmp_path, "token", "revoke", rows[0]["id"], "--json", home=home)
    assert revoked["revoked"] is not None
    bad = run_cli(tmp_path, "token", "revoke", "feedfeedfeed", home=home)
    assert bad.returncode == 2 and b"unknown_token" in bad.stderr
    assert orjson.loads(run_cli(tmp_path, "doctor", "--json", home=home).stdout)["tokens"]["active"] == 0


def test_a_warm_handle_sees_a_revoke_and_a_chmod_at_once(tmp_path: Path) -> None:
    """The handle keeps the token table between checks (a server checks every request), never past a change."""
    dc = mail_home(tmp_path)
    first, second = dc.token_issue(ENTITY), dc.token_issue(ENTITY)
    assert dc.authenticate(first.token).entity == ENTITY  # read and kept
    Dovecote(dc.layout.root).token_revoke(first.row.id)  # another process revokes
    with pytest.raises(Refusal) as revoked:
        dc.authenticate(first.token)
    assert revoked.value.reason == "unauthorized"
    assert dc.authenticate(second.token).entity == ENTITY
    (dc.layout.root / "tokens.jsonl").chmod(0o644)
    with pytest.raises(Refusal) as insecure:
        dc.authenticate(second.token)
    assert insecure.value.reason == "insecure_tokens"

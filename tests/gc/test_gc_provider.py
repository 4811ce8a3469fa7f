"""``dovecote-gc-mail`` beyond the conformance suite: its wire, its exit statuses, where the mail lives,
what archive keeps, and that its mail is the mail every other face of dovecote shows."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
import pytest

from dovecote.handle.api import open_home
from dovecote.model.addresses import entity
from gchelpers import GC_MAIL_BIN, ExecProvider, go_marshal, provider
from helpers import run_cli
from serverhelpers import serving

pytestmark = pytest.mark.files_only

PRECISE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def raw(p: ExecProvider, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(GC_MAIL_BIN), *args], env=p.env, cwd=p.cwd, input=stdin, capture_output=True,
                          timeout=30)


def home_of(p: ExecProvider) -> Path:
    return Path(p.env["GC_CITY"]) / ".dovecote"


def test_the_wire_is_gcs_compact_json(tmp_path: Path) -> None:
    p = provider(tmp_path)
    sent = raw(p, "send", "bob", stdin=go_marshal({"from": "alice", "subject": "a <b> & c", "body": "x"}))
    assert sent.returncode == 0 and sent.stderr == b""
    text = sent.stdout.decode()
    assert text.endswith("\n") and " " not in text.replace("a <b> & c", "")  # compact: no spaces of its own
    m = json.loads(text)
    assert isinstance(m["id"], str) and m["subject"] == "a <b> & c"
    assert PRECISE.match(m["created_at"]), m["created_at"]
    assert m["priority"] == 2 and m["cc"] == [] and m["read"] is False
    assert m["thread_id"].startswith("thread_") and "reply_to" not in m  # omitted when empty, as gc's omitempty
    empty = raw(p, "inbox", "carol")
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, b"", b"")  # nothing at all: gc's nil, not []
    assert raw(p, "count", "nobody").stdout == b'{"total":0,"unread":0}\n'
    assert raw(p, "thread", "no-such-thread").stdout == b""


def test_stdin_is_read_only_by_send_and_reply(tmp_path: Path) -> None:
    # older gc hands every other operation its own stdin: a provider that read it would hang there
    p = provider(tmp_path)
    p.send("alice", "bob", "s", "b")
    proc = subprocess.Popen([str(GC_MAIL_BIN), "inbox", "bob"], env=p.env, cwd=p.cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        status = proc.wait(timeout=20)  # stdin stays open and empty the whole time
    finally:
        proc.kill()
        out, _ = proc.communicate()
    assert status == 0 and len(json.loads(out)) == 1


def test_errors_exit_1_with_one_line_never_2_never_a_traceback(tmp_path: Path) -> None:
    p = provider(tmp_path)
    p.send("alice", "bob", "s", "b")
    cases = {
        ("inbox",): "inbox takes one argument",
        ("get", "a", "b"): "get takes one argument",
        ("send", "rig.worker"): "invalid_name",
        ("send", "rig//worker"): "invalid_name",
        ("inbox", "../etc"): "invalid_name",
        ("send", "bob"): "",  # stdin is not JSON
    }
    for args, words in cases.items():
        r = raw(p, *args, stdin=b"not json" if args[0] == "send" else b"")
        err = r.stderr.decode()
        assert r.returncode == 1, (args, r)
        assert words in err and "Traceback" not in err and err.count("\n") == 1, (args, err)
        assert r.stdout == b""
    wrong_type = raw(p, "send", "bob", stdin=b'{"from":"alice","subject":1,"body":"x"}')
    assert wrong_type.returncode == 1 and b"subject" in wrong_type.stderr
    for op in ("get", "read", "mark-read", "mark-unread", "archive", "delete"):
        r = raw(p, op, "nonexistent")
        assert r.returncode == 1 and b"gc-mail-error:not-found" in r.stderr, (op, r)
    r = raw(p, "reply", "nonexistent", stdin=go_marshal({"from": "bob", "subject": "", "body": "x"}))
    assert r.returncode == 1 and b"gc-mail-error:not-found" in r.stderr
    unknown = raw(p, "archived", "bob")  # a later gc's operation: "unknown", which gc reads as empty success
    assert unknown.returncode == 2 and unknown.stdout == b""


def test_the_mail_lives_in_the_city_never_in_the_working_directory(tmp_path: Path) -> None:
    p = provider(tmp_path)
    p.send("alice", "bob", "s", "b")
    assert (home_of(p) / "config.toml").is_file()
    assert not (tmp_path / "worktree" / ".dovecote").exists() and list((tmp_path / "worktree").iterdir()) == []
    elsewhere = tmp_path / "elsewhere"
    both = {**p.env, "DOVECOTE_HOME": str(elsewhere)}  # DOVECOTE_HOME, when set, wins
    assert subprocess.run([str(GC_MAIL_BIN), "ensure-running"], env=both, cwd=p.cwd, timeout=30).returncode == 0
    assert (elsewhere / "config.toml").is_file()
    neither = {k: v for k, v in p.env.items() if k not in ("GC_CITY", "DOVECOTE_HOME")}
    r = subprocess.run([str(GC_MAIL_BIN), "inbox", "bob"], env=neither, cwd=p.cwd, capture_output=True, timeout=30)
    assert r.returncode == 1 and b"GC_CITY" in r.stderr
    assert list((tmp_path / "worktree").iterdir()) == []


def test_archive_closes_the_message_and_keeps_it(tmp_path: Path) -> None:
    p = provider(tmp_path)
    sent = p.send("alice", "bob", "keep me", "every word")
    p.archive(sent.id)
    assert not p.all("bob") and p.count("bob") == (0, 0)
    assert p.get(sent.id).body == "every word"
    assert len(p.thread(sent.thread_id) or []) == 1  # a thread is history: archived mail stays in it
    dc = open_home(home_of(p))
    letters = dc.store.read(entity("bob")).letters
    assert [x.id for x in letters if x.id == sent.id] == [sent.id]  # the message's line is in the ledger
    kinds = [x.data().get("kind") for x in letters if x.data().get("ref") == sent.id]
    assert kinds == ["seen", "nack"]  # archived = read, then closed: two letters, nothing removed
    view = dc.inbox("bob", include_terminal=True)
    assert [(i["id"], i["state"]) for i in view.items] == [(sent.id, "NACK")]
    assert dc.verify().ok


def test_mail_is_the_same_letter_on_the_cli_both_ways(tmp_path: Path) -> None:
    p = provider(tmp_path)
    home = home_of(p)
    sent = p.send("alice", "bob", "from gc", "hello")
    shown = run_cli(tmp_path, "inbox", "bob", "--json", home=home, process=True)
    items = json.loads(shown.stdout)["items"]
    assert [(i["id"], i["sender"], i["subject"], i["seen"]) for i in items] == [(sent.id, "alice", "from gc", False)]
    p.read(sent.id)
    items = json.loads(run_cli(tmp_path, "inbox", "bob", "--json", home=home, process=True).stdout)["items"]
    assert items[0]["seen"] is True  # gc's read is dovecote's seen
    p.mark_unread(sent.id)
    items = json.loads(run_cli(tmp_path, "inbox", "bob", "--json", home=home, process=True).stdout)["items"]
    assert items[0]["seen"] is False
    cli = run_cli(tmp_path, "send", "--recipient", "bob", "--sender", "ent_ops", "--subject", "from the cli",
                  "--body", "hi", "--priority", "urgent", home=home, process=True)
    assert cli.returncode == 0, cli.stderr
    cli_id = cli.stdout.decode().strip().split()[-1]
    inbox = p.inbox("bob") or []
    assert {(m.id, m.from_, m.priority) for m in inbox} >= {(cli_id, "ent_ops", 0)}


def test_mail_is_the_same_letter_over_rest_both_ways(tmp_path: Path) -> None:
    p = provider(tmp_path)
    home = home_of(p)
    sent = p.send("alice", "bob", "from gc", "hello")
    dc = open_home(home)
    token = dc.token_issue("bob").token
    alice = dc.token_issue("alice").token
    with serving(tmp_path, home) as server:
        api = server.line("api")
        with httpx.Client(timeout=30) as c:
            listed = c.get(f"{api}/entities/bob/inbox", headers={"Authorization": f"Bearer {token}"})
            assert [i["id"] for i in listed.json()["items"]] == [sent.id]
            posted = c.post(f"{api}/entities/bob/messages", json={"subject": "over rest", "body": "b"},
                            headers={"Authorization": f"Bearer {alice}"})
            assert posted.status_code == 201, posted.text
    inbox = p.inbox("bob") or []
    assert {(m.id, m.from_, m.subject) for m in inbox} == {(sent.id, "alice", "from gc"),
                                                          (posted.json()["id"], "alice", "over rest")}


def test_a_reply_by_someone_else_joins_the_thread_without_a_reply_link(tmp_path: Path) -> None:
    # dovecote's reply link names an item in the replier's own box: only its recipient can make one
    p = provider(tmp_path)
    sent = p.send("alice", "bob", "s", "b")
    other = p.reply(sent.id, "carol", "me too", "x")
    assert (other.to, other.thread_id, other.reply_to) == ("alice", sent.thread_id, "")


def test_an_empty_subject_is_the_bodys_first_line_as_gcs_own_store_makes_it(tmp_path: Path) -> None:
    p = provider(tmp_path)
    m = p.send("alice", "bob", "", "  first line of it\nsecond")
    assert m.subject == "first line of it"
    assert p.send("alice", "bob", "", "x" * 100).subject == "x" * 80
    r = raw(p, "send", "bob", stdin=go_marshal({"from": "alice", "subject": "", "body": ""}))
    assert r.returncode == 1 and b"missing_field" in r.stderr


def test_ensure_running_loads_no_handle(tmp_path: Path) -> None:
    # gc starts the provider twice a command: the first start must stay near a bare interpreter's
    p = provider(tmp_path)
    p.send("alice", "bob", "s", "b")
    probe = ("import sys; sys.argv = ['dovecote-gc-mail', 'ensure-running']; from dovecote.gc.main import main; "
             "assert main() == 0; print(sorted(m for m in sys.modules if m.startswith(('dovecote.', 'msgspec'))))")
    r = subprocess.run([sys.executable, "-c", probe], env=p.env, cwd=p.cwd, capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().strip() == "['dovecote._version', 'dovecote.gc', 'dovecote.gc.main']"


def test_an_empty_name_lists_every_agent_as_gcs_api_asks(tmp_path: Path) -> None:
    p = provider(tmp_path)
    a, b = p.send("alice", "bob", "one", "1"), p.send("bob", "carol", "two", "2")
    p.read(a.id)
    assert [m.id for m in p.inbox("") or []] == [b.id]
    assert {m.id for m in p.all("") or []} == {a.id, b.id}
    assert p.count("") == (2, 1)


def test_a_thread_may_be_named_by_one_of_its_messages_as_later_gc_does(tmp_path: Path) -> None:
    p = provider(tmp_path)
    sent = p.send("alice", "bob", "s", "b")
    reply = p.reply(sent.id, "bob", "re", "r")
    by_thread = [m.id for m in p.thread(sent.thread_id) or []]
    assert by_thread == [sent.id, reply.id]  # oldest first
    assert [m.id for m in p.thread(reply.id) or []] == by_thread
    assert p.thread("nonexistent-thread") is None


def test_gc_path_names_are_entities_with_dots_and_read_back_as_gc_wrote_them(tmp_path: Path) -> None:
    """gc names agents by path (``gastown/mayor``, ``myrig/polecats/polecat-1``, ``deacon/``): each is a mailbox,
    its entity the name with dots for slashes, and every message shows the names as gc wrote them."""
    p = provider(tmp_path)
    sent = p.send("gastown/mayor", "myrig/polecats/polecat-1", "cutover", "leg is green")
    assert (sent.from_, sent.to) == ("gastown/mayor", "myrig/polecats/polecat-1")
    assert [(m.id, m.from_) for m in p.inbox("myrig/polecats/polecat-1") or []] == [(sent.id, "gastown/mayor")]
    reply = p.reply(sent.id, "myrig/polecats/polecat-1", "re: cutover", "ok")
    assert (reply.from_, reply.to) == ("myrig/polecats/polecat-1", "gastown/mayor")
    p.send("deacon/", "gastown/mayor", "s", "b")
    assert {m.from_ for m in p.inbox("gastown/mayor") or []} == {"myrig/polecats/polecat-1", "deacon/"}
    home = tmp_path / "city" / ".dovecote"
    listed = json.loads(run_cli(tmp_path, "entity", "list", "--json", home=home, process=True).stdout)
    assert {"gastown.mayor", "myrig.polecats.polecat-1", "deacon."} <= {e["id"] for e in listed}

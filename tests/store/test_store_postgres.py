"""The PostgreSQL store beyond the contract suite: its schema, its config, copying, same answers.

Each test has a schema of its own (``pghelpers``); the contract every store
keeps is ``test_store_contract.py``'s.
"""

from __future__ import annotations

import secrets
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson
import psycopg
import pytest

from dovecote.cli.demo import build_demo
from dovecote.errors import Refusal
from dovecote.handle import api
from dovecote.handle.api import Dovecote
from dovecote.model.addresses import Address
from dovecote.model.letters import canonical_line, letter_id
from dovecote.model.results import builtins
from dovecote.roster.store_url import shown
from dovecote.store.files import FileStore
from dovecote.store.postgres import schema as store_pgschema
from dovecote.store.postgres.store import PostgresStore, release
from dovecote.verbs import Cases, EntityAdd, Inbox, Message, Search, Sweep, Trackers
from helpers import DOVECOTE_BIN, cli_env, cli_json, new_home, run_cli
from pghelpers import schema

NOW = datetime(2026, 7, 6, 12, 0, tzinfo=UTC)
BOX = Address("entity", "ent_a")


def line(**obj: object) -> bytes:
    return canonical_line({"ts": "2026-07-05T10:00:00Z", "agent": "probe", **obj})


# -- the schema -----------------------------------------------------------------


def test_migrate_is_idempotent_and_records_each_version() -> None:
    with schema(migrated=False) as u:
        first = builtins(api.migrate_store(u))
        again = builtins(api.migrate_store(u))
        assert (first["before"], first["applied"]) == (None, [v for v, _ in store_pgschema.MIGRATIONS])
        assert (again["before"], again["applied"]) == (store_pgschema.VERSION, [])
        with psycopg.connect(u) as conn:
            assert conn.execute("SELECT count(*) FROM dovecote_schema_version").fetchone() == (
                len(store_pgschema.MIGRATIONS),
            )


def test_an_unmigrated_database_is_refused_naming_the_command() -> None:
    with schema(migrated=False) as u:
        with pytest.raises(Refusal) as e:
            PostgresStore(u)
        assert e.value.reason == "schema_unmigrated" and "dovecote db migrate" in str(e.value)


def test_a_schema_newer_than_this_dovecote_is_refused_and_not_migrated(url: str) -> None:
    with psycopg.connect(url) as conn:
        conn.execute("INSERT INTO dovecote_schema_version (version) VALUES (%s)", (store_pgschema.VERSION + 1,))
    for attempt in (lambda: PostgresStore(url), lambda: builtins(api.migrate_store(url))):
        with pytest.raises(Refusal) as e:
            attempt()
        assert e.value.reason == "schema_too_new"


def test_a_version_1_database_migrates_to_byte_wise_ids_keeping_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    letters = "SELECT seq, id, line FROM dovecote_letters ORDER BY seq"
    table = "SELECT relfilenode FROM pg_class WHERE oid = 'dovecote_letters'::regclass"
    collation = "SELECT collation_name FROM information_schema.columns WHERE table_schema = current_schema() " \
                "AND table_name = 'dovecote_letters' AND column_name = 'id'"
    lines = [line(what=f"#{n}") for n in range(300)]
    with schema(migrated=False) as u:
        monkeypatch.setattr(store_pgschema, "MIGRATIONS", store_pgschema.MIGRATIONS[:1])
        monkeypatch.setattr(store_pgschema, "VERSION", 1)
        assert builtins(api.migrate_store(u))["applied"] == [1]
        monkeypatch.undo()
        with psycopg.connect(u) as conn:  # the rows as a version-1 dovecote wrote them
            conn.execute("INSERT INTO dovecote_boxes (box) VALUES ('entity:ent_a')")
            conn.execute("INSERT INTO dovecote_letters SELECT 1, 0, s, i, l FROM unnest(%s::int8[], %s::text[], "
                         "%s::bytea[]) AS r(s, i, l)", (list(range(1, 301)), [letter_id(x) for x in lines], lines))
        with psycopg.connect(u) as conn:
            before, file = conn.execute(letters).fetchall(), conn.execute(table).fetchone()
            assert conn.execute(collation).fetchone() == (None,)
        with pytest.raises(Refusal, match="dovecote db migrate"):
            PostgresStore(u)
        assert builtins(api.migrate_store(u))["applied"] == [2, 3]
        with psycopg.connect(u) as conn:
            assert conn.execute(letters).fetchall() == before, "every row as it was"
            assert conn.execute(table).fetchone() == file, "the table was not rewritten"
            assert conn.execute(collation).fetchone() == ("C",)
        st = PostgresStore(u)
        try:
            assert [x.raw for x in st.read(BOX).letters] == lines
            assert not any(new for _, new in st.append(BOX, lines)), "the ids are still unique and found"
        finally:
            st.close()


def test_letters_are_rows_of_exact_bytes_never_updated(url: str) -> None:
    st = PostgresStore(url)
    try:
        a = b'{"what":"a",  "spaced":true}'  # not canonical: the bytes are kept, so is the id
        st.append(BOX, [a, b"not json", a])
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT seq, id, line FROM dovecote_letters ORDER BY seq").fetchall()
        assert rows == [(1, letter_id(a), a), (2, letter_id(b"not json"), b"not json")]
        assert st.read(BOX).letters[0].raw == a
    finally:
        st.close()


# -- config ---------------------------------------------------------------------


def test_init_with_a_store_keeps_the_ledgers_in_the_database(tmp_path: Path, url: str) -> None:
    home = tmp_path / "h" / ".dovecote"
    got = cli_json(tmp_path, "init", "--store", url, "--json", home=home)
    assert got["created"] and f'store = "{url}"' in (home / "config.toml").read_text()
    dc = api.open_home(home)
    assert isinstance(dc.store, PostgresStore)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    sent = dc.send(Message(recipient="ent_a", sender="ent_b", subject="hello", body="hi"))
    assert not (home / "boxes").exists(), "the ledgers moved; the roster stays in the home"
    cold = api.open_home(home)
    assert builtins(cold.inbox(Inbox(entity_id="ent_a")))["items"][0]["id"] == sent.id


def test_doctor_on_postgres_names_the_database_not_a_spool_file(tmp_path: Path, url: str) -> None:
    home = tmp_path / "h" / ".dovecote"
    cli_json(tmp_path, "init", "--store", url, "--json", home=home)
    got = cli_json(tmp_path, "doctor", "--json", home=home)
    assert got["mailbox"]["available"], got
    assert got["mailbox"]["spool_path"] == f"{shown(url)}#spool"
    assert not (home / "spool.jsonl").exists()


@pytest.mark.parametrize("bad", ["postgresql://me:secret@127.0.0.1/test", "postgresql://127.0.0.1/test?password=x"])
def test_a_store_url_with_a_password_is_refused_and_no_home_is_made(tmp_path: Path, bad: str) -> None:
    home = tmp_path / "h" / ".dovecote"
    r = run_cli(tmp_path, "init", "--store", bad, home=home)
    assert r.returncode == 2 and b"password_in_config" in r.stderr
    assert b"secret" not in r.stderr and not (home / "config.toml").exists()


def test_a_config_with_a_password_in_its_store_is_refused(tmp_path: Path) -> None:
    dc = new_home(tmp_path)
    cfg = dc.layout.config
    cfg.write_text('store = "postgresql://u:pw@127.0.0.1/test"\n' + cfg.read_text())
    with pytest.raises(Refusal) as e:
        api.open_home(dc.layout.root)
    assert e.value.reason == "password_in_config"


def test_init_with_a_store_migrates_its_database_so_the_next_command_works(tmp_path: Path) -> None:
    with schema(migrated=False) as u:
        home = tmp_path / "h" / ".dovecote"
        assert cli_json(tmp_path, "init", "--store", u, "--json", home=home)["created"]
        assert cli_json(tmp_path, "sweep", "--json", home=home)["total"] == 0
        assert cli_json(tmp_path, "db", "migrate", "--json", home=home)["applied"] == []
        release(u)


def test_init_with_a_database_it_cannot_migrate_refuses_naming_the_command_and_makes_no_home(
    tmp_path: Path,
) -> None:
    home = tmp_path / "h" / ".dovecote"
    nowhere = "postgresql://127.0.0.1:1/test"  # no server listens on port 1
    r = run_cli(tmp_path, "init", "--store", nowhere, home=home)
    assert r.returncode == 2, r.stderr
    assert b"schema_unmigrated" in r.stderr and f"dovecote db migrate --url {nowhere}".encode() in r.stderr
    assert b"Traceback" not in r.stderr and not (home / "config.toml").exists()


def test_db_migrate_reads_the_home_s_store(tmp_path: Path) -> None:
    with schema(migrated=False) as u:
        home = tmp_path / "h" / ".dovecote"
        api.init(home)  # a home pointed at the database by hand: init would have migrated it
        cfg = home / "config.toml"
        cfg.write_text(f'store = "{u}"\n' + cfg.read_text())
        r = run_cli(tmp_path, "sweep", home=home)
        assert r.returncode == 2 and b"schema_unmigrated" in r.stderr and b"dovecote db migrate" in r.stderr
        first = cli_json(tmp_path, "db", "migrate", "--json", home=home)
        assert first["applied"] == [v for v, _ in store_pgschema.MIGRATIONS] and "password" not in str(first)
        assert cli_json(tmp_path, "db", "migrate", "--json", home=home)["applied"] == []
        assert cli_json(tmp_path, "sweep", "--json", home=home)["total"] == 0
        release(u)


# -- copy, and the same answers from both stores ------------------------------------


def _answers(dc: Dovecote) -> dict[str, bytes]:
    """What a user reads, as bytes: sweep, every inbox, trackers, cases, a search."""
    out = {
        "sweep": orjson.dumps(dc.sweep(Sweep(distribute=False)).to_dict()),
        "trackers": orjson.dumps(builtins(dc.trackers(Trackers(), now=NOW))),
        "cases": orjson.dumps(builtins(dc.cases(Cases()))),
        "search": orjson.dumps(builtins(dc.search(Search(query="review"), now=NOW))),
    }
    for e in dc.entities():
        out[f"inbox {e.id}"] = orjson.dumps(builtins(dc.inbox(Inbox(entity_id=e.id, current_tic=107), now=NOW)))
    return out


def test_a_copied_home_answers_byte_for_byte_as_its_files_do(tmp_path: Path, url: str) -> None:
    home = build_demo(tmp_path / "demo")
    files = Dovecote(home, clock=lambda: NOW)
    before = _answers(files)
    copied = builtins(api.copy_store(home, to=url))
    assert copied["identical"] and copied["copied"] == copied["letters"] > 20
    db = PostgresStore(url)
    try:
        on_db = _answers(Dovecote(home, clock=lambda: NOW, store=db))
    finally:
        db.close()
    assert on_db == before
    assert builtins(api.copy_store(home, to=url))["copied"] == 0, "a second copy appends nothing"


def test_copy_resumes_after_an_interruption_and_back_again(tmp_path: Path, url: str) -> None:
    dc = new_home(tmp_path)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    lines = [line(what=f"w{i}") for i in range(30)]
    FileStore(dc.layout, dc.roster).append(BOX, lines)
    partial = PostgresStore(url, dc.roster)
    partial.append(BOX, lines[:12])  # a copy killed after its first chunk
    partial.close()
    check = builtins(api.copy_store(dc.layout.root, to=url, write=False))
    assert not check["identical"] and [b["missing"] for b in check["boxes"] if b["box"] == str(BOX)] == [18]
    got = builtins(api.copy_store(dc.layout.root, to=url))
    assert got["identical"] and got["copied"] == 18
    other = new_home(tmp_path / "other")
    other.add_entity(EntityAdd(entity_id="ent_a"))
    back = cli_json(tmp_path, "copy", "--from", url, "--json", home=other.layout.root)
    assert back["identical"] and back["copied"] == 30
    assert FileStore(other.layout, other.roster).path(BOX).read_bytes() == b"".join(x + b"\n" for x in lines)


def test_copy_names_a_difference_and_exits_1(tmp_path: Path, url: str) -> None:
    dc = new_home(tmp_path)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    db = PostgresStore(url, dc.roster)
    db.append(BOX, [line(what="only in the database")])
    db.close()
    r = run_cli(tmp_path, "copy", "--to", url, "--verify-only", home=dc.layout.root)
    assert r.returncode == 1 and b"entity:ent_a: 0 missing, 1 extra" in r.stdout


# -- LISTEN/NOTIFY ------------------------------------------------------------------


def test_an_append_elsewhere_moves_the_stamp_by_notification(url: str) -> None:
    here, there = PostgresStore(url), PostgresStore(url)
    try:
        before = here.stamp(BOX)
        assert here._listener().live, "the stamp comes from the listener, not a query"
        there.append(BOX, [line(what="from another host")])
        deadline = time.monotonic() + 5
        while here.stamp(BOX) == before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert here.stamp(BOX) != before
        moved = here.stamp(BOX)
        there.append(BOX, [line(what="from another host")])  # a duplicate adds no row: no notice
        with psycopg.connect(url) as conn:
            conn.execute("SELECT pg_notify('dovecote', 'other_schema:' || %s)", (str(BOX),))
        time.sleep(0.3)
        assert here.stamp(BOX) == moved, "neither a replay nor another schema's box moves it"
    finally:
        here.close()
        there.close()


def test_a_wait_process_on_postgres_is_woken_by_a_send_from_another_process(tmp_path: Path, url: str) -> None:
    home = tmp_path / "h" / ".dovecote"
    api.init(home, store=url)
    dc = api.open_home(home)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    waiter = subprocess.Popen(
        [str(DOVECOTE_BIN), "wait", "ent_a", "--after", "0", "--timeout", "30", "--json"],
        env=cli_env(tmp_path, home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        time.sleep(2.0)  # let it start listening, also on a loaded machine (--after 0: an early send counts too)
        sent = dc.send(Message(recipient="ent_a", sender="ent_b", subject="wake up", body="hi"))
        at = time.monotonic()
        out, err = waiter.communicate(timeout=30)
        woke = time.monotonic() - at
    finally:
        waiter.kill()
        waiter.wait()
    assert waiter.returncode == 0, err
    assert [i["id"] for i in orjson.loads(out)["items"]] == [sent.id]
    assert woke < 5.0, woke  # woken by the send's notice, far inside the 30 s timeout (a loaded machine: seconds)


def test_every_pooled_session_ended_at_once_is_replaced_on_the_next_reads(url: str) -> None:
    """A restart ends every session of a pool at once: the next checkouts must hand out live ones,
    not a session whose goodbye is waiting on its socket (read retries once, so two dead ones in a
    row would fail it: the restart stress test found that)."""
    name = f"dovecote_all_{secrets.token_hex(4)}"
    st = PostgresStore(f"{url}&application_name={name}", pool_size=3)
    try:
        st.append(BOX, [line(what="before")])
        ready, go = threading.Barrier(4), threading.Event()  # three holders and this thread

        def hold() -> None:  # three threads at once: three sessions in the pool
            with st._session():
                ready.wait(10)
                go.wait(10)

        threads = [threading.Thread(target=hold) for _ in range(3)]
        for t in threads:
            t.start()
        ready.wait(10)
        go.set()
        for t in threads:
            t.join(10)
        with psycopg.connect(url, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", (name,)
            ).fetchall()
            assert len(killed) >= 3, killed
            deadline = time.monotonic() + 10
            while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                                (name,)).fetchone() != (0,) and time.monotonic() < deadline:
                time.sleep(0.05)
        for n in range(3):
            assert st.read(BOX).letters[0].raw == line(what="before"), n
        assert st.append(BOX, [line(what="after")])[0][1]
    finally:
        st.close()


def test_a_store_whose_connections_are_killed_reconnects_and_goes_on(url: str) -> None:
    """What a server restart does to a client (its sessions end), done to this store's own sessions only."""
    name = f"dovecote_kill_{secrets.token_hex(4)}"
    st, other = PostgresStore(f"{url}&application_name={name}", pool_size=1), PostgresStore(url)
    try:
        st.append(BOX, [line(what="before")])
        before = st.stamp(BOX)
        with psycopg.connect(url, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", (name,)
            ).fetchall()
        assert len(killed) == 2, "the pool's connection and the listener's"
        assert st.append(BOX, [line(what="after")])[0][1], "the pool replaced the dead connection"
        assert [x.raw for x in other.read(BOX).letters] == [line(what="before"), line(what="after")]
        deadline = time.monotonic() + 5
        while st.stamp(BOX) == before and time.monotonic() < deadline:
            time.sleep(0.02)
        moved = st.stamp(BOX)
        other.append(BOX, [line(what="heard after the reconnect")])
        while st.stamp(BOX) == moved and time.monotonic() < deadline:
            time.sleep(0.02)
        assert st.stamp(BOX) != moved, "the listener is back and hears appends again"
    finally:
        st.close()
        other.close()


def test_every_handle_thread_of_a_server_holds_a_connection_at_once(url: str) -> None:
    """A face's handle workers (REST's, MCP's: ``store.CALLS_AT_ONCE`` each) never queue for one of
    the store's pooled connections: threads waiting for one cost a third of the sends (bench/README.md)."""
    from dovecote.http import runner
    from dovecote.mcp import server

    assert runner.WORKERS == server.WORKERS
    st = PostgresStore(url)
    try:
        inside = threading.Barrier(runner.WORKERS, timeout=10)
        broken: list[BaseException] = []

        def hold() -> None:
            try:
                with st._session():
                    inside.wait()  # every worker inside a session at the same moment
            except BaseException as e:
                broken.append(e)

        threads = [threading.Thread(target=hold) for _ in range(runner.WORKERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert broken == []
    finally:
        st.close()

"""``organize``: report inbox clutter with proposals; ``--apply`` only groups, never deletes."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path

import orjson
import pytest

from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote
from dovecote.model.results import builtins
from dovecote.ops.mail.inbox import view_dir
from dovecote.ops.tree import organize as organize_mod
from dovecote.verbs import Inbox, Message, Organize
from helpers import run_cli, snapshot
from searchhelpers import finish, mail_home, put_message, tree

RESULT_KEYS = ["entity", "view", "tic", "loose", "expired", "duplicate_threads", "large_files", "applied"]
MIB = 1024 * 1024


def inbound(dc: Dovecote, ent: str = "ent_a") -> Path:
    d = view_dir(dc, ent) / "inbound"
    d.mkdir(parents=True, exist_ok=True)
    return d


def drop(dc: Dovecote) -> Path:
    """A view inbound/ with one drop of every category, a folder, a symlink, and non-loose entries."""
    d = inbound(dc)
    (d / "notes.md").write_text("meeting notes\n")
    (d / "Scan.PNG").write_bytes(b"\x89PNG fake")
    (d / "numbers.csv").write_text("a,b\n1,2\n")
    (d / "blob.bin").write_bytes(os.urandom(64))
    (d / "no_extension").write_text("?")
    (d / "bundle").mkdir()
    (d / "bundle" / "inner.txt").write_text("inside\n")
    (d / "bundle" / "deeper").mkdir()
    (d / "bundle" / "deeper" / "x.json").write_text("{}")
    target = dc.layout.root.parent / "outside.txt"
    target.write_text("the link's target stays put\n")
    (d / "link.txt").symlink_to(target)
    (d / "WAIT_0123456789ab").mkdir()  # a view-owned name: not loose
    (d / ".hidden").write_text("dot files are not loose")
    return d


def contents(root: Path) -> Counter[bytes]:
    """The multiset of file contents (and link targets) under ``root``."""
    return Counter(hashlib.sha256(v).digest() for v in tree(root).values())


def test_the_report_shape_and_loose_files_by_category(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    drop(dc)
    out = builtins(dc.organize(Organize(entity_id="ent_a")))
    assert list(out) == RESULT_KEYS
    assert out["entity"] == "ent_a" and out["view"] == str(view_dir(dc, "ent_a")) and out["applied"] == []
    got = {f["path"]: (f["kind"], f["category"]) for f in out["loose"]}
    assert got == {
        "inbound/Scan.PNG": ("file", "images"),
        "inbound/blob.bin": ("file", "other"),
        "inbound/bundle": ("dir", "other"),
        "inbound/link.txt": ("symlink", "docs"),
        "inbound/no_extension": ("file", "other"),
        "inbound/notes.md": ("file", "docs"),
        "inbound/numbers.csv": ("file", "data"),
    }
    bundle = next(f for f in out["loose"] if f["path"] == "inbound/bundle")
    assert bundle["size"] == len("inside\n") + 2
    assert all(f["proposed"] == f"group into inbound/REF_{f['category']}/ (organize --apply)" for f in out["loose"])
    assert orjson.loads(orjson.dumps(out)) == out


@pytest.mark.parametrize(
    ("name", "category"),
    [("a.md", "docs"), ("a.PDF", "docs"), ("a.jpeg", "images"), ("a.svg", "images"), ("a.jsonl", "data"),
     ("a.yaml", "data"), ("a.tar.gz", "other"), ("Makefile", "other"), (".profile", "other")],
)
def test_category_by_extension(tmp_path: Path, name: str, category: str) -> None:
    p = tmp_path / name
    p.write_text("x")
    assert organize_mod.category_of(p) == category


def test_report_alone_changes_nothing(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    drop(dc)
    before = snapshot(dc.layout.root)
    dc.organize(Organize(entity_id="ent_a"))
    assert snapshot(dc.layout.root) == before


def test_apply_groups_and_never_deletes_or_touches_the_ledger(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    put_message(dc, "ent_a", "an item")
    d = drop(dc)
    view = view_dir(dc, "ent_a")
    files_before = contents(view)
    ledgers_before = snapshot(dc.layout.boxes)
    link_target = (d / "link.txt").readlink()
    out = builtins(dc.organize(Organize(entity_id="ent_a", apply=True)))
    assert sorted((a["from"], a["to"]) for a in out["applied"]) == [
        ("inbound/Scan.PNG", "inbound/REF_images/Scan.PNG"),
        ("inbound/blob.bin", "inbound/REF_other/blob.bin"),
        ("inbound/bundle", "inbound/REF_other/bundle"),
        ("inbound/link.txt", "inbound/REF_docs/link.txt"),
        ("inbound/no_extension", "inbound/REF_other/no_extension"),
        ("inbound/notes.md", "inbound/REF_docs/notes.md"),
        ("inbound/numbers.csv", "inbound/REF_data/numbers.csv"),
    ]
    assert contents(view) == files_before  # every byte still there, nothing new
    assert snapshot(dc.layout.boxes) == ledgers_before
    assert (d / "REF_other" / "bundle" / "deeper" / "x.json").read_text() == "{}"
    assert (d / "REF_docs" / "link.txt").readlink() == link_target
    assert (d / "WAIT_0123456789ab").is_dir() and (d / ".hidden").exists()
    assert sorted(p.name for p in d.iterdir()) == [
        ".hidden", "REF_data", "REF_docs", "REF_images", "REF_other", "WAIT_0123456789ab",
    ]


def test_apply_twice_moves_nothing_more_and_the_inbox_sees_no_loose_files(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    drop(dc)
    assert builtins(dc.inbox(Inbox(entity_id="ent_a")))["counts"]["loose"] == 7
    dc.organize(Organize(entity_id="ent_a", apply=True))
    view = view_dir(dc, "ent_a")
    settled = tree(view)
    again = builtins(dc.organize(Organize(entity_id="ent_a", apply=True)))
    assert again["loose"] == [] and again["applied"] == []
    assert tree(view) == settled
    assert builtins(dc.inbox(Inbox(entity_id="ent_a")))["counts"]["loose"] == 0


def test_a_name_clash_gets_a_numeric_suffix_and_overwrites_nothing(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    d = inbound(dc)
    (d / "REF_docs").mkdir()
    (d / "REF_docs" / "notes.md").write_text("the earlier notes\n")
    (d / "REF_docs" / "notes-2.md").write_text("the second earlier notes\n")
    (d / "notes.md").write_text("the new notes\n")
    (d / "REF_other").mkdir()
    (d / "REF_other" / "bundle").mkdir()
    (d / "REF_other" / "bundle" / "old.txt").write_text("old bundle\n")
    (d / "bundle").mkdir()
    (d / "bundle" / "new.txt").write_text("new bundle\n")
    out = builtins(dc.organize(Organize(entity_id="ent_a", apply=True)))
    assert sorted((a["from"], a["to"]) for a in out["applied"]) == [
        ("inbound/bundle", "inbound/REF_other/bundle-2"),
        ("inbound/notes.md", "inbound/REF_docs/notes-3.md"),
    ]
    assert (d / "REF_docs" / "notes.md").read_text() == "the earlier notes\n"
    assert (d / "REF_docs" / "notes-2.md").read_text() == "the second earlier notes\n"
    assert (d / "REF_docs" / "notes-3.md").read_text() == "the new notes\n"
    assert (d / "REF_other" / "bundle" / "old.txt").read_text() == "old bundle\n"
    assert (d / "REF_other" / "bundle-2" / "new.txt").read_text() == "new bundle\n"


def test_an_empty_folder_of_the_same_name_is_not_replaced(tmp_path: Path) -> None:
    """rename() would silently replace an empty folder; the reservation must not."""
    dc = mail_home(tmp_path)
    d = inbound(dc)
    (d / "REF_other" / "bundle").mkdir(parents=True)
    (d / "bundle").mkdir()
    (d / "bundle" / "f").write_text("f")
    out = builtins(dc.organize(Organize(entity_id="ent_a", apply=True)))
    assert out["applied"] == [{"from": "inbound/bundle", "to": "inbound/REF_other/bundle-2"}]
    assert (d / "REF_other" / "bundle").is_dir() and list((d / "REF_other" / "bundle").iterdir()) == []


def test_a_relative_link_is_reported_but_left_in_place(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    d = inbound(dc)
    (d / "REF_docs").mkdir()
    (d / "REF_docs" / "kept.md").write_text("kept\n")
    (d / "rel.md").symlink_to("REF_docs/kept.md")
    out = builtins(dc.organize(Organize(entity_id="ent_a", apply=True)))
    assert [f["path"] for f in out["loose"]] == ["inbound/rel.md"]
    assert out["loose"][0]["proposed"].startswith("left in place")
    assert out["applied"] == [] and (d / "rel.md").read_text() == "kept\n"


def test_no_view_means_nothing_to_report_or_move(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    out = builtins(dc.organize(Organize(entity_id="ent_a", apply=True)))
    assert out["loose"] == [] and out["applied"] == [] and not view_dir(dc, "ent_a").exists()


def test_expired_items_at_the_current_tic(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    gone = dc.send(Message(recipient="ent_a", sender="ent_b", subject="expired", expires_at_tic=5, current_tic=1)).id
    dc.send(Message(recipient="ent_a", sender="ent_b", subject="not yet", expires_at_tic=20, current_tic=1))
    dc.send(Message(recipient="ent_a", sender="ent_b", subject="no expiry", current_tic=1))
    closed = dc.send(Message(
        recipient="ent_a", sender="ent_b", subject="expired but done", expires_at_tic=5, current_tic=1
    )).id
    finish(dc, "ent_a", closed, current=2)
    out = builtins(dc.organize(Organize(entity_id="ent_a", current_tic=10)))
    assert out["tic"] == 10
    assert [(e["id"], e["subject"], e["state"], e["expires_at_tic"]) for e in out["expired"]] == [
        (gone, "expired", "WAIT", 5)
    ]
    assert "nothing is moved" in out["expired"][0]["proposed"]
    assert builtins(dc.organize(Organize(entity_id="ent_a", current_tic=5)))["expired"] == []  # at its tic, not past it
    assert builtins(dc.organize(Organize(entity_id="ent_a")))["expired"] == []  # no tic: nothing can be past its tic


def test_duplicate_threads_among_open_items(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    first = dc.send(Message(recipient="ent_a", sender="ent_b", subject="plan v1", thread_id="thread_plan")).id
    second = dc.send(Message(recipient="ent_a", sender="ent_b", subject="plan v2", thread_id="thread_plan")).id
    third = dc.send(Message(recipient="ent_a", sender="ent_b", subject="plan v3", thread_id="thread_plan")).id
    dc.send(Message(recipient="ent_a", sender="ent_b", subject="alone", thread_id="thread_single"))
    finish(dc, "ent_a", second)
    put_message(dc, "ent_a", "twin a", thread_id="thread_twins", ts="2026-07-01T00:00:00Z")
    put_message(dc, "ent_a", "twin b", thread_id="thread_twins", ts="2026-07-02T00:00:00Z")
    out = builtins(dc.organize(Organize(entity_id="ent_a")))
    assert [(t["thread_id"], t["count"], t["subjects"]) for t in out["duplicate_threads"]] == [
        ("thread_plan", 2, ["plan v1", "plan v3"]),
        ("thread_twins", 2, ["twin a", "twin b"]),
    ]
    plan = out["duplicate_threads"][0]
    assert plan["ids"] == [first, third]
    assert plan["proposed"] == (
        f"consolidate: answer on the thread from the newest ({third}), then complete or nack the other 1"
    )


def test_large_loose_files_and_large_artifacts_of_open_items(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    d = inbound(dc)
    with open(d / "huge.iso", "wb") as f:
        f.truncate(10 * MIB + 1)  # sparse: cheap to make
    with open(d / "edge.iso", "wb") as f:
        f.truncate(10 * MIB)  # exactly 10 MiB is not over it
    (d / "pack").mkdir()
    with open(d / "pack" / "inside.bin", "wb") as f:
        f.truncate(11 * MIB)
    big = tmp_path / "dataset.parquet"
    big.write_bytes(b"\x01" * (10 * MIB + 10))
    small = tmp_path / "small.txt"
    small.write_text("tiny")
    open_item = dc.send(Message(
        recipient="ent_a", sender="ent_b", subject="big one", artifact_paths=[str(p) for p in [big, small]]
    )).id
    done_item = dc.send(Message(
        recipient="ent_a", sender="ent_b", subject="big but done", artifact_paths=[str(p) for p in [big]]
    )).id
    finish(dc, "ent_a", done_item)
    out = builtins(dc.organize(Organize(entity_id="ent_a")))
    large = [(x["where"], x.get("path") or x["name"], x["size"]) for x in out["large_files"]]
    assert large == [
        ("loose", "inbound/huge.iso", 10 * MIB + 1),
        ("loose", "inbound/pack/inside.bin", 11 * MIB),
        ("artifact", "dataset.parquet", 10 * MIB + 10),
    ]
    art = out["large_files"][2]
    assert art["item"] == open_item and art["ref"].startswith("sha256:")


def test_unknown_entity_is_refused(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    with pytest.raises(Refusal) as e:
        dc.organize(Organize(entity_id="ent_nobody"))
    assert e.value.reason == "unknown_entity"


def test_reserve_takes_the_first_free_name(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1")
    (tmp_path / "a-2.txt").write_text("2")
    got = organize_mod._reserve(tmp_path, "a.txt", is_dir=False)
    assert got.name == "a-3.txt" and got.read_bytes() == b""
    assert (tmp_path / "a.txt").read_text() == "1" and (tmp_path / "a-2.txt").read_text() == "2"
    assert organize_mod._reserve(tmp_path, "d", is_dir=True).name == "d"
    assert organize_mod._reserve(tmp_path, "d", is_dir=True).name == "d-2"


# -- the command line ----------------------------------------------------------------------


def test_cli_organize_report_and_apply(tmp_path: Path) -> None:
    dc = mail_home(tmp_path)
    d = inbound(dc)
    (d / "notes.md").write_text("n\n")
    home = dc.layout.root
    r = run_cli(tmp_path, "organize", "ent_a", "--json", home=home)
    assert r.returncode == 0, r.stderr
    out = orjson.loads(r.stdout)
    assert [f["path"] for f in out["loose"]] == ["inbound/notes.md"] and out["applied"] == []
    r = run_cli(tmp_path, "organize", "ent_a", home=home)
    assert r.returncode == 0
    assert r.stdout.decode().splitlines()[:3] == [
        "ORGANIZE: ent_a — no tic",
        "  Loose files:       1",
        "    inbound/notes.md (file, 2 bytes) -> group into inbound/REF_docs/ (organize --apply)",
    ]
    r = run_cli(tmp_path, "organize", "ent_a", "--apply", home=home)
    assert r.returncode == 0 and "inbound/notes.md -> inbound/REF_docs/notes.md" in r.stdout.decode()
    assert (d / "REF_docs" / "notes.md").read_text() == "n\n"


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("organize", "ent_nobody", "--apply"), "unknown_entity"),
        (("organize", "../ent_a", "--apply"), "invalid_name"),
    ],
)
def test_cli_refusals_exit_2_and_move_nothing(tmp_path: Path, args: tuple[str, ...], reason: str) -> None:
    dc = mail_home(tmp_path)
    (inbound(dc) / "notes.md").write_text("n\n")
    before = snapshot(dc.layout.root)
    r = run_cli(tmp_path, *args, home=dc.layout.root)
    assert r.returncode == 2 and r.stderr.decode().startswith(f"Error: {reason}:") and r.stdout == b""
    assert snapshot(dc.layout.root) == before

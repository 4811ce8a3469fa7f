"""Odd cache paths (issue 6, item 17): a cache is never written through a symlink
out of the home, and a ``cache`` that is a file or a symlink never crashes a read.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dovecote.errors import StoreError
from dovecote.roster.home import Layout
from dovecote.verbs import EntityAdd, Message
from helpers import new_home, run_cli


def inbox_home(tmp: Path) -> Path:
    dc = new_home(tmp)
    dc.add_entity(EntityAdd(entity_id="ent_a"))
    dc.add_entity(EntityAdd(entity_id="ent_b"))
    dc.send(Message(sender="ent_a", recipient="ent_b", subject="hello", current_tic=1))
    return dc.layout.root


def inbox(tmp: Path, home: Path) -> bytes:
    r = run_cli(tmp, "inbox", "ent_b", "--current-tic", "2", home=home, process=True)  # new processes, as hooks call it
    assert r.returncode == 0, r.stderr.decode()
    assert b"Traceback" not in r.stderr
    return r.stdout


def tree(root: Path) -> dict[str, bytes | str]:
    return {
        str(p.relative_to(root)): (os.readlink(p) if p.is_symlink() else p.read_bytes())
        for p in sorted(root.rglob("*")) if p.is_symlink() or p.is_file()
    }


def test_the_cached_rendering_is_the_fresh_one(tmp_path: Path) -> None:
    home = inbox_home(tmp_path)
    first = inbox(tmp_path, home)
    assert list((home / "cache" / "cli").iterdir())  # it was cached
    assert inbox(tmp_path, home) == first


@pytest.mark.parametrize("level", ["cache", "cache/cli"])
def test_a_symlinked_cache_folder_is_never_written_through(tmp_path: Path, level: str) -> None:
    home = inbox_home(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(home / level, ignore_errors=True)  # the caches building the home wrote (the roster's)
    (home / level).parent.mkdir(parents=True, exist_ok=True)
    (home / level).symlink_to(outside, target_is_directory=True)
    first = inbox(tmp_path, home)
    assert inbox(tmp_path, home) == first
    assert list(outside.iterdir()) == []  # nothing written into the target
    assert (home / level).is_symlink()  # and the link itself left alone


@pytest.mark.parametrize("level", ["cache", "cache/cli"])
def test_a_cache_folder_that_is_a_file_is_left_alone(tmp_path: Path, level: str) -> None:
    home = inbox_home(tmp_path)
    shutil.rmtree(home / level, ignore_errors=True)  # the caches building the home wrote (the roster's)
    (home / level).parent.mkdir(parents=True, exist_ok=True)
    (home / level).write_bytes(b"mine")
    first = inbox(tmp_path, home)
    assert inbox(tmp_path, home) == first
    assert (home / level).read_bytes() == b"mine"


def test_a_symlinked_cache_entry_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    home = inbox_home(tmp_path)
    first = inbox(tmp_path, home)
    (entry,) = (home / "cache" / "cli").iterdir()
    victim = tmp_path / "victim"
    victim.write_bytes(entry.read_bytes())  # a valid entry, planted outside the home
    entry.unlink()
    entry.symlink_to(victim)
    before = victim.read_bytes()
    (home / "boxes" / "entity" / "ent_b" / "letters.jsonl").touch()  # stale it: the next call re-renders
    assert inbox(tmp_path, home) == first
    assert victim.read_bytes() == before  # the rewrite replaced the link, not its target
    assert not entry.is_symlink()


def test_cache_dir_refuses_what_is_in_the_way(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    assert layout.cache_dir("cli") == tmp_path / "cache" / "cli"
    assert (tmp_path / "cache" / "cli").is_dir()
    (tmp_path / "cache" / "x").write_bytes(b"")
    with pytest.raises(StoreError, match="not a directory"):
        layout.cache_dir("x")
    (tmp_path / "cache" / "y").symlink_to(tmp_path)
    with pytest.raises(StoreError, match="symlink"):
        layout.cache_dir("y", "z")
    assert not (tmp_path / "z").exists()
    with pytest.raises(FileNotFoundError):
        layout.cache_dir("missing", create=False)
    assert not (tmp_path / "cache" / "missing").exists()


def test_search_refuses_a_symlinked_cache_and_verify_drops_only_the_link(tmp_path: Path) -> None:
    home = inbox_home(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_bytes(b"mine")
    shutil.rmtree(home / "cache", ignore_errors=True)
    (home / "cache").symlink_to(outside, target_is_directory=True)
    r = run_cli(tmp_path, "search", "hello", home=home)
    assert r.returncode == 1 and b"io_error" in r.stderr and b"Traceback" not in r.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]  # no index written into the target
    r = run_cli(tmp_path, "verify", home=home)
    assert r.returncode == 0, r.stderr.decode()
    assert not (home / "cache").is_symlink()  # the link is gone, rebuilt as a real cache
    assert (outside / "keep.txt").read_bytes() == b"mine"  # and its target untouched
    r = run_cli(tmp_path, "search", "hello", home=home)
    assert r.returncode == 0 and b"hello" in r.stdout


def test_an_entity_box_path_is_the_one_composed_and_the_remembered_ones_stay_bounded(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    for i in range(5000):  # more names than it keeps: each answer is still the composed path
        assert layout.entity_box(f"ent_{i}") == tmp_path / "boxes" / "entity" / f"ent_{i}" / "letters.jsonl"
    assert len(layout._entity_boxes) <= 4096
    assert layout.entity_box("ent_1") == tmp_path / "boxes" / "entity" / "ent_1" / "letters.jsonl"

"""Fuzz: envelopes from outside (intake files, /inbox trees in three forms, vNext mailbox directories).

Every envelope dovecote reads was written by another tool or by hand. Whatever a file holds (a valid envelope
with fields dropped or set to hostile values, a nested field flattened, bytes that are not JSON), intake, the
/inbox tree import and the vNext import answer or refuse with a keyword; each intake file ends in exactly one
of pending/, processed/ or quarantine/ with a keyword for a quarantine; the source trees are never changed;
what was stored only grows; and a valid envelope beside the hostile ones is delivered and read back exactly.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import strategies as st

from deliveryhelpers import box_letters, delivery_home, drop, envelope
from dovecote.errors import REASONS
from dovecote.handle.api import Dovecote
from dovecote.model.letters import canonical_line
from dovecote.model.results import builtins
from dovecote.model.vnext_envelope import Rejected, from_envelope
from dovecote.ops.delivery.intake import envelope_files
from dovecote.verbs import ImportInboxTree, ImportVnext, Inbox
from fuzzhelpers import DEPTHS, TEXT, VALUE, assert_only_grew, dumps, fuzz, mutated, refused_or_done
from helpers import open_home, snapshot
from mailhelpers import ENTITY, mail_home, skill_envelope
from vnext_fixture import busy, home_with_agents

VNEXT = envelope(envelope_id="env_fuzz", subject="fuzzed")
SKILL = skill_envelope("1a2b3c4d", "fuzzed skill", recipient="tariq", sender="aya")
#: What a file in a folder of envelopes may hold.
CONTENTS = st.one_of(
    mutated(VNEXT).map(dumps),
    mutated(SKILL).map(dumps),
    VALUE.map(dumps),
    st.binary(max_size=80),
    st.sampled_from([b"", b"{", b'{"envelope_id":"\xff"}', b"[" * 5000, b"\xef\xbb\xbf{}", b"null"]),
)
FILES = st.lists(CONTENTS, min_size=1, max_size=3)


def _copy(base: Path, to: Path) -> Path:
    if to.exists():
        shutil.rmtree(to)
    shutil.copytree(base, to, symlinks=True)
    return to


@pytest.fixture(scope="module")
def delivery_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("fuzzintake")
    delivery_home(tmp)
    return tmp


@pytest.mark.parametrize("depth", DEPTHS)
def test_intake_delivers_the_valid_envelope_and_files_every_other_once(delivery_base: Path, tmp_path: Path,
                                                                      depth: str) -> None:
    def check(files: list[bytes]) -> None:
        dc = open_home(_copy(delivery_base, tmp_path / "h") / "owner" / ".dovecote")
        for n, data in enumerate(files):
            drop(dc, data, name=f"env_hostile_{n}.json")
        good = envelope(envelope_id="env_good", subject="the good one \u202e", body="body\n\x1b[0m")
        drop(dc, good)
        before = snapshot(dc.layout.root)
        run = refused_or_done(dc.intake)
        assert not isinstance(run, Exception)
        assert_only_grew(before, dc.layout.root, moving=("intake/",))
        folder = dc.layout.root / "intake"
        placed = [n for which in ("pending", "processed", "quarantine") for n in envelope_files(folder, which)]
        assert sorted(placed) == sorted([*(f"env_hostile_{n}.json" for n in range(len(files))), "env_good.json"])
        assert all(q["reason"] in REASONS for q in run.quarantined)
        assert "env_good.json" in envelope_files(folder, "processed")
        (letter,) = [x for x in box_letters(dc, "tariq") if x.get("envelope_id") == "env_good"]
        assert (letter["subject"], letter["body"]) == (good["subject"], good["body"])

    fuzz(depth, "intake files", FILES, check)


@pytest.mark.parametrize("policy", ["", "x", 7, [1], ["ab"], True])
def test_an_ack_policy_that_is_no_object_reads_as_none_given_and_intake_goes_on(
    delivery_base: Path, tmp_path: Path, policy: object
) -> None:
    """Found by the deep fuzz: ``dict(policy)`` raised on a string or a number, so one such envelope
    stopped the whole intake pass with an internal error; it is delivered with vNext's default policy."""
    dc = open_home(_copy(delivery_base, tmp_path / "h") / "owner" / ".dovecote")
    drop(dc, envelope(envelope_id="env_odd", subject="odd policy", ack_policy=policy))
    drop(dc, envelope(envelope_id="env_next", subject="after it"))
    run = dc.intake()
    assert not run.quarantined
    got = {x.get("envelope_id"): x for x in box_letters(dc, "tariq")}
    assert {"env_odd", "env_next"} <= set(got)
    assert got["env_odd"]["ack_policy"]["ack_required"] is True


@pytest.mark.parametrize("depth", DEPTHS)
def test_an_envelope_object_becomes_letters_or_a_keyword(depth: str) -> None:
    def check(obj: Any) -> None:
        try:  # as intake and the import read a file (a value orjson cannot read is quarantined, tested above)
            obj = orjson.loads(dumps(obj))
        except orjson.JSONDecodeError:
            return
        out = from_envelope(obj, lambda e: e in {"aya", "tariq", "kimi"})
        if isinstance(out, Rejected):
            assert out.reason in REASONS and out.detail
        else:
            assert out and all(isinstance(x, dict) for x in out)
            for x in out:
                canonical_line(x)  # each letter can be written as a line

    fuzz(depth, "envelope objects", st.one_of(mutated(VNEXT), mutated(SKILL), VALUE), check)


# -- /inbox trees -----------------------------------------------------------------------------------------------

#: Entry names as the skill writes them, and names that try something.
NAMES = st.one_of(
    st.sampled_from(["WAIT_normal_directive_t105_1a2b3c4d.json", "ACTIVE_high_query_t101_5e6f7a8b.json",
                     "DEFER_low_notification_t100_9c0d1e2f.json", "DONE_x", "NACK_y.txt", "notes-tic-107.md",
                     "WAIT_t99999999999999999999_x.json", "ACTIVE_", "DEFER_.json", "x" * 200 + ".json",
                     "\u202eWAIT.json", "WAIT_\x1b[31m.md", "DONE_caf\u00e9.json", "DONE_cafe\u0301.json"]),
    TEXT.filter(lambda s: s and "/" not in s and "\x00" not in s and s not in (".", "..") and len(s.encode(
        "utf-8", "surrogateescape")) < 200).map(lambda s: s.encode("utf-8", "surrogatepass").decode(
        "utf-8", "replace")),
)
ENTRY = st.tuples(st.sampled_from(["inbound", "processing", "deferred", "archive"]), NAMES, CONTENTS,
                  st.booleans())


@pytest.fixture(scope="module")
def mail_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("fuzztree")
    mail_home(tmp)
    return tmp


def _tree(mbox: Path, entries: list[tuple[str, str, bytes, bool]]) -> None:
    """The entries (a flat file, or a directory holding ``envelope.json``) and one valid flat envelope."""
    for folder, name, data, as_dir in entries:
        target = mbox / folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            continue
        if as_dir:
            target.mkdir()
            (target / "envelope.json").write_bytes(data)
        else:
            target.write_bytes(data)
    good = skill_envelope("feedc0de", "adopt me", recipient=ENTITY)
    (mbox / "inbound").mkdir(parents=True, exist_ok=True)
    (mbox / "inbound" / "WAIT_normal_directive_t105_feedc0de.json").write_bytes(orjson.dumps(good))


@pytest.mark.parametrize("depth", DEPTHS)
def test_an_inbox_tree_import_never_changes_the_tree_and_adopts_the_valid_envelope(mail_base: Path, tmp_path: Path,
                                                                                   depth: str) -> None:
    def check(entries: list[tuple[str, str, bytes, bool]]) -> None:
        dc: Dovecote = open_home(_copy(mail_base, tmp_path / "h") / "owner" / ".dovecote")
        mbox = tmp_path / "mbox"
        if mbox.exists():
            shutil.rmtree(mbox)
        _tree(mbox, entries)
        tree, before = snapshot(mbox), snapshot(dc.layout.root)
        refused_or_done(lambda: dc.import_inbox_tree(ImportInboxTree(path=str(mbox), entity_id=ENTITY,
                                                                     current_tic=110)))
        assert snapshot(mbox) == tree
        assert_only_grew(before, dc.layout.root)
        subjects = [i["subject"] for i in builtins(dc.inbox(Inbox(entity_id=ENTITY, include_terminal=True)))["items"]]
        assert "adopt me" in subjects

    fuzz(depth, "inbox trees", st.lists(ENTRY, min_size=1, max_size=4), check)


# -- vNext mailbox directories ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def vnext_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("fuzzvnext")
    busy(tmp / "vnext")
    home_with_agents(tmp)
    return tmp


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_vnext_import_reads_any_directory_without_changing_it(vnext_base: Path, tmp_path: Path, depth: str) -> None:
    files = sorted(p.relative_to(vnext_base / "vnext") for p in (vnext_base / "vnext").rglob("*") if p.is_file())
    hostile = st.tuples(st.sampled_from(files), st.one_of(CONTENTS, st.builds(
        lambda rows: b"".join(r + b"\n" for r in rows), st.lists(CONTENTS.filter(lambda b: b"\n" not in b)))))

    def check(changes: list[tuple[Path, bytes]]) -> None:
        root = _copy(vnext_base, tmp_path / "v")
        for rel, data in changes:
            (root / "vnext" / rel).write_bytes(data)
        dc = open_home(root / "home" / "owner" / ".dovecote")
        source, before = snapshot(root / "vnext"), snapshot(dc.layout.root)
        for write in (False, True):
            refused_or_done(lambda write=write: dc.import_vnext(ImportVnext(path=str(root / "vnext"), write=write)))
        assert snapshot(root / "vnext") == source
        assert_only_grew(before, dc.layout.root)

    fuzz(depth, "vnext directories", st.lists(hostile, min_size=1, max_size=3), check)


def test_a_tracker_whose_ids_are_not_text_is_noted_not_a_crash(vnext_base: Path, tmp_path: Path) -> None:
    """Found by the fuzz: a tracker (or ack file) with ``"envelope_id": {}`` raised TypeError (unhashable)."""
    root = _copy(vnext_base, tmp_path / "v")
    tracker = sorted((root / "vnext" / "haiku" / "tracking").glob("*.json"))[0]
    tracker.write_bytes(orjson.dumps({**orjson.loads(tracker.read_bytes()), "envelope_id": {"$x": 1}}))
    ack = sorted((root / "vnext" / "agents").glob("*/acks/*.json"))[0]
    ack.write_bytes(orjson.dumps({**orjson.loads(ack.read_bytes()), "envelope_id": ["a"]}))
    dc = open_home(root / "home" / "owner" / ".dovecote")
    dry = dc.import_vnext(ImportVnext(path=str(root / "vnext"))).to_dict()
    assert any(n["path"].endswith(tracker.name) and n["reason"] == "invalid_field" for n in dry["notes"]), dry["notes"]

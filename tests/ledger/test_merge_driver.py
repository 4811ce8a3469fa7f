"""The git merge driver: boxes carried in repositories merge as a union by id.

Two agents on two clones append to the same box and merge. Without the driver
git sees two edits at the end of one file and stops with conflict markers, and
an agent resolving them by hand can drop a letter. With it, the merge must be
clean, every letter from both sides must survive exactly once, and even a
malformed line is carried over rather than silently lost.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.handle.api import Dovecote, init
from dovecote.ledger import append as ledger_append
from dovecote.ledger.jsonl import LedgerReader
from dovecote.model.addresses import Address
from dovecote.model.letters import canonical_line, letter_id
from dovecote.ops.admin.merge import merge_files, union
from dovecote.verbs import ProjectAdd

DOVECOTE = Path(sys.executable).parent / "dovecote"
MARKERS = (b"<<<<<<<", b"=======", b">>>>>>>")

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _letter(what: str, agent: str = "probe") -> bytes:
    return canonical_line({"ts": "2026-07-05T10:00:00Z", "agent": agent, "tool": "seek", "class": "bug", "what": what})


class Git:
    """A tiny git runner isolated from the user's config."""

    def __init__(self, tmp: Path) -> None:
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
            "HOME": str(tmp),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "agent",
            "GIT_AUTHOR_EMAIL": "agent@example.invalid",
            "GIT_COMMITTER_NAME": "agent",
            "GIT_COMMITTER_EMAIL": "agent@example.invalid",
        }

    def run(self, cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        p = subprocess.run(["git", *args], cwd=cwd, env=self.env, capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    def clone(self, origin: Path, dest: Path, driver: bool) -> Path:
        self.run(origin.parent, "clone", "-q", str(origin), str(dest))
        if driver:
            self.run(dest, "config", "merge.dovecote.name", "dovecote ledger union")
            self.run(dest, "config", "merge.dovecote.driver", f"{DOVECOTE} merge-driver %O %A %B")
        return dest

    def commit_all(self, repo: Path, message: str) -> None:
        self.run(repo, "add", "-A")
        self.run(repo, "commit", "-q", "-m", message)


def _ids(data: bytes) -> list[str]:
    return [letter_id(ln) for ln in data.split(b"\n") if ln.strip()]


@pytest.fixture
def git(tmp_path: Path) -> Git:
    return Git(tmp_path)


def _seeded_origin(git: Git, tmp_path: Path, box: str, base: list[bytes]) -> Path:
    """A bare origin holding one box ledger and the attribute that names the driver."""
    origin = tmp_path / "origin.git"
    git.run(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = git.clone(origin, tmp_path / "seed", driver=False)
    ledger_path = seed / box
    ledger_path.parent.mkdir(parents=True, exist_ok=True)
    ledger_path.write_bytes(b"".join(x + b"\n" for x in base))
    (ledger_path.parent / ".gitattributes").write_text("letters.jsonl merge=dovecote\n")
    git.commit_all(seed, "seed the box")
    git.run(seed, "push", "-q", "origin", "HEAD:main")
    return origin


def _diverge(git: Git, tmp_path: Path, origin: Path, box: str, driver: bool) -> tuple[Path, Path, bytes, bytes]:
    """Two clones append different letters (and one in common) to the box and commit."""
    b = git.clone(origin, tmp_path / "clone-b", driver)
    c = git.clone(origin, tmp_path / "clone-c", driver)
    common = _letter("seen by both agents", agent="both")
    ledger_append.append(LedgerReader(b / box), [_letter("b1", "agent-b"), common, _letter("b2", "agent-b")])
    with open(b / box, "ab") as f:  # a malformed line is data too: it must survive the merge
        f.write(b'{"what": "half a letter from b\n')
    ledger_append.append(LedgerReader(b / box), [_letter("b3", "agent-b")])
    ledger_append.append(LedgerReader(c / box), [_letter("c1", "agent-c"), _letter("c2", "agent-c"), common])
    git.commit_all(b, "agent b files letters")
    git.commit_all(c, "agent c files letters")
    git.run(b, "push", "-q", "origin", "HEAD:main")
    git.run(c, "fetch", "-q", "origin")
    return b, c, (b / box).read_bytes(), (c / box).read_bytes()


@pytest.mark.parametrize("box", ["letters.jsonl", ".dovecote/letters.jsonl"])
def test_git_merge_unions_two_clones(git: Git, tmp_path: Path, box: str) -> None:
    """Both agents' letters, once each, no markers, and git reports success."""
    assert DOVECOTE.exists(), f"console script not installed next to {sys.executable}"
    base = [_letter("base 1"), _letter("base 2")]
    origin = _seeded_origin(git, tmp_path, box, base)
    _, c, theirs, ours = _diverge(git, tmp_path, origin, box, driver=True)

    merge = git.run(c, "merge", "--no-edit", "origin/main", check=False)
    assert merge.returncode == 0, merge.stdout + merge.stderr
    assert git.run(c, "status", "--porcelain").stdout == ""

    merged = (c / box).read_bytes()
    assert not any(ln.startswith(m) for ln in merged.split(b"\n") for m in MARKERS)
    assert merged.endswith(b"\n")
    lines = [ln for ln in merged.split(b"\n") if ln]
    for side in (ours, theirs):
        for ln in side.split(b"\n"):
            if ln.strip():
                assert ln in lines, f"the merge dropped {ln!r}"
    ids = _ids(merged)
    assert len(ids) == len(set(ids)), "a letter appears twice after the merge"
    assert set(ids) == set(_ids(ours)) | set(_ids(theirs))

    r = LedgerReader(c / box)
    r.refresh()
    assert len(r.letters) == len(set(_ids(ours)) | set(_ids(theirs))) - 1  # all but the malformed line
    assert [d.kind for d in r.defects] == ["malformed"] and r.torn is None and r.duplicates == 0

    # The merge commit travels on: the other clone fast-forwards to the same union.
    git.run(c, "push", "-q", "origin", "HEAD:main")
    b = tmp_path / "clone-b"
    git.run(b, "pull", "-q", "--no-rebase", "origin", "main")
    assert (b / box).read_bytes() == merged


def test_without_the_driver_git_conflicts(git: Git, tmp_path: Path) -> None:
    """The control: the same history conflicts under git's own merge, so the driver is what saves it."""
    box = "letters.jsonl"
    origin = _seeded_origin(git, tmp_path, box, [_letter("base")])
    _, c, _, _ = _diverge(git, tmp_path, origin, box, driver=False)
    merge = git.run(c, "merge", "--no-edit", "origin/main", check=False)
    assert merge.returncode != 0
    assert b"<<<<<<<" in (c / box).read_bytes()


def test_in_repo_box_born_by_the_store_merges_cleanly(git: Git, tmp_path: Path) -> None:
    """A box created by dovecote in a repository carries its own attribute line, so clones merge."""
    origin = tmp_path / "origin.git"
    git.run(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    b = git.clone(origin, tmp_path / "b", driver=True)
    (b / "README").write_text("project\n")
    git.commit_all(b, "project")
    git.run(b, "push", "-q", "origin", "HEAD:main")
    c = git.clone(origin, tmp_path / "c", driver=True)

    sent: list[bytes] = []
    for clone, name in ((b, "b"), (c, "c")):
        home, _ = init(tmp_path / f"home-{name}")
        dc = Dovecote(home)
        dc.add_project(ProjectAdd(name="alpha", root=str(clone), box_in_repo=True))
        lines = [_letter(f"{name}{n}", agent=f"agent-{name}") for n in range(3)] + [_letter("shared")]
        dc.store.append(Address("project", "alpha"), lines)
        sent += lines
        git.commit_all(clone, f"agent {name}")
    assert (b / ".dovecote" / ".gitattributes").read_text().strip() == "letters.jsonl merge=dovecote"

    git.run(b, "push", "-q", "origin", "HEAD:main")
    git.run(c, "fetch", "-q", "origin")
    merge = git.run(c, "merge", "--no-edit", "origin/main", check=False)
    assert merge.returncode == 0, merge.stdout + merge.stderr
    merged = (c / ".dovecote" / "letters.jsonl").read_bytes()
    assert sorted(_ids(merged)) == sorted({letter_id(x) for x in sent})


# -- union, as a function ------------------------------------------------------------

_WHAT = st.text(alphabet="abcxyz é\"\\", max_size=6)
_LETTER = st.builds(lambda w, a: canonical_line({"agent": a, "what": w}), _WHAT, st.sampled_from(["a", "b"]))
_JUNK = st.sampled_from([b"{", b'{"what":"half', b"[1]", b"not json", b" ", b"", b"\t"])
_LINE = st.one_of(_LETTER, _LETTER, _LETTER, _JUNK)


@st.composite
def _ledgers(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(_LINE, max_size=12))
    out = b"".join(ln + draw(st.sampled_from([b"\n", b"\r\n"])) for ln in lines)
    if out and draw(st.booleans()):
        out = out.rstrip(b"\r\n")  # a torn or unterminated last line
    return out


def _counts(data: bytes) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in _ids(data):
        out[i] = out.get(i, 0) + 1
    return out


def _normal(data: bytes) -> bytes:
    """The side as the merge writes it: each non-blank line, CR dropped, newline-terminated."""
    return b"".join(ln.rstrip(b"\r") + b"\n" for ln in data.split(b"\n") if ln.strip())


@settings(max_examples=300, deadline=None)
@given(_ledgers(), _ledgers())
def test_union_keeps_everything_once(ours: bytes, theirs: bytes) -> None:
    """No id from either side is lost and none is introduced twice."""
    out = union(ours, theirs)
    mine, other, got = _counts(ours), _counts(theirs), _counts(out)
    assert got.keys() == mine.keys() | other.keys()
    for i, n in got.items():
        assert n == max(mine.get(i, 0), 1), "the merge duplicated a letter"
    assert out.startswith(_normal(ours)), "our lines must stay first and in order"


@settings(max_examples=300, deadline=None)
@given(_ledgers(), _ledgers())
def test_union_is_idempotent_and_terminated(ours: bytes, theirs: bytes) -> None:
    """Merging again (a re-merge, a merge from the other side) changes nothing."""
    out = union(ours, theirs)
    assert union(ours, ours) == _normal(ours)
    assert union(out, theirs) == out
    assert union(out, ours) == out
    assert union(out, out) == out
    assert out == b"" or out.endswith(b"\n")
    assert b"\n\n" not in out and not out.startswith(b"\n")
    assert all(ln.strip() for ln in out.split(b"\n")[:-1])
    assert set(_ids(union(theirs, ours))) == set(_ids(out))


def test_merge_files_writes_union_into_ours(tmp_path: Path) -> None:
    """Git reads the result from %A; the ancestor is ignored because ledgers only grow."""
    a, b, c = _letter("a"), _letter("b"), _letter("c")
    anc, ours, theirs = tmp_path / "O", tmp_path / "A", tmp_path / "B"
    anc.write_bytes(a + b"\n")
    ours.write_bytes(a + b"\n" + b + b"\n")
    theirs.write_bytes(a + b"\n" + c + b"\n")
    assert merge_files(anc, ours, theirs) == 1
    assert ours.read_bytes() == a + b"\n" + b + b"\n" + c + b"\n"


def test_merge_driver_cli_exit_code(tmp_path: Path) -> None:
    """Git treats a non-zero exit from the driver as a conflict, so success must be 0."""
    a, b = _letter("a"), _letter("b")
    (tmp_path / "O").write_bytes(b"")
    (tmp_path / "A").write_bytes(a + b"\n")
    (tmp_path / "B").write_bytes(b + b"\n")
    p = subprocess.run(
        [str(DOVECOTE), "merge-driver", "O", "A", "B"], cwd=tmp_path, capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "A").read_bytes() == a + b"\n" + b + b"\n"

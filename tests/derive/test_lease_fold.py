"""Leases as a pure fold (``derive.leases``): glob overlap computed, never string equality, and each lease's
state derived from its letters and the time asked at (active, released, expired), whatever the letters' order."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dovecote.derive.leases import fold as lease_fold
from dovecote.derive.leases import globs as g
from dovecote.model.letters import Letter, make_letter
from dovecote.model.vocab import LetterKind

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("a", "b", "want"), [
    ("src/a.py", "src/a.py", True),
    ("src/**", "src/a.py", True),  # mcp_agent_mail's pre-filter misses these when the narrower one came first
    ("src/a.py", "src/**", True),
    ("src/*", "src/a.py", True),
    ("src/*.py", "/src/*.py", True),  # one spelling: no leading slash
    ("./src/a.py", "src/a.py", True),
    ("src", "src/a.py", True),  # a folder holds what is under it
    ("src/", "src/deep/er/a.py", True),
    ("src/*", "src/deep/er/a.py", True),  # src/deep matches src/*, and a.py is under it
    ("src", "src/*.py", True),
    ("*.py", "src", False),  # * takes no slash: *.py names files at the root
    ("*.py", "a.py", True),
    ("src/*.py", "src/*.md", False),
    ("src/*.py", "src/a.*", True),  # src/a.py
    ("docs/**", "src/**", False),
    ("**/*.py", "src/a.py", True),
    ("**/test_*.py", "tests/x.md", True),  # conservative: x.md may be a folder holding test_a.py
    ("tests/**/test_*.py", "src/x.py", False),
    ("a/**/b", "a/b", True),  # **/ also matches no folder
    ("a/**/b", "a/x/y/b", True),
    ("src/[ab].py", "src/c.py", False),
    ("src/[ab].py", "src/b.py", True),
    ("src/[!ab].py", "src/a.py", False),
    ("src/[!ab].py", "src/[!cd].py", True),
    ("src/[a-c].py", "src/[c-e].py", True),
    ("src/[a-c].py", "src/[d-f].py", False),
    ("src/?.py", "src/ab.py", False),
    ("src/?.py", "src/a.py", True),
    ("src/a.py", "src/a.pyc", False),
    ("src/a", "src/ab", False),
])
def test_two_globs_overlap_when_some_path_matches_both(a: str, b: str, want: bool) -> None:
    na, nb = g.normal(a), g.normal(b)
    assert na is not None and nb is not None
    assert g.overlap(na, nb) is want
    assert g.overlap(nb, na) is want  # symmetric


@pytest.mark.parametrize("bad", ["", "/", ".", "..", "../etc/passwd", "src/../../x", "a\x00b"])
def test_a_glob_naming_nothing_under_the_root_has_no_spelling(bad: str) -> None:
    assert g.normal(bad) is None


def _translate(glob: str) -> re.Pattern[str]:
    """An independent reading of the model the module documents, as a regex: the glob or anything under it."""
    out, i = "", 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif glob.startswith("**", i):
            out, i = out + ".*", i + 2
        elif glob[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif glob[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(glob[i]), i + 1
    return re.compile(f"(?:{out})(?:/.*)?")


PARTS = st.sampled_from(["a", "b", "ab", "*", "?", "**", "a*", "*b", "x.py", "*.py"])
GLOBS = st.lists(PARTS, min_size=1, max_size=4).map("/".join)
PATHS = [("/".join(p)) for n in range(1, 4) for p in itertools.product(["a", "b", "ab", "x.py", "ba"], repeat=n)]


@settings(max_examples=300, deadline=None)
@given(GLOBS, GLOBS)
def test_overlap_never_misses_a_shared_path(a: str, b: str) -> None:
    """Conservative: whenever some path matches both (found by brute force), they overlap."""
    ra, rb = _translate(a), _translate(b)
    shared = [p for p in PATHS if ra.fullmatch(p) and rb.fullmatch(p)]
    if shared:
        assert g.overlap(a, b), (a, b, shared[0])


def test_covers_holds_a_path_or_a_path_under_a_folder() -> None:
    assert g.covers("src/**", "src/a/b.py") and g.covers("src", "src/a.py") and g.covers("*.md", "README.md")
    assert not g.covers("src/*.py", "tests/a.py") and not g.covers("*.md", "docs/a.md")
    assert g.covers("we[ird", "we[ird") and not g.covers("src/[ab].py", "src/[ab].py")


def take(entity: str, globs: list[str], minutes: int = 60, exclusive: bool = True, at: datetime = T0) -> Letter:
    return make_letter({"kind": LetterKind.lease.value, "ts": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "agent": entity,
                        "entity": entity, "project": "p", "globs": globs, "exclusive": exclusive,
                        "expires": (at + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")})


def follow(kind: LetterKind, ref: str, expires: datetime | None = None) -> Letter:
    obj: dict[str, object] = {"kind": kind.value, "ts": "2026-12-01T12:10:00Z", "agent": "a", "entity": "a",
                              "ref": ref}
    if expires is not None:
        obj["expires"] = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    return make_letter(obj)


def test_state_is_derived_from_letters_and_the_time() -> None:
    lease = take("a", ["src/**"])
    lid = lease.id
    assert lease_fold.fold([lease], T0)[lid].state == "active"
    assert lease_fold.fold([lease], T0 + timedelta(minutes=60))[lid].state == "expired"  # at its expiry: over
    renewed = follow(LetterKind.lease_renew, lid, T0 + timedelta(hours=3))
    shorter = follow(LetterKind.lease_renew, lid, T0 + timedelta(hours=2))
    for order in itertools.permutations([lease, renewed, shorter]):  # git merges may order them any way
        got = lease_fold.fold(list(order), T0 + timedelta(minutes=150))[lid]
        assert (got.state, got.expires, got.renewed) == ("active", "2026-12-01T15:00:00Z", 2)
    released = follow(LetterKind.lease_release, lid)
    for order in itertools.permutations([lease, renewed, released]):
        got = lease_fold.fold(list(order), T0)[lid]
        assert got.state == "released" and got.released_at == "2026-12-01T12:10:00Z"


def test_a_letter_that_is_not_well_formed_is_no_lease() -> None:
    bad = [make_letter({"kind": LetterKind.lease.value, "entity": "a", "globs": ["x"]}),  # no expiry
           make_letter({"kind": LetterKind.lease.value, "entity": "a", "globs": [".."], "expires": "2027-01-01"}),
           make_letter({"kind": LetterKind.lease.value, "globs": ["x"], "expires": "2027-01-01"}),
           follow(LetterKind.lease_release, "000000000000")]
    assert lease_fold.fold(bad, T0) == {}


def test_conflicts_follow_exclusive_and_shared() -> None:
    mine, theirs = take("a", ["src/**"]), take("b", ["docs"], exclusive=False)
    leases = list(lease_fold.fold([mine, theirs], T0).values())
    assert [c.entity for c in lease_fold.conflicts(leases, "c", ["src/x.py"], exclusive=False)] == ["a"]
    assert lease_fold.conflicts(leases, "c", ["docs/a.md"], exclusive=False) == []  # shared with shared
    assert [c.entity for c in lease_fold.conflicts(leases, "c", ["docs/a.md"], exclusive=True)] == ["b"]
    assert lease_fold.conflicts(leases, "a", ["src/x.py"], exclusive=True) == []  # never with oneself
    later = list(lease_fold.fold([mine, theirs], T0 + timedelta(hours=2)).values())
    assert lease_fold.conflicts(later, "c", ["src/**", "docs"], exclusive=True) == []  # expired: no holder
    held = lease_fold.holding(leases, None, ["src/deep/a.py", "docs/a.md", "README.md"])
    assert [(c.entity, c.wanted) for c in held] == [("a", "src/deep/a.py")]  # shared leases never block a commit

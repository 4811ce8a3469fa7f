"""Errors: every refusal keyword is registered, and a refusal has one shape."""

from __future__ import annotations

import re

import pytest

from dovecote.errors import REASONS, DovecoteError, Refusal, StoreError


def test_every_keyword_has_a_status_and_a_description() -> None:
    assert REASONS, "the keyword table is empty"
    for keyword, (status, meaning) in REASONS.items():
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", keyword), keyword
        assert isinstance(status, int) and 400 <= status < 600, keyword
        assert isinstance(meaning, str) and meaning.strip() and "\n" not in meaning, keyword


def test_the_keyword_table_is_sorted() -> None:
    assert list(REASONS) == sorted(REASONS)


@pytest.mark.parametrize(
    "keyword",
    ["invalid_name", "invalid_address", "invalid_config", "invalid_field", "invalid_json", "missing_field",
     "unknown_field", "reserved_agent", "too_large", "duplicate_project", "duplicate_entity", "no_home",
     "ambiguous_name", "unknown_box"],
)
def test_the_keywords_this_foundation_uses_are_registered(keyword: str) -> None:
    assert keyword in REASONS


def test_a_refusal_with_an_unregistered_keyword_raises() -> None:
    with pytest.raises(ValueError, match="unregistered"):
        Refusal("not_a_keyword", "detail")


def test_refusal_carries_reason_detail_and_status() -> None:
    r = Refusal("invalid_name", "name '../x' contains a path separator")
    assert isinstance(r, DovecoteError)
    assert r.reason == "invalid_name"
    assert r.detail == "name '../x' contains a path separator"
    assert r.status == REASONS["invalid_name"][0] == 400
    assert str(r) == "invalid_name: name '../x' contains a path separator"
    assert r.message() == "invalid_name: name '../x' contains a path separator (nothing was written)"


def test_to_dict_shape() -> None:
    r = Refusal("too_large", "the report is 900 bytes; the limit is 300")
    d = r.to_dict()
    assert d == {
        "ok": False,
        "error": "too_large: the report is 900 bytes; the limit is 300 (nothing was written)",
        "reason": "too_large",
        "status": 413,
    }
    assert list(d) == ["ok", "error", "reason", "status"]


def test_to_dict_with_details() -> None:
    d = Refusal("ambiguous_name", "api", candidates=["api-gateway", "api-server"]).to_dict()
    assert d["details"] == {"candidates": ["api-gateway", "api-server"]}
    assert {"ok", "error", "reason", "status"} <= set(d)


@pytest.mark.parametrize("keyword", sorted(REASONS))
def test_every_keyword_builds_a_refusal_with_its_status(keyword: str) -> None:
    d = Refusal(keyword, "x").to_dict()
    assert d["ok"] is False and d["reason"] == keyword and d["status"] == REASONS[keyword][0]
    assert str(d["error"]).startswith(f"{keyword}: ")


def test_store_error_is_not_a_refusal() -> None:
    e = StoreError("cannot read /x: Input/output error")
    assert isinstance(e, DovecoteError) and not isinstance(e, Refusal)

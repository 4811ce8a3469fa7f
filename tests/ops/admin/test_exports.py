"""The package surface: a sorted ``__all__`` that resolves, and a cheap import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import dovecote


def test_all_is_sorted() -> None:
    assert dovecote.__all__ == sorted(dovecote.__all__)


@pytest.mark.parametrize("name", dovecote.__all__)
def test_every_exported_name_resolves(name: str) -> None:
    assert getattr(dovecote, name) is not None


def test_exports_are_the_real_objects() -> None:
    from dovecote.errors import DovecoteError, Refusal, StoreError
    from dovecote.handle.api import Dovecote, init

    assert dovecote.Dovecote is Dovecote
    assert dovecote.init is init
    assert (dovecote.DovecoteError, dovecote.Refusal, dovecote.StoreError) == (DovecoteError, Refusal, StoreError)
    assert isinstance(dovecote.__version__, str) and dovecote.__version__


def test_an_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _ = dovecote.no_such_thing  # type: ignore[attr-defined]


def test_open_returns_a_handle(tmp_path: Path) -> None:
    home = tmp_path / ".dovecote"
    dovecote.init(home)
    assert isinstance(dovecote.open(home), dovecote.Dovecote)


def test_open_without_a_home_refuses(tmp_path: Path) -> None:
    with pytest.raises(dovecote.Refusal) as e:
        dovecote.open(tmp_path / "nowhere")
    assert e.value.reason == "no_home"


def test_importing_dovecote_is_cheap() -> None:
    code = (
        "import sys, dovecote\n"
        "heavy = sorted(m for m in ('typer', 'rich', 'orjson', 'msgspec', 'click', 'tomlkit') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == ""

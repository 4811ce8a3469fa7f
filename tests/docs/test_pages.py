"""What the site's hand-written pages show still holds: the configuration page's example is a roster the code
accepts, and it names every table and every limit the roster may carry."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from dovecote.roster import config
from dovecote.roster.config import Limits

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "configuration.md"


def example() -> bytes:
    match = re.search(r"```toml\n(.*?)```", PAGE.read_text(), re.S)
    assert match, "the configuration page shows no config.toml"
    return match.group(1).encode()


def test_the_configuration_example_is_a_roster_dovecote_accepts() -> None:
    roster = config.parse(example())
    assert roster.projects and roster.entities and roster.store  # every part shown, read back


def test_the_configuration_example_shows_every_table_and_limit() -> None:
    doc = tomllib.loads(example().decode())
    assert set(doc) == config._TOP_KEYS  # a key the roster accepts but the page never shows fails here
    assert set(doc["limits"]) == set(Limits.__struct_fields__)

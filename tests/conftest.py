"""Which store the functional tests run on.

A module that sets ``pytestmark = pytest.mark.both_stores`` runs each of its
tests on every store: over the home's files, over a ``MemoryStore`` and over
PostgreSQL, each home in a schema of its own (see ``helpers.open_home`` and
``pghelpers``). A test marked ``files_only`` runs on the files alone: it reads
ledgers on disk, runs the real CLI, or uses several processes, none of which a
memory store has. ``--store=memory`` (or ``file``, ``postgres``) runs every
test that can on that one store only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import helpers

STORES = ("file", "memory", "postgres")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--store", choices=STORES, default=None, help="run the functional tests on this store only")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "both_stores: run each test over the files, the memory store and PostgreSQL")
    config.addinivalue_line("markers", "files_only: the test needs ledgers on disk (or the CLI, or processes)")
    config.addinivalue_line("markers", "screenshots: takes the docs' pictures of the Human View; only with "
                            "-m screenshots (make screenshots)")
    config.addinivalue_line("markers", "stress: the long sweeps (every crash point, every hostile argument), the soaks "
                            "and the PostgreSQL restart; only with -m stress (make stress; CI runs it after make test)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    only = metafunc.config.getoption("--store")
    files_only = metafunc.definition.get_closest_marker("files_only") is not None
    if files_only:
        kinds: tuple[str, ...] = ("file",)
    elif only is not None:
        kinds = (only,)
    elif metafunc.definition.get_closest_marker("both_stores") is not None:
        kinds = STORES
    else:
        kinds = ("file",)
    if kinds != ("file",):
        metafunc.parametrize("store_kind", kinds, indirect=True)


@pytest.fixture
def store_kind(request: pytest.FixtureRequest) -> str:
    return getattr(request, "param", "file")


@pytest.fixture(autouse=True)
def _store(store_kind: str) -> Iterator[None]:
    """Every home the test opens through ``helpers`` lives in ``store_kind``."""
    with helpers.stores(store_kind):
        yield


@pytest.fixture
def url() -> Iterator[str]:
    """A migrated PostgreSQL schema of the test's own, as a store URL (``pghelpers.schema``); the
    process's shared store on it (``store_postgres.shared``) closed before the schema is dropped."""
    from dovecote.store.postgres.store import release
    from pghelpers import schema

    with schema() as u:
        yield u
        release(u)


@pytest.fixture
def anyio_backend() -> str:
    """The anyio plugin's backend for the async tests (the MCP face): asyncio, as the server runs."""
    return "asyncio"


@pytest.fixture
def client(dc: Any) -> Iterator[Any]:
    """An in-process HTTP client over the app on the module's ``dc`` home (each HTTP test module says which)."""
    from starlette.testclient import TestClient

    from dovecote.http.app import create_app

    with TestClient(create_app(dc)) as c:
        yield c

"""The ``store`` setting: a PostgreSQL URL, read without a database driver.

Law: a password never sits in ``config.toml`` (libpq takes it from
``PGPASSWORD`` or ``~/.pgpass``), and never appears in what dovecote prints:
``shown`` drops it along with every query parameter (the search path too).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

SCHEMES = ("postgresql://", "postgres://")


def is_url(text: str) -> bool:
    """Does a ``store`` setting name a PostgreSQL database (rather than the home's files)?"""
    return text.startswith(SCHEMES)


def has_password(url: str) -> bool:
    """Does the URL carry a password, in its authority or as a ``password=`` parameter?"""
    parts = urlsplit(url)
    try:
        in_netloc = parts.password is not None
    except ValueError:
        in_netloc = ":" in parts.netloc.rpartition("@")[0]
    return in_netloc or "password" in parse_qs(parts.query)


def shown(url: str) -> str:
    """The URL as it may be printed: user, host, port and database, no password."""
    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"postgresql://{user}{parts.hostname or ''}{port}{parts.path}"

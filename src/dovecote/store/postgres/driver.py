"""The one door to the PostgreSQL driver: every module of this store imports psycopg and its pool from here.

The driver is an extra, ``dovecote[postgres]``: the file store and every command that never names a
database run without it. A home or a command that names a ``postgresql://`` store on an install without
it is refused here, ``driver_missing``, naming the extra to install, before any module of the store
imports the driver itself (so a face shows one line and exit 2, never an ImportError).
"""

from __future__ import annotations

from dovecote.errors import Refusal

#: What to install for the driver (the refusal names it; the packaging test installs without it).
EXTRA = "dovecote[postgres]"

try:
    import psycopg
    from psycopg import Copy, pq
    from psycopg_pool import ConnectionPool
except ImportError as e:  # not installed, or psycopg without a libpq it can load
    raise Refusal(
        "driver_missing", f"this store is a PostgreSQL database and its driver cannot be loaded ({e}): "
        f"install {EXTRA}, e.g. pip install '{EXTRA}'",
    ) from None

#: Every error the driver raises (a caller catches it without importing psycopg itself).
DriverError = psycopg.Error

__all__ = ["EXTRA", "ConnectionPool", "Copy", "DriverError", "pq", "psycopg"]

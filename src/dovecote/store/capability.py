"""What a store can do beyond the ``Store`` protocol, asked by name instead of by its class.

A use case that needs more than the protocol (a read bounded at a snapshot, a cache
keyed by marks that outlive the process, rows to check) asks ``can(store, ...)``;
each backend lists what it offers in its ``capabilities``. So ``ops`` never tests
``isinstance(store, FileStore)`` (a test fails if it does), and a new backend says
what it offers in one place instead of being missed by a dozen class checks.
"""

from __future__ import annotations

from enum import StrEnum


class Capability(StrEnum):
    #: ``snapshot(wheres)`` and ``bounded(bounds)``: reads can be held at a snapshot (verify's reads).
    bounded_reads = "bounded_reads"
    #: ``read(where)`` is the store's own warm read, shared with every fold that asks (no second parse).
    shared_reads = "shared_reads"
    #: Marks are positions in this home's files: a cache kept on disk, keyed by them, is true for the
    #: next process too (the search index, the sweep's resume).
    lasting_marks = "lasting_marks"
    #: Boxes are folders under the home's ``boxes/`` (an entity's box is found by listing them).
    box_folders = "box_folders"
    #: Letters are rows of a database: ``entity_names()`` lists entity boxes, verify checks the rows.
    database_rows = "database_rows"


def can(store: object, capability: Capability) -> bool:
    """Does ``store`` offer ``capability`` (its class lists it in ``capabilities``)?"""
    return capability in getattr(store, "capabilities", ())

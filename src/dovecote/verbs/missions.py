"""The verbs of missions and blocks: blocks, mission letters, and the two human gestures.

The mission letter itself is not a verb field's schema here: it is checked by
``derive.missions.letter.validate`` (its own keywords, first failure wins), so
the verb takes it as an object and the one validation decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from msgspec import Meta

from dovecote.model.ids import MISSION_ID_PATTERN
from dovecote.verbs.base import Name, Verb
from dovecote.verbs.limits import ITEMS

MissionId = Annotated[str, Meta(pattern=f"^{MISSION_ID_PATTERN}$", description="The mission (msn_ and 12 hex digits).")]
ProjectOpt = Annotated[Name | None, Meta(description="Only this project's.")]


class BlockAdd(Verb, frozen=True):
    """Add a block (a work unit) to a project: boundary version 1, store version 0."""

    NAMES: ClassVar[Mapping[str, str]] = {"block_id": "block id", "project": "project"}

    block_id: Annotated[Name, Meta(description="The block's id.")]
    project: Annotated[Name, Meta(description="The project it belongs to.")]


class BlockBump(Verb, frozen=True):
    """Move a block's boundary one version on (a receipt candidate for the old boundary goes stale)."""

    NAMES: ClassVar[Mapping[str, str]] = {"block_id": "block id", "project": "project"}

    block_id: Annotated[Name, Meta(description="The block's id.")]
    project: Annotated[Name | None, Meta(description="Its project (default: the one project that has it).")] = None


class Blocks(Verb, frozen=True):
    """Every block with its boundary and store versions, and each project's skeleton id."""

    NAMES: ClassVar[Mapping[str, str]] = {"project": "project"}

    project: ProjectOpt = None


class MissionPost(Verb, frozen=True):
    """Post the next letter of a mission's chain (compare-and-swap on the head)."""

    NAMES: ClassVar[Mapping[str, str]] = {"as_project": "project"}

    letter: Annotated[
        dict[str, Any], Meta(max_length=ITEMS, description="The mission letter (dovecote-mission-v1 or m1nd's v0).")
    ]
    as_project: Annotated[
        Name | None, Meta(description="The caller's project (its box; default: home).")
    ] = None


class Missions(Verb, frozen=True):
    """One head per mission, the counts by phase, and how many wait to land (merge_wait heads)."""

    NAMES: ClassVar[Mapping[str, str]] = {"project": "project"}

    project: ProjectOpt = None


class Mission(Verb, frozen=True):
    """One mission's whole chain, root to head."""

    mission_id: MissionId


class MissionArchive(Verb, frozen=True):
    """Set a landed or failed mission aside (a human gesture: a terminal, or the Human View)."""

    mission_id: MissionId


class ReceiptImport(Verb, frozen=True):
    """Import a merge_wait mission's receipt candidate into its block (a human gesture)."""

    mission_id: MissionId

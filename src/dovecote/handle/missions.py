"""The handle's mission and block verbs (see ``ops.missions.post`` and ``ops.missions.blocks``).

One method per verb, each one row of a face. The two human gestures
(``mission_archive``, ``receipt_import``) take ``gesture``, the origin a face
vouches for (``terminal``: the CLI's prompt; ``human-view``: the Human View's
signed-in form), and ``passphrase``, what the person typed there; both are
checked against the person's gesture passphrase (``ops.missions.gestures.check``).
Without them they are refused ``human_gesture_required``; no remote call passes
one. ``gesture_key_set`` sets that passphrase (``dovecote gesture-key set``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from dovecote import verbs
from dovecote.handle.core import ActorArg, HandleCore, fields
from dovecote.verbs import checked

if TYPE_CHECKING:
    from dovecote.ops.missions.blocks import BlockChange, BlockListing, ReceiptImported
    from dovecote.ops.missions.gestures import KeySet
    from dovecote.ops.missions.post import MissionArchived, MissionChain, MissionListing, MissionPosted


class MissionVerbs(HandleCore):
    """The handle's mission and block verbs."""

    @fields(verbs.BlockAdd)
    def block_add(self, v: verbs.BlockAdd, /, *, actor: ActorArg = None, now: datetime | None = None
                  ) -> BlockChange:
        """Add a block to a project (adding it again changes nothing)."""
        from dovecote.ops.missions import blocks

        v = checked(v)
        return blocks.add(self._ctx(now=now, actor=actor), v.project, v.block_id)

    @fields(verbs.BlockBump)
    def block_bump(self, v: verbs.BlockBump, /, *, actor: ActorArg = None, now: datetime | None = None
                   ) -> BlockChange:
        """Move a block's boundary one version on."""
        from dovecote.ops.missions import blocks

        v = checked(v)
        return blocks.bump(self._ctx(now=now, actor=actor), v.block_id, v.project)

    @fields(verbs.Blocks)
    def blocks(self, v: verbs.Blocks | None = None, /) -> BlockListing:
        """Every block (or one project's) and each project's skeleton id."""
        from dovecote.ops.missions import blocks

        return blocks.listing(self.context, checked(v or verbs.Blocks()).project)

    @fields(verbs.MissionPost)
    def mission_post(self, v: verbs.MissionPost, /, *, actor: ActorArg = None) -> MissionPosted:
        """Post the next letter of a mission (validated, guarded, compare-and-swap on the head)."""
        from dovecote.ops.missions import post as missions

        v = checked(v)
        return missions.post(self._ctx(actor=actor), v.letter, v.as_project)

    @fields(verbs.Missions)
    def missions(self, v: verbs.Missions | None = None, /) -> MissionListing:
        """One head per mission, the counts by phase and the landing count."""
        from dovecote.ops.missions import post as missions

        return missions.listing(self.context, checked(v or verbs.Missions()).project)

    @staticmethod
    def gestures_by_phase() -> dict[str, str]:
        """Phase -> the human gesture a mission's head there offers (the phase graph's, ``derive.missions.letter``)."""
        from dovecote.derive.missions.letter import gestures_by_phase

        return gestures_by_phase()

    @fields(verbs.Mission)
    def mission(self, v: verbs.Mission, /) -> MissionChain:
        """One mission's whole chain (``unknown_mission`` when no reachable box has it)."""
        from dovecote.ops.missions import post as missions

        return missions.show(self.context, checked(v).mission_id)

    @fields(verbs.MissionArchive)
    def mission_archive(self, v: verbs.MissionArchive, /, *, gesture: str | None = None,
                        passphrase: str | None = None, actor: ActorArg = None,
                        now: datetime | None = None) -> MissionArchived:
        """Archive a landed or failed mission: a human gesture (see the module docstring)."""
        from dovecote.ops.missions import post as missions

        v = checked(v)
        return missions.archive(self._ctx(now=now, actor=actor), v.mission_id, gesture, passphrase)

    @fields(verbs.ReceiptImport)
    def receipt_import(self, v: verbs.ReceiptImport, /, *, gesture: str | None = None,
                       passphrase: str | None = None, actor: ActorArg = None,
                       now: datetime | None = None) -> ReceiptImported:
        """Import a merge_wait mission's receipt candidate into its block: a human gesture."""
        from dovecote.ops.missions import post as missions

        v = checked(v)
        return missions.import_receipt(self._ctx(now=now, actor=actor), v.mission_id, gesture, passphrase)

    def gesture_key_set(self, new: str, /, *, old: str | None = None, now: datetime | None = None
                        ) -> KeySet:
        """Set the person's gesture passphrase (changing one needs ``old``); ``{path, changed}``."""
        from dovecote.ops.missions import gestures

        return gestures.set_key(self._ctx(now=now), new, old)

    def gesture_key_is_set(self) -> bool:
        """Whether this home has a gesture passphrase (a face asks before it prompts for one)."""
        from dovecote.ops.missions import gestures

        return gestures.is_set(self.context)

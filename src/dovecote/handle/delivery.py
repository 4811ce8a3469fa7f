"""The handle's delivery verbs: intake, the mailman, acks, trackers, presence, status.

Each takes its verb and answers a value with ``to_dict``: a REST route is one row.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote import verbs
from dovecote.handle.core import ActorArg, fields
from dovecote.handle.reading import ReadingVerbs
from dovecote.verbs import checked

if TYPE_CHECKING:
    from dovecote.ops.delivery.acks import Acked
    from dovecote.ops.delivery.intake import IntakeRun
    from dovecote.ops.delivery.mailman import Pass
    from dovecote.ops.delivery.presence import Beat, Presence
    from dovecote.ops.delivery.status import Status
    from dovecote.ops.delivery.trackers import Trackers
    from dovecote.roster.config import Roster


class DeliveryVerbs(ReadingVerbs):
    """The handle's delivery verbs: intake, the mailman, acks, trackers, presence, status."""

    @fields(verbs.Ack)
    def ack(self, v: verbs.Ack, /, *, actor: ActorArg = None, now: datetime | None = None) -> Acked:
        """The recipient's ack of a delivery, once (see ``ops.delivery.acks``)."""
        from dovecote.ops.delivery import acks

        v = checked(v)
        return acks.ack(self._ctx(now=now, actor=actor), v.entity_id, v.ref, v.status.value, v.reason)

    @fields(verbs.Trackers)
    def trackers(self, v: verbs.Trackers | None = None, /, *, now: datetime | None = None) -> Trackers:
        """The v3 tracker of every (envelope, recipient) (see ``ops.delivery.trackers``)."""
        from dovecote.ops.delivery import trackers as tracker_read

        v = checked(v or verbs.Trackers())
        ctx = self._ctx(now=now)
        return tracker_read.trackers(ctx, v.entity_id, v.work_item_id, v.thread_id, v.limit, ctx.now())

    @fields(verbs.PresenceBeat)
    def presence_beat(self, v: verbs.PresenceBeat, /, *, now: datetime | None = None) -> Beat:
        """Record one heartbeat in the presence ledger (assistive, see ``ops.delivery.presence``)."""
        from dovecote.ops.delivery import presence as presence_op

        v = checked(v)
        return presence_op.beat(self._ctx(now=now), v.agent, v.session)

    @fields(verbs.Presence)
    def presence(self, v: verbs.Presence | None = None, /, *, now: datetime | None = None) -> Presence:
        """Each agent recently active or not (never "online"); reads only."""
        from dovecote.ops.delivery import presence as presence_op

        v = checked(v or verbs.Presence())
        ctx = self._ctx(now=now)
        return presence_op.presence(ctx, v.active_minutes, ctx.now())

    @fields(verbs.Intake)
    def intake(self, v: verbs.Intake | None = None, /, *, now: datetime | None = None) -> IntakeRun:
        """Deliver every envelope in the intake folder's pending/, once per recipient (see ``ops.delivery.intake``)."""
        from dovecote.ops.delivery import intake as intake_op
        from dovecote.ops.delivery.notify import mode_of

        v = checked(v or verbs.Intake())
        ctx = self._ctx(now=now)
        folder = intake_op.folder_of(ctx, v.dir)
        run = intake_op.intake(ctx, folder, mode_of(ctx, None))
        self._remember_intake(folder)
        return run

    def _remember_intake(self, folder: Path) -> None:
        """After a run in ``folder``: list it in the roster (once, under the roster's lock) unless it is the
        home's own or listed, so ``status`` counts what it holds from now on, after a restart too."""
        from msgspec.structs import replace

        from dovecote.ops.delivery import intake as intake_op
        from dovecote.roster import edit as roster_edit

        if intake_op.listed(self.context, folder):
            return

        def change(r: Roster, doc: Any) -> Roster:
            if str(folder) in r.intake_dirs:  # another process listed it meanwhile
                return r
            roster_edit.add_intake_dir(doc, str(folder))
            return replace(r, intake_dirs=(*r.intake_dirs, str(folder)))

        self._edit_roster(change)

    if TYPE_CHECKING:  # the handle's (``handle.roster.RosterVerbs._edit_roster``): edit the roster, then read it again
        def _edit_roster(self, change: Callable[[Roster, Any], Roster]) -> None: ...

    @fields(verbs.Mailman)
    def mailman(
        self, v: verbs.Mailman | None = None, /, *, now: datetime | None = None, passes: int | None = None,
        sleep: Callable[[float], object] | None = None, on_pass: Callable[[Pass], object] | None = None,
    ) -> list[Pass]:
        """Run the mailman: one pass, or (``loop``) a pass every ``interval`` seconds until ``passes`` ran
        (None: until interrupted). Nudges run off the pass; before returning it waits for them, bounded."""
        import time

        from dovecote.ops.delivery import intake as intake_op
        from dovecote.ops.delivery import mailman as mailman_op
        from dovecote.ops.delivery.notify import Nudger, mode_of

        v = checked(v or verbs.Mailman())
        ctx = self._ctx(now=now)
        mode = mode_of(ctx, v.notify_mode.value if v.notify_mode is not None else None)
        folder = intake_op.folder_of(ctx, v.dir)
        nudger = Nudger() if mode == "agent-turn-nudge" else None
        done: list[Pass] = []
        limit = passes if v.loop else 1
        try:
            while limit is None or len(done) < limit:
                if done:
                    (sleep or time.sleep)(v.interval)
                done.append(mailman_op.mailman_pass(ctx.at(None), folder, mode, nudger))
                if len(done) == 1:
                    self._remember_intake(folder)
                if on_pass is not None:
                    on_pass(done[-1])
        finally:
            if nudger is not None:
                nudger.drain(float(self.roster.notifier_timeout) + 1)
        return done

    @fields(verbs.Status)
    def status(self, v: verbs.Status | None = None, /, *, now: datetime | None = None) -> Status:
        """The operator's delivery view; never writes (see ``ops.delivery.status``)."""
        from dovecote.ops.delivery import intake as intake_op
        from dovecote.ops.delivery import status as delivery_status

        v = checked(v or verbs.Status())
        ctx = self._ctx(now=now)
        return delivery_status.status(
            ctx, intake_op.folders(ctx), active_minutes=v.active_minutes, work_item_id=v.work_item_id,
            thread_id=v.thread_id, limit=v.limit, now=ctx.now(),
        )

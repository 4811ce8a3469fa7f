"""The handle's case-intelligence verbs (see ``ops.cases.cases``).

One method per verb, each one row of a face (CLI, MCP, REST).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from dovecote import verbs
from dovecote.handle.core import ActorArg, HandleCore, fields
from dovecote.verbs import checked

if TYPE_CHECKING:
    from dovecote.ops.cases.abandonment import HookRelayed
    from dovecote.ops.cases.cases import Case, Cases, Claims, ReceiptFiled
    from dovecote.ops.cases.monitors import MonitorAdded, Monitors
    from dovecote.ops.cases.sentinels import Sentinels


class CaseVerbs(HandleCore):
    """The handle's case-intelligence verbs (see ``ops.cases.cases``)."""

    @fields(verbs.Receipt)
    def receipt(self, v: verbs.Receipt, /, *, actor: ActorArg = None, now: datetime | None = None) -> ReceiptFiled:
        """File a triage receipt into the case's box; it closes what it answers."""
        from dovecote.ops.cases import cases as cases_op

        return cases_op.receipt(self._ctx(now=now, actor=actor), checked(v))

    @fields(verbs.Cases)
    def cases(self, v: verbs.Cases | None = None, /) -> Cases:
        """Every case, with recurrence and kindless counts."""
        from dovecote.ops.cases import cases as cases_op

        v = checked(v or verbs.Cases())
        return cases_op.cases(self.context, v.box)

    @fields(verbs.Case)
    def case(self, v: verbs.Case, /) -> Case:
        """One case, by fingerprint or case id (``unknown_case`` otherwise)."""
        from dovecote.ops.cases import cases as cases_op

        return cases_op.case(self.context, checked(v).fingerprint)

    @fields(verbs.Sentinels)
    def sentinels(self, v: verbs.Sentinels | None = None, /) -> Sentinels:
        """Run every fixed receipt's probe; counts guarded, green, red."""
        from dovecote.ops.cases import sentinels as sentinels_op

        v = checked(v or verbs.Sentinels())
        return sentinels_op.sentinels(self.context, v.timeout)

    @fields(verbs.Claims)
    def claims(self, v: verbs.Claims | None = None, /) -> Claims:
        """Claim vs measure, counts only (``write_labels`` appends field-labels.jsonl rows)."""
        from dovecote.ops.cases import cases as cases_op

        v = checked(v or verbs.Claims())
        return cases_op.claims(self.context, v.write_labels)

    @fields(verbs.MonitorAdd)
    def monitor_add(self, v: verbs.MonitorAdd, /, *, actor: ActorArg = None, now: datetime | None = None
                    ) -> MonitorAdded:
        """Add (or redefine) a dead-man's switch monitor."""
        from dovecote.ops.cases import monitors as monitors_op

        return monitors_op.add(self._ctx(now=now, actor=actor), checked(v))

    @fields(verbs.Monitors)
    def monitors(self, v: verbs.Monitors | None = None, /, *, now: datetime | None = None) -> Monitors:
        """Every monitor and its state (new, up, late, down, paused)."""
        from dovecote.ops.cases import monitors as monitors_op

        return monitors_op.listing(self._ctx(now=now))

    def hook_post_tool(self, payload: dict[str, Any], watch: Sequence[str] = (), *, now: datetime | None = None
                       ) -> bool:
        """``hook post-tool``: record a watched tool call for abandonment; whether it was watched."""
        from dovecote.ops.cases import abandonment

        return abandonment.record(self._ctx(now=now), payload, watch)

    @fields(verbs.HookEvent)
    def hook_event(self, v: verbs.HookEvent, /, *, now: datetime | None = None) -> HookRelayed:
        """A relayed hook event (``HookEvent``): what ``hook post-tool`` or ``hook stop``'s abandonment half does."""
        from dovecote.ops.cases.abandonment import HookRelayed

        v = checked(v)
        if v.event == "post-tool":
            return HookRelayed(v.event, self.hook_post_tool(v.payload, v.watch, now=now), None)
        return HookRelayed(v.event, None, self.hook_stop_abandonment(v.payload, now=now))

    def hook_stop_abandonment(self, payload: dict[str, Any], *, now: datetime | None = None) -> str | None:
        """``hook stop``'s abandonment half: the id of the session's letter when its last watched call
        failed (minted once per session), else None."""
        from dovecote.ops.cases import abandonment

        got = abandonment.at_stop(self._ctx(now=now), payload)
        return got[0] if got else None


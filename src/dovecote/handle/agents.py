"""The handle's verbs for waking agents: tokens, wait and hooks.

Imported on first use, like search: the hook path stays light.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote import verbs
from dovecote.handle.core import ActorArg, HandleCore, address_of, fields
from dovecote.model.addresses import Address
from dovecote.model.credentials import Principal
from dovecote.verbs import checked

if TYPE_CHECKING:
    from dovecote.model.credentials import TokenRow
    from dovecote.ops.agents.hooks import HookAnswer
    from dovecote.ops.agents.hooks_config import Installed
    from dovecote.ops.agents.tokens import Issued
    from dovecote.ops.mail.wait import WaitResult


class AgentVerbs(HandleCore):
    """The handle's verbs for waking agents: tokens, wait and hooks."""

    @fields(verbs.TokenIssue)
    def token_issue(self, v: verbs.TokenIssue, /, *, actor: ActorArg = None) -> Issued:
        """Issue a token bound to an entity; the answer is the only place the token is ever shown."""
        from dovecote.ops.agents import tokens as tokens_op

        v = checked(v)
        return tokens_op.issue(self._ctx(actor=actor), v.entity_id, v.role.value)

    @fields(verbs.TokenList)
    def tokens(self, v: verbs.TokenList | None = None, /) -> list[TokenRow]:
        """Every issued token (entity, role, id, created, revoked), never the token itself."""
        from dovecote.ops.agents import tokens as tokens_op

        return tokens_op.list_tokens(self.context)

    @fields(verbs.TokenRevoke)
    def token_revoke(self, v: verbs.TokenRevoke, /, *, actor: ActorArg = None) -> TokenRow:
        """Revoke a token by id (an appended record; revoking twice changes nothing)."""
        from dovecote.ops.agents import tokens as tokens_op

        return tokens_op.revoke(self._ctx(actor=actor), checked(v).token_id)

    def authenticate(self, token: str) -> Principal:
        """The entity and role a token is bound to; ``unauthorized`` for an unknown or revoked one.

        The token file is read again only when it changed (a server checks every request's token).
        """
        from dovecote.ops.agents import tokens as tokens_op

        if self._tokens is None:
            self._tokens = tokens_op.TableCache()
        return tokens_op.authenticate(self.context, token, self._tokens)

    def authenticate_cached(self, token: str) -> Principal | None:
        """``authenticate`` if the token file is unchanged since it was last read (a stat), else None:
        a server's event loop checks a request's token itself, and only a changed file costs a worker."""
        from dovecote.ops.agents import tokens as tokens_op

        if self._tokens is None:
            return None
        return tokens_op.authenticate_cached(self.context, token, self._tokens)

    @staticmethod
    def authorize(principal: Principal, verb: str, target_entity: str) -> None:
        """Allow ``verb`` in ``target_entity``'s box for ``principal``, or refuse ``forbidden``."""
        from dovecote.model.credentials import authorize

        authorize(principal, verb, target_entity)

    def inbox_cursor(self, entity_id: str) -> str:
        """The cursor of the entity's box now (what ``wait --after`` takes)."""
        from dovecote.ops.mail import wait as wait_op

        return wait_op.box_cursor(self.context, entity_id)

    @fields(verbs.Wait)
    def wait(self, v: verbs.Wait, /, *, poll: float | None = None) -> WaitResult:
        """Block until new mail arrives after ``v.after`` (default: now) or ``v.timeout`` seconds pass."""
        from dovecote.ops.mail import wait as wait_op

        v = checked(v)
        return wait_op.wait(self.context, v.entity_id, timeout=v.timeout, after=v.after, poll=poll or wait_op.POLL)

    def stamp(self, address: str | Address) -> tuple[int, int]:
        """A cheap mark of a box (a stat, never a read) that changes whenever it gains a letter.

        A face that pushes updates (MCP resource subscriptions) polls this.
        """
        return self.store.stamp(address_of(address))

    def hook(self, kind: str, entity_id: str, payload: dict[str, Any], *, now: datetime | None = None) -> HookAnswer:
        """Answer an agent hook (session-start, prompt or stop) and record what it surfaced."""
        from dovecote.ops.agents import hooks as hooks_op

        return hooks_op.run_hook(self._ctx(now=now), kind, entity_id, payload)

    def keep_roster(self) -> None:
        """After a call that succeeded: keep the roster's TOML document for the next cold process
        (``roster_cache``; the CLI's hook path calls it, as its quick inbox path does)."""
        from dovecote.handle import inbox as inboxhandle

        inboxhandle.keep_roster(self._ctx())

    @fields(verbs.HooksInstall)
    def hooks_install(self, v: verbs.HooksInstall, /, command: str, *, now: datetime | None = None) -> Installed:
        """Write ``v.agent``'s hook configuration in ``v.project_dir``, each hook running ``<command> hook <kind>``."""
        from dovecote.ops.agents import hooks_config

        v = checked(v)
        return hooks_config.install(
            self._ctx(now=now), v.agent.value, v.entity_id, Path(v.project_dir), command, dry_run=v.dry_run
        )


"""The handle's reads for a person at a page: what waits on a person, and an inbox a page at a time.

Neither is a verb of its own (no CLI command or MCP tool takes them): the Human View and
``GET /api/v1/needs`` call them, with what the request's principal may read said by the one rule
(``handle.remote``), which is never decided here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from dovecote.handle.core import HandleCore

if TYPE_CHECKING:
    from dovecote.ops.delivery.needs import Needs
    from dovecote.ops.mail.inbox import InboxPage


class ReadingVerbs(HandleCore):
    """What waits on a person (``needs``), and one page of an inbox (``inbox_page``)."""

    def needs(self, reads: Callable[[str], bool] | None = None, /, *, everything: bool = True,
              now: datetime | None = None) -> Needs:
        """What waits on a person, oldest first (see ``ops.delivery.needs``): in the entity boxes ``reads``
        admits (every box by default), and the intake's quarantine when ``everything``. Reads only."""
        from dovecote.ops.delivery import needs as needs_op

        return needs_op.needs(self._ctx(now=now), reads or (lambda _: True), everything=everything)

    def inbox_page(self, entity_id: str, /, *, after: str | None = None, limit: int = 100,
                   states: tuple[str, ...] = (), include_terminal: bool = False,
                   now: datetime | None = None) -> InboxPage:
        """One page of an entity's inbound items after the cursor ``after`` (see ``derive.inbox.paging``)."""
        from dovecote.ops.mail.inbox import read_inbox_page

        return read_inbox_page(self._ctx(now=now), entity_id, after=after, limit=limit, states=states,
                               include_terminal=include_terminal, now=now)

"""The core of the handle: what every group of its verbs stands on.

``api.Dovecote`` is one class made of groups of verbs (``handle_agents``,
``handle_delivery``, ``handle_cases`` and its own), each a small module, so a
reader finds a verb by its subject and no module grows past a few hundred
lines. They share only this: the ``Context`` (store, roster, clock, actor,
warm folds) and ``_ctx``, the context of one call.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from dovecote import roster as roster_mod
from dovecote.addresses import Address, parse_address
from dovecote.context import Actor, Context, Now, utc_now
from dovecote.folds import Registry
from dovecote.home import Layout
from dovecote.osutil import file_stamp
from dovecote.routing import RosterIndex
from dovecote.store import Store

if TYPE_CHECKING:
    from dovecote.ops.tokens import TableCache

#: An actor for one call: an ``Actor``, or a name (the acting agent).
ActorArg = Actor | str | None


def address_of(address: str | Address) -> Address:
    """An address given as text or as an ``Address``."""
    return address if isinstance(address, Address) else parse_address(address)


class HandleCore:
    """The handle's state: its context, and the context of one call (see the module docstring)."""

    def __init__(
        self, root: Path, *, actor: Actor | None = None, clock: Now = utc_now, store: Store | None = None
    ) -> None:
        self._stamp = file_stamp(Layout(root).config)  # before the read: a change meanwhile is read again later
        self.context = Context.open(Layout(root), clock=clock, actor=actor, store=store)
        self._tokens: TableCache | None = None

    @property
    def layout(self) -> Layout:
        return self.context.layout

    @property
    def roster(self) -> roster_mod.Roster:
        return self.context.roster

    @property
    def index(self) -> RosterIndex:
        return self.context.index

    @property
    def store(self) -> Store:
        return self.context.store

    @property
    def warm(self) -> Registry:
        return self.context.warm

    def _ctx(self, *, now: datetime | None = None, actor: ActorArg = None) -> Context:
        """The context for one call: the clock pinned to ``now``, ``actor`` acting."""
        who = self.context.actor.naming(actor) if isinstance(actor, str) else actor
        return self.context.at(now, who)

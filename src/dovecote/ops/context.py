"""The context a use case runs in: everything an op may touch, handed to it.

Law: an op reads the world only through its ``Context`` (the store, the
roster and its index, the home's layout, the warm folds, the clock and the
acting identity) and never imports ``api`` or a face. The handle
(``api.Dovecote``) builds one context per home and passes it down; a face binds
the actor (the CLI from ``--agent``, ``$DOVECOTE_AGENT``, ``$DOVECOTE_ENTITY``
and ``$USER``; a server per connection), so no op reads the environment or the
wall clock, and a test can pin both.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import msgspec
from msgspec.structs import replace

from dovecote.ops.warm.registry import Registry
from dovecote.roster import cache as roster_cache
from dovecote.roster import config as roster_mod
from dovecote.roster.home import Layout
from dovecote.roster.routing import RosterIndex
from dovecote.store.capability import Capability, can
from dovecote.store.core import Store
from dovecote.store.files import FileStore

#: The clock: a callable returning an aware UTC datetime.
Now = Callable[[], datetime]

#: Who a report is by when the face named nobody.
UNKNOWN_AGENT = "unknown"
#: Who a message is from when the face named nobody.
DEFAULT_SENDER = "ent_operator"


def utc_now() -> datetime:
    """The real clock, the default of every handle."""
    return datetime.now(UTC)


class Actor(msgspec.Struct, frozen=True):
    """Who acts, as the face bound it. Each default below is the one rule for it.

    ``agent`` names the acting agent (a report's author, a transition's actor),
    ``entity`` the entity it speaks for (the default inbox and sender),
    ``user`` the login behind it (a report's author when no agent is named), and
    ``role`` the role of its token (``TokenRole``), which caps a message's trust level
    (``tokens.cap_trust``). A server binds the token's role; with no token the actor is
    the person at this machine, who acts as an operator.
    """

    agent: str | None = None
    entity: str | None = None
    user: str | None = None
    role: str = "operator"

    def author(self) -> str:
        """The author of a field report: the agent, else the login, else ``unknown``."""
        return self.agent or self.user or UNKNOWN_AGENT

    def actor_for(self, entity_id: str) -> str:
        """The actor of a lifecycle move in ``entity_id``'s box: the agent, else the entity itself."""
        return self.agent or entity_id

    def sender(self) -> str:
        """The sender of a message: the entity spoken for, else the agent, else ``ent_operator``."""
        return self.entity or self.agent or DEFAULT_SENDER

    def naming(self, agent: str | None) -> Actor:
        """This actor with ``agent`` named for one call (None keeps it)."""
        return self if agent is None else replace(self, agent=agent)


def configured(layout: Layout, roster: roster_mod.Roster) -> Store:
    """The store the roster names: the home's files, or (``store = "postgresql://…"``) the
    database, one pool per URL in this process (``store_postgres.shared``)."""
    if roster.store is None:
        return FileStore(layout, roster)
    from dovecote.store.postgres.store import shared  # psycopg loads only for a home that uses it

    return shared(roster.store).for_roster(roster)


class Context(msgspec.Struct, frozen=True):
    """What a use case needs; built by the handle, shared by its calls.

    ``warm`` is the registry of warm folds (``folds.Registry``); it is kept
    across roster reloads (the folds that depend on the roster check its signature).
    """

    layout: Layout
    roster: roster_mod.Roster
    store: Store
    index: RosterIndex
    clock: Now = utc_now
    actor: Actor = msgspec.field(default_factory=Actor)
    warm: Registry = msgspec.field(default_factory=Registry)

    @classmethod
    def open(
        cls, layout: Layout, *, clock: Now = utc_now, actor: Actor | None = None, store: Store | None = None
    ) -> Context:
        """A context over the home at ``layout``, its roster read from disk now; the home's files unless ``store``."""
        roster = roster_cache.load(layout)  # roster_mod.load, without tomllib's import when the file is known
        st = configured(layout, roster) if store is None else store.for_roster(roster)
        return cls(layout, roster, st, RosterIndex(roster), clock, actor or Actor())

    def now(self) -> datetime:
        """Now, from this context's clock."""
        return self.clock()

    def at(self, now: datetime | None = None, actor: Actor | None = None) -> Context:
        """This context with the clock pinned to ``now`` and/or another actor, for one call."""
        if now is None and actor is None:
            return self
        return replace(self, clock=self.clock if now is None else (lambda: now), actor=actor or self.actor)

    def cold(self) -> Context:
        """A fresh context over the same home: the roster read again, a new store, no warm folds.

        ``verify`` answers with one to prove that nothing warm was an authority.
        """
        if can(self.store, Capability.box_folders):  # the home's own files: new readers, nothing trusted
            return Context.open(self.layout, clock=self.clock, actor=self.actor)
        return Context.open(self.layout, clock=self.clock, actor=self.actor, store=self.store)

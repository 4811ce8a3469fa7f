"""The core of the handle: what every group of its verbs stands on.

``api.Dovecote`` is one class made of groups of verbs (``handle_agents``,
``handle_delivery``, ``handle_cases`` and its own), each a small module, so a
reader finds a verb by its subject and no module grows past a few hundred
lines. They share only this: the ``Context`` (store, roster, clock, actor,
warm folds) and ``_ctx``, the context of one call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from dovecote.model.addresses import Address, parse_address
from dovecote.ops.context import Actor, Context, Now, utc_now
from dovecote.ops.warm.registry import Registry
from dovecote.roster import config as roster_mod
from dovecote.roster.home import Layout
from dovecote.roster.routing import RosterIndex
from dovecote.store.core import Store
from dovecote.util.osutil import file_stamp
from dovecote.verbs import Verb
from dovecote.verbs.arguments import field_names, from_arguments

if TYPE_CHECKING:
    from dovecote.ops.agents.tokens import TableCache

#: An actor for one call: an ``Actor``, or a name (the acting agent).
ActorArg = Actor | str | None

R = TypeVar("R")


def fields(verb: type[Verb], *, whole: tuple[type, ...] = ()) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """The one way a handle method also takes ``verb``'s fields as arguments (``verbs.arguments``).

    ``dc.inbox("ent_b", include_terminal=True)`` is ``dc.inbox(Inbox(entity_id="ent_b",
    include_terminal=True))``. A first argument that is a verb (or None, or one of ``whole``: what
    else the method takes whole, as ``report`` a list) is handed on as it is; otherwise the
    positional arguments and every keyword that is not the method's own (``actor``, ``now``,
    ``gesture``...) are the verb's fields. Typed for mypy as taking any arguments
    (``Callable[..., R]``): the fields are checked when the call is made, a wrong one a ``TypeError``.
    """

    def wrap(method: Callable[..., R]) -> Callable[..., R]:
        code = method.__code__
        own = frozenset(code.co_varnames[2:code.co_argcount + code.co_kwonlyargcount])  # after self and the verb
        if own & field_names(verb):  # such a field could never be given by name
            raise TypeError(f"{method.__name__}: {sorted(own & field_names(verb))} name both a field and a parameter")
        optional = len(method.__defaults__ or ()) >= code.co_argcount - 1  # the verb may be left out
        taken_whole = (Verb, *whole)

        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> R:
            if args and (args[0] is None or isinstance(args[0], taken_whole)):
                return method(self, *args, **kwargs)
            given = {k: kwargs.pop(k) for k in list(kwargs) if k not in own}
            if not args and not given and optional:
                return method(self, **kwargs)
            return method(self, from_arguments(verb, args, given), **kwargs)

        return call

    return wrap


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

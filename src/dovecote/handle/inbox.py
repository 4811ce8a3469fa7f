"""The handle's ``inbox`` reads, importable without the rest of the handle.

A session-start hook runs a cold ``dovecote inbox ENTITY --format injection``
in every new agent session, and importing ``dovecote.handle.api`` (mail, reports,
distribution, the roster editor, tokens) costs about as much as the answer
itself. The inbox reads need only a context and ``ops.mail.inbox``, so they live
here, and ``Dovecote.inbox_until``/``injection_until``/``inbox_dependencies``/
``inbox_probe``/``default_entity`` call the same functions: one path, two
doors (as ``searchhandle`` does for ``search``). It stands where ``api``
stands (above ops; the faces may import it).

The audit runs with the cyclic collector paused, and resumes it as the very
last step before returning: the thousands of row copies it makes are the
answer, never cyclic garbage. A collection started while they are being made
(or by the first allocation after) would walk every one of them, and a face
that serializes the answer and drops it, as every face does, frees them
before the collector's next turn, so it never walks them at all.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import TYPE_CHECKING

from dovecote.handle.search import home_of
from dovecote.ops.context import Actor, Context
from dovecote.ops.mail import inbox as inbox_op
from dovecote.roster import cache as roster_cache
from dovecote.roster.home import Layout
from dovecote.util.osutil import pause_collector, resume_collector
from dovecote.verbs import Inbox, checked

if TYPE_CHECKING:
    from dovecote.ops.mail.inbox import InboxView


def open_context(root: str | os.PathLike[str] | None, *, actor: Actor | None = None) -> Context:
    """The context ``open_home(root, actor=actor)`` would build, without building the handle."""
    return Context.open(Layout(home_of(root)), actor=actor)


def default_entity(ctx: Context) -> str:
    """The entity a call that names none is about: the actor's, else the only one."""
    return inbox_op.default_entity(ctx)


def inbox_until(ctx: Context, v: Inbox, /, *, now: datetime | None = None) -> tuple[InboxView, datetime | None]:
    """The audit of one entity's inbox (``ops.mail.inbox.read_inbox``), and when it changes with no new letter."""
    v = checked(v)
    was = pause_collector()  # see the module docstring
    try:
        answer = inbox_op.read_inbox(ctx, v.entity_id, now=now, current=v.current_tic, direction=v.direction.value,
                                     include_terminal=v.include_terminal)
    finally:
        resume_collector(was)  # nothing allocated after this line: no collection before the caller holds the answer
    return answer


def injection_until(ctx: Context, v: Inbox, /, *, now: datetime | None = None) -> tuple[str, datetime | None]:
    """The injection block of ``inbox_until``'s view, without building the view (``ops.mail.inbox.read_injection``)."""
    v = checked(v)
    return inbox_op.read_injection(ctx, v.entity_id, v.current_tic, now, v.direction.value, v.include_terminal)


def dependencies(ctx: Context, entity_id: str) -> list[str]:
    """What an inbox reading of ``entity_id`` depends on besides its box, for a face's cached rendering."""
    return inbox_op.dependencies(ctx, entity_id)


def keep_roster(ctx: Context) -> None:
    """After a call that succeeded: keep the roster's TOML document for the next cold process (``roster_cache``)."""
    roster_cache.keep(ctx.layout, ctx.roster)


def probe(ctx: Context, entity_id: str) -> tuple[str, int, int] | None:
    """After an inbox reading: how a face checks, without this library, that the
    entity's box has had nothing appended since (``store.Probe``); None: it cannot."""
    return inbox_op.box_probe(ctx, entity_id)

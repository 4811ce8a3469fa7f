"""The /inbox lifecycle: everything that affects an item's state lives here.

Theory of operation. An inbound item is a ``message`` letter in an entity's
box. Its state is never stored: it is replayed from the lifecycle letters
(``claim``, ``complete``, ``defer``, ``undefer``, ``resurface``, ``nack``,
``seen``) that name it in ``ref``. Each of those links also names the link it
was based on in ``prev`` (the item id for the first), so an item's history is a
hash chain, exactly like a mission: the writer, under the box lock, derives the
head, checks the rule, and appends a link whose ``prev`` is that head.

When two links share a ``prev`` (two machines wrote concurrently and git merged
their ledgers) the chain forks. Replay then orders the siblings by (ts, id),
``ts`` read as an instant (``timeutil.order_key``, not as text), takes the
first one the table allows, and reports every other one as a
conflict: the same set of letters gives the same state on every machine,
whatever order they arrived in.

Time is part of the table: a DEFER becomes WAIT once its due tic or due time
has passed, at read time, with no background job and no letter. A link records
the tic and time it was written at, so replay knows whether the defer it
followed had already come due.

The table (``TRANSITIONS``)::

    WAIT   --claim-->  ACTIVE     WAIT   --defer--> DEFER    WAIT --nack--> NACK
    ACTIVE --complete-> DONE      ACTIVE --defer--> DEFER
    DEFER  --undefer|resurface--> WAIT
    seen: allowed in WAIT, ACTIVE, DEFER; it changes no state, it marks the item read.
    unseen: allowed where seen is; it changes no state, it marks the item unread again (a
    reader that wants it back in its unread list, as Gas City's ``mark-unread``). The read
    mark is the last of the two on the chain; archiving still needs the item seen.

DONE and NACK are terminal. WAIT --complete--> DONE is illegal. The rails
(``check_rails``) add what the table cannot say: complete and nack archive an
item, so it must have been seen; a query or directive that expects a response
cannot be completed before one has been sent to its sender (what counts is
``derive/responses.py``); a defer needs a due.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime
from enum import StrEnum
from typing import Any

import msgspec

from dovecote.errors import Refusal
from dovecote.model.letters import text_or_none
from dovecote.model.vocab import PRIORITIES, LetterKind
from dovecote.util.timeutil import order_key, parse_time


class State(StrEnum):
    WAIT = "WAIT"
    ACTIVE = "ACTIVE"
    DEFER = "DEFER"
    DONE = "DONE"
    NACK = "NACK"


TERMINAL = frozenset({State.DONE, State.NACK})
#: How far along the lifecycle a state is (two copies of one item: the further one speaks).
PROGRESS: dict[State, int] = {State.WAIT: 0, State.DEFER: 1, State.ACTIVE: 2, State.DONE: 3, State.NACK: 3}

K = LetterKind
#: state -> link kind -> new state. A missing entry is an illegal transition. Keyed by the one
#: vocabulary of kinds (``vocab.LetterKind``; ``vocab.MoveKind`` is its caller's part); a StrEnum
#: key is found by its text too, so a letter's ``kind`` (a plain str) looks it up as it is.
TRANSITIONS: dict[State, dict[str, State]] = {
    State.WAIT: {K.claim: State.ACTIVE, K.defer: State.DEFER, K.nack: State.NACK, K.seen: State.WAIT,
                 K.unseen: State.WAIT},
    State.ACTIVE: {K.complete: State.DONE, K.defer: State.DEFER, K.seen: State.ACTIVE, K.unseen: State.ACTIVE},
    State.DEFER: {K.undefer: State.WAIT, K.resurface: State.WAIT, K.seen: State.DEFER, K.unseen: State.DEFER},
    State.DONE: {},
    State.NACK: {},
}

#: Every verb the table knows (a letter of any other kind is not a lifecycle link), as plain text.
LINK_KINDS = frozenset(str(kind) for moves in TRANSITIONS.values() for kind in moves)

#: Verbs that archive an item, so the item must have been read first.
ARCHIVING = frozenset({K.complete, K.nack})

PRIORITY_RANK = {p: i for i, p in enumerate(PRIORITIES)}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Link(msgspec.Struct, frozen=True):
    """One lifecycle letter, decoded."""

    id: str
    kind: str
    ref: str
    prev: str
    ts: str
    agent: str
    tic: int | None = None
    until_tic: int | None = None
    until: str | None = None
    reason: str | None = None
    result_ref: str | None = None

    @classmethod
    def from_data(cls, lid: str, d: dict[str, Any]) -> Link:
        def s(k: str) -> str | None:
            return text_or_none(d.get(k))

        return cls(
            id=lid,
            kind=s("kind") or "",
            ref=s("ref") or "",
            prev=s("prev") or s("ref") or "",
            ts=s("ts") or "",
            agent=s("agent") or "",
            tic=_int(d.get("tic")),
            until_tic=_int(d.get("until_tic")),
            until=s("until"),
            reason=s("reason"),
            result_ref=s("result_ref"),
        )


class Replay(msgspec.Struct):
    """An item's state after replaying its chain (time not yet applied)."""

    state: State
    head: str
    seen: bool = False
    entered_ts: str | None = None
    entered_tic: int | None = None
    due_tic: int | None = None
    due_time: str | None = None
    applied: list[Link] = msgspec.field(default_factory=list)
    conflicts: list[tuple[Link, str]] = msgspec.field(default_factory=list)


def is_due(due_tic: int | None, due_time: str | None, tic: int | None, now: datetime | None) -> bool:
    """Has a defer come due at (tic, now)? Unknown clocks never make it due."""
    if due_tic is not None and tic is not None and tic >= due_tic:
        return True
    if due_time is not None and now is not None:
        t = parse_time(due_time)
        return t is not None and now >= t
    return False


def effective(r: Replay, tic: int | None, now: datetime | None) -> State:
    """The state at (tic, now): a DEFER whose due has passed reads as WAIT."""
    if r.state is State.DEFER and is_due(r.due_tic, r.due_time, tic, now):
        return State.WAIT
    return r.state


def next_state(state: State, kind: str) -> State | None:
    return TRANSITIONS[state].get(kind)


def apply_link(r: Replay, link: Link) -> bool:
    """Apply one link if the table allows it from the state at the link's time."""
    # the link's own time matters only to a DEFER with a due time (``is_due``): read it only then
    when = effective(r, link.tic, parse_time(link.ts)) if r.state is State.DEFER else r.state
    new = next_state(when, link.kind)
    if new is None:
        return False
    if link.kind == K.seen:
        r.seen = True
    elif link.kind == K.unseen:
        r.seen = False
    if when is not r.state:  # the defer had come due: WAIT began at the due
        r.entered_tic = r.due_tic if r.due_tic is not None else link.tic
        r.entered_ts = r.due_time or link.ts
    if new is not when:
        r.entered_ts, r.entered_tic = link.ts, link.tic
    r.state = new
    if link.kind == K.defer:
        r.due_tic, r.due_time = link.until_tic, link.until
    elif new is not State.DEFER:
        r.due_tic = r.due_time = None
    r.head = link.id
    r.applied.append(link)
    return True


def replay(
    item_id: str,
    initial: State,
    links: list[Link],
    *,
    entered_ts: str | None = None,
    entered_tic: int | None = None,
    due_tic: int | None = None,
) -> Replay:
    """Replay an item's links from its root; deterministic for any arrival order."""
    r = Replay(initial, item_id, entered_ts=entered_ts, entered_tic=entered_tic, due_tic=due_tic)
    children: dict[str, list[Link]] = {}
    for link in links:
        children.setdefault(link.prev, []).append(link)
    while True:
        siblings = children.pop(r.head, None)
        if not siblings:
            break
        if len(siblings) > 1:  # a fork (the common chain has one child per link: nothing to order)
            siblings.sort(key=lambda lk: (order_key(lk.ts), lk.id))
        winner = None
        for lk in siblings:
            if winner is None and apply_link(r, lk):
                winner = lk
            else:
                reason = "illegal_transition" if winner is None else "lost_fork"
                r.conflicts.append((lk, reason))
        if winner is None:
            break
    for rest in children.values():  # links hanging off a link that lost or never arrived
        r.conflicts.extend((lk, "orphan") for lk in rest)
    return r


def check_transition(state: State, kind: str, item_id: str) -> State:
    """The table check at write time; refuses with the stable keyword."""
    if kind not in LINK_KINDS:
        raise Refusal("illegal_transition", f"{kind!r} is not a lifecycle verb")
    new = next_state(state, kind)
    if new is None:
        if kind == K.claim and state is State.ACTIVE:
            raise Refusal("already_claimed", f"item {item_id} is already ACTIVE")
        raise Refusal("illegal_transition", f"{kind} is not allowed from {state} (item {item_id})")
    return new


def check_due(kind: str, item_id: str, until_tic: int | None, until: str | None) -> None:
    """A defer names its due (tic or time): a DEFER with no due is a dead end.

    The one rail that holds even for adopted history (``rails=False``).
    """
    if kind == K.defer and until_tic is None and until is None:
        raise Refusal("no_due", f"defer of {item_id} needs a due: --until-tic or --until (no dead ends)")


def check_rails(
    kind: str,
    item_id: str,
    *,
    seen: bool,
    response_required: bool,
    responded: bool,
    until_tic: int | None,
    until: str | None,
    response_to: str | None = None,
) -> None:
    """The rails the table cannot express; refuses with the stable keyword.

    ``responded`` is decided by ``derive/responses.py`` (delivered to
    ``response_to``, answering the item); this only names who is waiting.
    """
    check_due(kind, item_id, until_tic, until)
    if kind in ARCHIVING and not seen:
        raise Refusal("not_seen", f"item {item_id} must be marked seen before it is archived by {kind}")
    if kind == K.complete and response_required and not responded:
        raise Refusal(
            "response_required",
            f"item {item_id} expects a response sent to {response_to or 'its sender'} (a response, or a reply"
            f" in its thread, with --reply-to {item_id}); none has been delivered yet",
        )


# -- moves between states: pure functions of the table ---------------------------------

#: Verbs a move never means: ``seen`` and ``unseen`` change no state, ``resurface`` is time's, not a person's.
_NOT_MOVES = frozenset({K.seen, K.unseen, K.resurface})


def move_verb(src: State, dst: State) -> str | None:
    """The one verb that takes ``src`` to ``dst``, or None when no single verb does."""
    for kind, new in TRANSITIONS[src].items():
        if kind not in _NOT_MOVES and new is dst:
            return str(kind)
    return None


def steps_between(src: State, dst: State) -> list[str] | None:
    """The shortest chain of verbs from ``src`` to ``dst`` in the table, or None.

    A DEFER is never passed through on the way (it needs a due the tree did not
    give), so ACTIVE -> WAIT has no route: a hand move backwards is illegal.
    """
    if src is dst:
        return []
    seen = {src}
    todo: deque[tuple[State, list[str]]] = deque([(src, [])])
    while todo:
        state, path = todo.popleft()
        for kind, new in TRANSITIONS[state].items():
            if kind in _NOT_MOVES or new in seen:
                continue
            if new is dst:
                return [*path, str(kind)]
            if new is not State.DEFER:
                seen.add(new)
                todo.append((new, [*path, str(kind)]))
    return None

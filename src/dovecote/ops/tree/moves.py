"""Adopting a move a person made in a tree: one verb, through the verbs' own guarded path.

A folder is a state (``viewtree``), so an entry found in another folder than
the ledger's state is a request to move the item. An item dovecote already
knows (an entry of its own view, or one imported before) is moved exactly as
the verb would move it: the one verb of the table that takes the ledger's state
to the tree's, run by ``mail.transition`` with the rails on, under the box lock
(CAS). So a hand move obeys ``illegal_transition``, ``not_seen``,
``response_required`` and ``no_due`` like a typed command, and a refusal is
reported, never forced: moving ``inbound/WAIT_x`` to ``archive/`` is WAIT ->
DONE, which no verb does (notes A3: tic 312 forced 28 unclaimed items to DONE).

Only the first import of a foreign tree adopts states several verbs away
(``lifecycle.steps_between``), without the rails: that tree's states are its own tool's truth.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dovecote.derive.lifecycle import State, move_verb, steps_between
from dovecote.errors import Refusal
from dovecote.model.letters import text_or_none
from dovecote.model.vocab import LetterKind
from dovecote.ops.mail import send as mail

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: The lifecycle field that carries the reason of each adopted verb.
REASON_KEY = {"nack": "nack_reason", "defer": "defer_reason", "complete": "completion_note"}
#: The marker every adopted link carries.
ADOPTED = {"adopted": "inbox-tree"}
def due_of(lc: dict[str, Any]) -> int | None:
    """The due tic a tree gives a DEFER (``reminder_tic``, else ``defer_until_tic``)."""
    for key in ("reminder_tic", "defer_until_tic"):
        v = lc.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return v
    return None


def reason_for(kind: str, lc: dict[str, Any]) -> str | None:
    return text_or_none(lc.get(REASON_KEY.get(kind, "")))


def adopt_move(
    ctx: Context, entity_id: str, iid: str, ledger: State, want: State, lc: dict[str, Any], tic: int | None
) -> mail.Transition:
    """Make the move ``ledger`` -> ``want`` of a known item as its verb would; raises the verb's Refusal."""
    kind = move_verb(ledger, want)
    if kind is None:
        steps = steps_between(ledger, want)
        hint = f"; the verbs go {' then '.join(steps)}, one at a time" if steps else ""
        raise Refusal("illegal_transition", f"{ledger} -> {want} is not one move of the lifecycle (item {iid}){hint}")
    return mail.transition(
        ctx, entity_id, iid, kind, rails=True, extra=dict(ADOPTED), current=tic, actor=entity_id,
        until_tic=due_of(lc) if kind == LetterKind.defer else None, reason=reason_for(kind, lc),
    )

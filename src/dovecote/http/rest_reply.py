"""``POST /api/v1/entities/{entity_id}/items/{ref}/replies``: a reply to an item, as a token writes it.

Law: a reply is a send (the ``Send`` verb, one definition) that names the item
it answers; the route reads the item (the rule's ``show``: an agent only in its
own box) and sends with the item's thread kept and, for a message, the item's
whole id as ``reply_to``; a task goes into the same thread with its ack policy.
It is the API's twin of the Human View's reply form (``pages_write``), and it
follows the API's one rule, never the person's session: the reply is the box
owner's answer to its item (its sender is ``entity_id`` unless the body names
one), so, as for a move, an agent's token replies only in its own box
(``forbidden`` elsewhere) and an operator's in any (an operator may write as
another sender: ``remote.as_self``), each at most its role's trust level.
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from dovecote import verbs
from dovecote.handle import remote
from dovecote.handle.api import Dovecote, Principal

__all__ = ["Reply", "reply"]


class Reply(verbs.Send, frozen=True, kw_only=True):
    """A ``Send`` that answers item ``ref`` of ``entity_id``'s box (its thread and ``reply_to`` are the item's)."""

    entity_id: Annotated[verbs.limits.Id, Meta(description="Whose box holds the item answered.")]
    ref: Annotated[verbs.limits.Id, Meta(description="The item answered: its id or a unique prefix.")]


def reply(dc: Dovecote, p: Principal | None, v: Reply) -> Any:
    """Read the item under the rule, then send ``v`` in its thread (see the module docstring)."""
    shown = remote.show(dc, remote.writer(p, "send"), verbs.Show(entity_id=v.entity_id, ref=v.ref))
    item = str(shown.item["id"])
    fields: dict[str, Any] = {name: getattr(v, name) for name in verbs.Send.__struct_fields__}
    fields["sender"] = v.sender or v.entity_id  # the box's owner answers its item (compose finds it in its box)
    fields["thread_id"] = shown.envelope.thread_id or item
    if v.type == "message":
        fields["reply_to"] = item
    return remote.send(dc, p, verbs.Send(**fields))

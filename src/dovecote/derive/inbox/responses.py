"""The response rail: does a response to an item exist?

An item that expects a response (a query or a directive, unless sent with
``response_expected: false``) cannot be completed before one exists. A letter
that merely refers to the item is not one: a note to self, an FYI to a third
party, or a draft that was never sent would let an item be archived while its
sender still waits. So a response counts only when

* it was delivered: it is a ``message`` in the box of the one it answers (a
  draft lives in its author's box, so it never counts);
* it is addressed to the item's sender, or to the entity the item names in
  ``routing.reply_to`` as ``entity:<id>`` (a redirect: "answer to them");
* it answers the item: its ``routing.reply_to`` names the item (by letter id or
  by the item's ``message_id``), and it is a ``response`` or a reply that stays
  in the item's thread.

Pure: the caller hands over the fold of the box the response must be in.
"""

from __future__ import annotations

from dovecote.derive.inbox.book import InboxBook, Item
from dovecote.model.envelope import Envelope

#: ``routing.reply_to`` may name, instead of the letter an item answers, the
#: entity a response to it must go to, in the box address form.
REDIRECT = "entity:"


def response_to(env: Envelope) -> str | None:
    """Whom a response to this item must be addressed to: the entity its
    ``reply_to`` names (a redirect), else its sender."""
    reply_to = env.reply_to
    if reply_to is not None and reply_to.startswith(REDIRECT) and len(reply_to) > len(REDIRECT):
        return reply_to[len(REDIRECT):]
    return env.sender


def answers(item: Item, reply: Item, target: str) -> bool:
    """Does ``reply``, a message delivered into ``target``'s box, answer ``item``?"""
    e = reply.env
    if e.reply_to is None or e.reply_to not in (item.id, item.env.message_id) or e.recipient != target:
        return False
    return e.category == "response" or (item.env.thread_id is not None and e.thread_id == item.env.thread_id)


def responses(target_book: InboxBook, item: Item) -> list[Item]:
    """The responses to ``item`` delivered into ``target_book`` (the box of
    ``response_to(item.env)``; the item itself may live in any box)."""
    target = response_to(item.env)
    if target is None or target_book.entity != target:
        return []
    names = [item.id, *([item.env.message_id] if item.env.message_id else [])]
    found = [target_book.items[rid] for name in names for rid in target_book.replies.get(name, ())]
    return [r for r in found if answers(item, r, target)]

"""An item's thread read as a conversation: every letter oldest first, with its sender, time and body, and
the thread's state (open or closed, and whom it waits on).

Law: nothing here is a new read of the ledgers. The conversation is built from
the answers of ``show`` (``GET /api/v1/entities/{entity_id}/items/{ref}``): the
item's own, and one for each letter of its thread the reader may open, asked
through ``remote`` with the request's principal (the one rule: an agent token
opens its own box alone), so a reply sent into another box shows its body only
to a reader of that box, and otherwise shows as sent, without its body.
A body's quoted history (the lines that start with ``>``, and the "... wrote:"
line before them) is set apart so the page can fold it away.
"""

from __future__ import annotations

import re
from typing import Any

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle import remote
from dovecote.handle.api import Dovecote, Principal

#: The lifecycle states in which the item still waits on its recipient.
OPEN = ("WAIT", "ACTIVE", "DEFER")
#: The line that introduces a quote ("On Monday, ent_a wrote:").
INTRO = re.compile(r"^.{0,200}\bwrote:\s*$")


def split_quote(body: str) -> tuple[str, str]:
    """A body as (what the letter says, its quoted history): the quote is the trailing run of ``>`` lines (with
    blank lines among them and the intro line before them); a body with no such run has no quote."""
    lines = body.splitlines()
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    start = end
    while start and (lines[start - 1].startswith(">") or (not lines[start - 1].strip() and start < end)):
        start -= 1
    while start < end and not lines[start].strip():
        start += 1
    if start == end or not any(line.startswith(">") for line in lines[start:end]):
        return body, ""
    if start and INTRO.match(lines[start - 1]):
        start -= 1
    return "\n".join(lines[:start]).rstrip(), "\n".join(lines[start:end])


def _letter(shown: dict[str, Any], entity_id: str, *, this: bool = False) -> dict[str, Any]:
    text, quote = split_quote(shown["body"])
    item = shown["item"]
    return {"id": item["id"], "sender": item.get("sender"), "to": entity_id, "subject": item.get("subject"),
            "created_at": item.get("created_at"), "body": text, "quote": quote, "this": this,
            "href": f"/entities/{entity_id}/items/{item['id']}", "direction": "inbound",
            "reply_to": (shown.get("envelope") or {}).get("reply_to")}


def _opened(dc: Dovecote, who: Principal | None, entity_id: str, ref: str) -> dict[str, Any] | None:
    """``show``'s answer for a letter of the thread, or None when the reader may not open it (or it is gone)."""
    if not remote.may(who, "show", entity_id):
        return None
    try:
        found: dict[str, Any] = remote.show(dc, who, verbs.Show(entity_id=entity_id, ref=ref)).to_dict()
    except Refusal:
        return None
    return found


def _depth(letter: dict[str, Any], letters: list[dict[str, Any]]) -> int:
    """How many replies deep ``letter`` is among ``letters`` (its ``reply_to`` chain): times are to the second,
    so within one second an answer still reads after what it answers."""
    by_id = {x["id"]: x for x in letters if x.get("id")}
    depth, seen = 0, set()
    while (parent := by_id.get(letter.get("reply_to") or "")) is not None and parent["id"] not in seen:
        seen.add(parent["id"])
        letter, depth = parent, depth + 1
    return depth


def conversation(dc: Dovecote, who: Principal | None, entity_id: str, shown: dict[str, Any]) -> dict[str, Any]:
    """The item's thread as a conversation (see the module docstring): ``letters`` oldest first, and ``state``."""
    letters = [_letter(shown, entity_id, this=True)]
    for t in shown["thread"]:
        if t["direction"] == "inbound" and t.get("id"):
            opened = _opened(dc, who, entity_id, t["id"])
            if opened is not None:
                letters.append(_letter(opened, entity_id))
                continue
        to = t.get("to") or entity_id
        opened = _opened(dc, who, to, t["id"]) if t["direction"] == "outbound" and t.get("id") else None
        if opened is not None:
            letters.append({**_letter(opened, to), "direction": "outbound"})
        else:
            letters.append({"id": t.get("id"), "sender": t.get("sender") or (entity_id if t["direction"] ==
                            "outbound" else None), "to": to, "subject": t.get("subject"),
                            "created_at": t.get("created_at"), "body": None, "quote": "", "this": False,
                            "href": None, "direction": t["direction"], "reply_to": t.get("reply_to")})
    depth = {id(x): _depth(x, letters) for x in letters}  # before sorting: a list being sorted reads as empty
    letters.sort(key=lambda x: (x["created_at"] or "", depth[id(x)], x["id"] or ""))
    state = shown["item"]["state"]
    last = letters[-1]
    if state not in OPEN:
        waiting = None
    elif last["direction"] == "outbound":
        waiting = last["to"]  # the last word was this box's reply: the other side answers next
    else:
        waiting = entity_id
    return {"letters": letters, "open": state in OPEN, "waiting_on": waiting, "state": state}

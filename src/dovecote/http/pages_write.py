"""The Human View's writes: a person composes, replies, and replies with a task.

Law: a person writes as ``human.<name>`` (``pages.person_actor``), with the
person's role, whose trust cap (``credentials.TRUST_CAP``) is the one level no
token's role reaches: ``human``. Only the signed-in session writes here
(``Pages.signed_in_pairs``: no bearer token, the session's CSRF token, same
origin); a token writes the same letters through the API's routes, under the
API's rule (``POST /api/v1/entities/{recipient}/messages`` for one recipient,
``POST /api/v1/messages`` for a broadcast, ``rest_reply``'s route for a reply
or a task in an item's thread), never here.

- ``GET /compose``: the form (``?to=``, ``?subject=``, ``?type=task`` and
  ``?thread=`` fill it in: a case's page links here for a task about the case).
- ``POST /compose``: one letter per recipient, to the ones ticked, or to every
  registered entity (``to_all``, as the API's broadcast); then the page of the
  first recipient's item (or, for a broadcast, the overview).
- ``POST /entities/{entity_id}/items/{ref}/reply``: a reply in the item's
  thread (its ``thread_id`` kept, its id as ``reply_to``), to the item's sender
  by default; ``type=task`` makes it a task in the same thread with an ack
  policy (``ack_minutes``), which the delivery trackers then follow.

Each write answers with the new state: a redirect (303) to the page that
shows it, or, for ``Accept: application/json`` (a script's fetch), the send's
own JSON answer. A refusal is the error page (or JSON) with its keyword.
"""

from __future__ import annotations

import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle import remote
from dovecote.handle.api import Dovecote
from dovecote.http import inputs, rest
from dovecote.http.pages import ENV, Pages, person_actor, render

__all__ = ["TYPES", "ComposeParams", "compose_view", "endpoints"]

#: What a person's letter may be: a message, or a task (a response answers a task: an agent's work).
TYPES = ("message", "task")
#: The ack policy a page's task gets unless the form says otherwise: ack within this many minutes.
ACK_MINUTES = 30


# the choices of the letter form (templates/write.html), wherever it shows: compose, and an item's reply
ENV.globals.update(priorities=[str(p) for p in verbs.Priority], categories=[str(c) for c in verbs.Category],
                   ack_minutes=ACK_MINUTES)


class ComposeParams(rest.Params):
    """What fills in the compose form (every field optional)."""

    to: str | None = None
    subject: str = ""
    type: str = "message"
    thread: str | None = None


def compose_view(dc: Dovecote, p: ComposeParams) -> dict[str, Any]:
    """The compose form's choices: the registered entities and the vocabularies a letter takes."""
    return {"entities": dc.entities(), "to": p.to, "subject": p.subject,
            "type": p.type if p.type in TYPES else "message", "thread": p.thread}


def _letter(form: dict[str, str], thread: str | None) -> dict[str, Any]:
    """The fields every person's letter takes from a form: subject, body, priority, category or the task's
    ack policy, and the thread it belongs to."""
    raw: dict[str, Any] = {"subject": form.get("subject", "").strip(), "body": form.get("body", ""),
                           "priority": form.get("priority") or "normal",
                           "trust_level": verbs.TrustLevel.human.value}
    if thread:
        raw["thread_id"] = thread
    kind = form.get("type") or "message"
    if kind not in TYPES:
        raise Refusal("invalid_field", f"type: {kind!r} is not one of {', '.join(TYPES)}")
    if kind == "task":
        minutes = form.get("ack_minutes") or str(ACK_MINUTES)
        if not minutes.isdigit() or not 1 <= int(minutes) <= 7 * 24 * 60:
            raise Refusal("invalid_field", f"ack_minutes: {minutes!r} is not a whole number of minutes (1 to a week)")
        raw |= {"type": "task", "work_item_id": f"wi_{secrets.token_hex(6)}", "ack_timeout": int(minutes) * 60}
    else:
        raw["category"] = form.get("category") or "notification"
    return raw


def _answer(request: Request, sent: list[dict[str, Any]], where: str) -> Response:
    """The new state: the send's JSON for a script, else a redirect to the page that shows it."""
    if "application/json" in request.headers.get("accept", ""):
        return rest.json_response({"sent": sent, "location": where}, 201)
    return RedirectResponse(where, status_code=303)


def endpoints(pages: Pages) -> tuple[Any, Any, Any]:
    """The compose form (GET ``/compose``), its send (POST ``/compose``) and a reply (POST ``.../reply``)."""

    def send_each(dc: Dovecote, person: str, letters: list[verbs.Send]) -> list[dict[str, Any]]:
        actor = person_actor(person)
        return [dc.send(v, actor=actor).to_dict() for v in letters]

    async def form(request: Request) -> Response:
        p = rest.parse(ComposeParams, request)
        return render(request, pages.sessions, "compose.html", **await pages.run(compose_view, p))

    async def compose(request: Request) -> Response:
        person, pairs = await pages.signed_in_pairs(request)
        fields = dict(pairs)
        to = [v for k, v in pairs if k == "to" and v]
        raw = _letter(fields, fields.get("thread_id") or None)
        if fields.get("to_all"):
            letters = [inputs.convert(verbs.Send, {**raw, "to_all": "true"})]
        elif to:
            letters = [inputs.convert(verbs.Send, {**raw, "recipient": r}) for r in dict.fromkeys(to)]
        else:
            raise Refusal("missing_field", "choose at least one recipient, or everyone")
        remote.refuse_if_read_only("send", letters[0], pages.read_only)
        known = {e.id for e in await pages.run(lambda dc: dc.entities())}
        unknown = [v.recipient for v in letters if v.recipient is not None and v.recipient not in known]
        if unknown:  # checked for all before the first is sent: a letter to several goes to all or none
            raise Refusal("unknown_recipient", f"{', '.join(unknown)} is not a registered entity")
        sent = await pages.run(send_each, person, letters)
        first = letters[0].recipient
        return _answer(request, sent, f"/entities/{first}/items/{_delivered(sent[0])}" if first else "/")

    async def reply(request: Request) -> Response:
        person, pairs = await pages.signed_in_pairs(request)
        fields = dict(pairs)
        entity_id, ref = request.path_params["entity_id"], request.path_params["ref"]
        shown = await pages.run(lambda dc: dc.show(verbs.Show(entity_id=entity_id, ref=ref)))
        raw = _letter(fields, shown.envelope.thread_id or shown.item["id"])
        if raw.get("type") != "task":
            raw["reply_to"] = shown.item["id"]
        raw["recipient"] = fields.get("to") or shown.envelope.sender or entity_id
        v = inputs.convert(verbs.Send, raw)
        remote.refuse_if_read_only("send", v, pages.read_only)
        sent = await pages.run(send_each, person, [v])
        return _answer(request, sent, f"/entities/{entity_id}/items/{shown.item['id']}")

    return form, compose, reply


def _delivered(answer: dict[str, Any]) -> str:
    """The letter id of a send's first delivery (a message's ``Delivery``, or a ``Sent``'s first row)."""
    rows = answer.get("deliveries")
    return str(rows[0]["id"] if rows else answer["id"])

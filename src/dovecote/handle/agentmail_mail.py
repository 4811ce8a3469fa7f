"""The agent-mail profile's mail calls: send, reply, fetch, read, acknowledge and search, over dovecote's verbs.

Law: every call is made through ``remote`` with the caller's principal
(``agentmail.caller``), so an agent sends as itself and reads, marks and
searches only its own inbox, as on every other face. How their notions map:

- A message is a dovecote message letter; each recipient (``to``, ``cc`` and
  ``bcc`` alike: dovecote has no carbon copies) gets its own letter, so each
  delivery has its own id. Their integer ids are the letter ids read as
  integers (``names.int_id``); ``message_id`` arguments go back the same way.
- ``importance`` is the letter's priority (the same four words);
  ``ack_required`` is ``response_expected``; ``topic`` and attachments are not
  kept (``unsupported``; an attachment path would read a file on the server:
  ``server_file``).
- Read is the ``seen`` move; acknowledged is ``claim`` (the recipient took it
  up): ``acknowledge_message`` marks it seen first if it was not. The first
  move's time is the answer's, every time after (their first-write-wins).
"""

from __future__ import annotations

from typing import Any

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle import remote
from dovecote.handle.agentmail import agent_entity, caller, find_project, iso
from dovecote.handle.api import Delivery, Dovecote, Principal
from dovecote.model.letters import format_ts
from dovecote.model.vocab import PRIORITIES, MoveKind, Priority
from dovecote.ops.agentmail import names
from dovecote.roster.config import Project
from dovecote.util.timeutil import parse_time

#: The most rows a fetch answers (theirs caps at 1,000 too).
MAX_FETCH = 1000
#: The longest subject kept (theirs cuts at 200).
SUBJECT = 200


def _recipients(dc: Dovecote, project: Project, a: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, entity) of each recipient named in to, cc and bcc, in that order; the unknown ones refused together."""
    out, unknown = [], []
    for kind in ("to", "cc", "bcc"):
        for name in a.get(kind) or ():
            if "@" in name or name.startswith("project:"):
                raise Refusal("unsupported", f"{name!r} names another project: cross-project sends are not "
                                             "supported (register the agent in this project)")
            found = dc.roster.entity_like(names.entity_id(project.name, name))
            if found is None:
                unknown.append(name)
            else:
                out.append((kind, found.id))
    if unknown:
        raise Refusal("unknown_recipient", f"Unable to send message — local recipients {', '.join(unknown)} are not "
                                           f"registered in project '{project.root}'")
    return out


def _refuse_unkept(a: dict[str, Any]) -> None:
    if a.get("topic"):
        raise Refusal("unsupported", "topic is not kept by dovecote; send without it (thread_id groups messages)")
    if a.get("attachment_paths"):
        raise Refusal("server_file", "attachment_paths would read files on the server; put what matters in body_md")


def _deliver(dc: Dovecote, p: Principal | None, project: Project, sender: str, a: dict[str, Any],
             subject: str, reply_to: str | None = None) -> dict[str, Any]:
    """One letter per recipient through ``remote.send``; their send result."""
    targets = _recipients(dc, project, a)
    importance = a.get("importance") or "normal"
    if importance not in PRIORITIES:
        raise Refusal("invalid_field", f"importance must be one of {', '.join(PRIORITIES)}, not {importance!r}")
    deliveries = []
    thread = a.get("thread_id")
    now = iso(format_ts(dc.context.now()))
    for _, to in targets:
        v = verbs.Message(recipient=to, subject=subject[:SUBJECT], body=a["body_md"], sender=sender,
                          priority=Priority(importance), thread_id=thread, reply_to=reply_to,
                          response_expected=bool(a.get("ack_required")))
        d = remote.send(dc, p, v)
        assert isinstance(d, Delivery)  # a plain message answers its one delivery
        thread = thread or d.thread_id  # every recipient's copy in one thread
        deliveries.append({"project": project.root, "payload": {
            "id": names.int_id(d.id), "project_id": names.hashed_int(project.name),
            "sender_id": names.hashed_int(sender), "thread_id": d.thread_id, "topic": None, "subject": v.subject,
            "importance": v.priority, "ack_required": bool(v.response_expected), "created_ts": now,
            "attachments": [], "body_md": v.body, "to": list(a.get("to") or ()), "cc": list(a.get("cc") or ()),
            "bcc": list(a.get("bcc") or ()), "from": _name(sender)}})
    return {"deliveries": deliveries, "count": len(deliveries), "verified_sender": True}


def _name(entity: str) -> str:
    split = names.split_entity(entity)
    return split[1] if split else entity


def send_message(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> dict[str, Any]:
    _refuse_unkept(a)
    project = find_project(dc, a["project_key"])
    p = caller(dc, conn, a.get("sender_token"))
    sender = agent_entity(dc, project, a["sender_name"])
    return _deliver(dc, p, project, sender, a, a["subject"])


def reply_message(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> dict[str, Any]:
    """A reply in the original's thread, to its sender by default; the original must be in the replier's inbox."""
    project = find_project(dc, a["project_key"])
    p = caller(dc, conn, a.get("sender_token"))
    sender = agent_entity(dc, project, a["sender_name"])
    ref = names.letter_id(a["message_id"])
    original = _shown(dc, p, sender, ref, a)
    prefix = a.get("subject_prefix") or "Re:"
    subject = original.envelope.subject
    if not subject.lower().startswith(prefix.lower()):
        subject = f"{prefix} {subject}"
    if not (a.get("to") or a.get("cc") or a.get("bcc")):
        a = {**a, "to": [_name(original.envelope.sender or "")]}
    sent = _deliver(dc, p, project, sender, a, subject, reply_to=ref)
    first = sent["deliveries"][0]["payload"] if sent["deliveries"] else {}
    return {**first, "reply_to": a["message_id"], **sent}


def _shown(dc: Dovecote, p: Principal | None, entity: str, ref: str, a: dict[str, Any]) -> Any:
    """The item ``ref`` in ``entity``'s inbox; their not-found sentence for a letter that is not there."""
    try:
        return remote.show(dc, p, verbs.Show(entity_id=entity, ref=ref))
    except Refusal as e:
        if e.reason not in ("unknown_letter", "not_found", "ambiguous_name"):
            raise
        name = a.get("agent_name") or a.get("sender_name")
        raise Refusal(e.reason, f"Message '{a['message_id']}' not found or not visible to agent '{name}' in "
                                f"project '{a['project_key']}'") from None


def _reader(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> tuple[Principal | None, str]:
    project = find_project(dc, a["project_key"])
    return caller(dc, conn, a.get("registration_token")), agent_entity(dc, project, a["agent_name"])


def _rows(dc: Dovecote, p: Principal | None, entity: str) -> list[dict[str, Any]]:
    """Every inbound item of ``entity``'s inbox (done ones too), through the one rule."""
    view = remote.inbox(dc, p, verbs.Inbox(entity_id=entity, include_terminal=True))
    return list(view.items or ())


def fetch_inbox(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> list[dict[str, Any]]:
    """Their inbox rows, newest first; reading changes nothing."""
    limit = int(a.get("limit") or 0) if a.get("limit") is not None else 20
    if limit < 1:
        raise Refusal("invalid_field", "limit must be at least 1")
    since = None
    if a.get("since_ts"):
        since = parse_time(a["since_ts"])
        if since is None:
            raise Refusal("invalid_field", f"Invalid since_ts format: {a['since_ts']!r}")
    if a.get("topic"):
        return []  # no letter here carries a topic
    p, entity = _reader(dc, conn, a)
    rows = [r for r in _rows(dc, p, entity)
            if not (a.get("urgent_only") and r["priority"] not in ("high", "urgent"))
            and not (since is not None and ((t := parse_time(r["created_at"])) is None or t <= since))]
    rows.sort(key=lambda r: (r["created_at"] or "", r["id"]), reverse=True)
    out = []
    for r in rows[:min(limit, MAX_FETCH)]:
        row = _row(dc, r)
        if a.get("include_bodies"):
            row["body_md"] = remote.show(dc, p, verbs.Show(entity_id=entity, ref=r["id"])).body
        out.append(row)
    return out


def _row(dc: Dovecote, r: dict[str, Any]) -> dict[str, Any]:
    return {"id": names.int_id(r["id"]), "project_id": _project_id(r), "sender_id": names.hashed_int(r["sender"] or ""),
            "thread_id": r["thread_id"], "topic": None, "subject": r["subject"], "importance": r["priority"],
            "ack_required": bool(r["response_expected"]), "created_ts": iso(r["created_at"]), "attachments": [],
            "from": _name(r["sender"] or ""), "kind": "to"}


def _project_id(r: dict[str, Any]) -> int | None:
    split = names.split_entity(r["sender"] or "")
    return names.hashed_int(split[0]) if split else None


def _first(shown: Any, kind: str) -> str | None:
    return next((iso(h.ts) for h in shown.history if h.kind == kind and h.applied), None)


def _move(dc: Dovecote, p: Principal | None, entity: str, ref: str, kind: MoveKind) -> None:
    try:
        remote.move(dc, p, verbs.Move(kind=kind, entity_id=entity, ref=ref))
    except Refusal as e:
        if e.reason not in ("illegal_transition", "already_claimed"):  # another call made it meanwhile
            raise


def _marked(dc: Dovecote, conn: Principal | None, a: dict[str, Any], *, claim: bool) -> Any:
    """The message after marking it seen (and, with ``claim``, claimed) unless it was already; shown again."""
    p, entity = _reader(dc, conn, a)
    ref = names.letter_id(a["message_id"])
    shown = _shown(dc, p, entity, ref, a)
    if not shown.item["seen"]:
        _move(dc, p, entity, ref, MoveKind.seen)
    if claim and _first(shown, "claim") is None and shown.item["state"] == "WAIT":
        _move(dc, p, entity, ref, MoveKind.claim)
    return _shown(dc, p, entity, ref, a)


def mark_message_read(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> dict[str, Any]:
    shown = _marked(dc, conn, a, claim=False)
    return {"message_id": a["message_id"], "read": True, "read_at": _first(shown, "seen")}


def acknowledge_message(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> dict[str, Any]:
    shown = _marked(dc, conn, a, claim=True)
    return {"message_id": a["message_id"], "acknowledged": _first(shown, "claim") is not None,
            "acknowledged_at": _first(shown, "claim"), "read_at": _first(shown, "seen")}


def search_messages(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> list[dict[str, Any]]:
    """Full-text search of the agent's inbox (``agent_name``, else the caller's own), best first as dovecote ranks."""
    project = find_project(dc, a["project_key"])
    p = caller(dc, conn, a.get("registration_token"))
    if a.get("agent_name"):
        entity = agent_entity(dc, project, a["agent_name"])
    elif p is not None and p.role != "operator":
        entity = p.entity
    else:
        raise Refusal("missing_field", "agent_name: whose messages to search")
    query = str(a["query"]).strip()
    if not query or query in ("*", "AND"):
        return []
    found = remote.search(dc, p, verbs.Search(query=query, entity_id=entity, include_terminal=True,
                                              limit=int(a.get("limit") or 20)))
    rows = {r["id"]: r for r in _rows(dc, p, entity)}
    out = []
    for m in found.matches:
        r = rows.get(m.id)
        out.append({"id": names.int_id(m.id), "subject": m.subject, "importance": r["priority"] if r else "normal",
                    "ack_required": int(bool(r and r["response_expected"])), "created_ts": iso(m.ts),
                    "thread_id": r["thread_id"] if r else None, "from": _name(m.sender or "")})
    return out

"""What an mcp_agent_mail database becomes in dovecote: the plan ``import agent-mail`` writes.

Law: a function of the rows alone (``archive_read``), never of the clock or of
this machine's boxes, so every letter it builds has the same content id on
every run: a second import appends nothing, and one killed midway is
completed by the next. Names follow ``names`` (the agent-mail profile's one
rule), so an imported agent's profile calls see its mail. What maps to what:

- a project row is the roster project named ``slugify(human_key)``, its root
  the human key (an absolute path; whether it is a folder here is reported);
- an agent row is the entity ``<slug>.<Name>`` and a profile letter in its box
  (``profiles.KIND``) at its inception time, and one more at its last active
  time when that is later; a retired agent's profile letters carry
  ``retired_at`` (it stays registered: theirs still read their mail); an
  agent their fork made inactive (``is_active`` 0) is retired at its
  ``deleted_ts``;
- a message row is one message letter per recipient row, in that recipient's
  box (to, cc and bcc alike, the lists kept as they were in the envelope's
  ``agentmail`` block with its id, topic, importance, attachments' metadata
  and created time); importance is the priority, ack_required is
  ``response_expected``; the thread is ``thread_id``, else the message's own
  id (their replies to a thread-less message name it so);
- a recipient's ``read_ts`` is a ``seen`` link at that time, its ``ack_ts`` a
  ``claim`` link after it (what the profile's acknowledge_message writes);
- a file reservation is a ``lease`` letter in the project's box at its
  created time with its expiry, and a ``lease_release`` at ``released_ts``.

A row that cannot be imported is named with a reason keyword (``invalid_field``:
malformed; ``unknown_entity``: an agent the database lacks; ``unknown_project``;
``unsupported``: a sender of another project), never dropped silently.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from dovecote.errors import Refusal
from dovecote.model.addresses import Address, entity, project
from dovecote.model.envelope import SUBJECT_MAX, build_message
from dovecote.model.letters import canonical_line, letter_id
from dovecote.model.vocab import PRIORITIES, LetterKind
from dovecote.ops.agentmail import names, profiles
from dovecote.ops.agentmail.archive_read import TABLES, Archive
from dovecote.ops.leases.take import normal_globs
from dovecote.util.timeutil import format_ts, parse_time

#: The marker every imported letter carries, so a reader can tell them from letters written here.
MARK = "agent-mail"
KINDS = ("to", "cc", "bcc")
#: Attachment fields kept (an inline attachment's bytes are not: the metadata is what an envelope carries).
DROPPED = frozenset({"data_base64"})


@dataclass(frozen=True, slots=True)
class Skipped:
    """A row not imported, and why: its table, its key, a reason keyword and a sentence."""

    table: str
    key: str
    reason: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"table": self.table, "key": self.key, "reason": self.reason, "detail": self.detail}


@dataclass(slots=True)
class Plan:
    """The projects and entities an import registers, the letters it appends (box, line), and its accounting."""

    projects: dict[str, str] = field(default_factory=dict)  # slug -> root
    entities: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    letters: list[tuple[Address, bytes]] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    imported: Counter[str] = field(default_factory=Counter)
    skipped: list[Skipped] = field(default_factory=list)

    def add(self, where: Address, obj: dict[str, Any]) -> str:
        line = canonical_line(obj)
        self.letters.append((where, line))
        self.kinds[str(obj.get("kind"))] += 1
        return letter_id(line)

    def skip(self, table: str, key: object, reason: str, detail: str) -> None:
        self.skipped.append(Skipped(table, str(key), reason, detail))


def _ts(value: object) -> str | None:
    t = parse_time(value)
    return format_ts(t) if t is not None else None


class _Bad(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def _need_ts(row: dict[str, Any], col: str) -> str:
    ts = _ts(row[col])
    if ts is None:
        raise _Bad("invalid_field", f"{col} {row[col]!r} is not a time")
    return ts


def plan(archive: Archive) -> Plan:
    """The plan for ``archive`` (see the module doc); the roster is not consulted: registering is the writer's."""
    p = Plan()
    rows = archive.rows
    slugs = _projects(p, rows["projects"])
    agents = _agents(p, rows["agents"], slugs)
    by_message: dict[int, list[dict[str, Any]]] = {}
    for r in rows["message_recipients"]:
        by_message.setdefault(r["message_id"], []).append(r)
    for m in rows["messages"]:
        _message(p, m, slugs, agents, by_message.pop(m["id"], []))
    for mid, left in by_message.items():
        for r in left:
            p.skip("message_recipients", f"{mid}/{r['agent_id']}", "unknown_letter",
                   f"recipient row of message {mid}, which the database lacks")
    for r in rows["file_reservations"]:
        try:
            _reservation(p, r, slugs, agents)
        except _Bad as e:
            p.skip("file_reservations", r["id"], e.reason, e.detail)
    return p


def _projects(p: Plan, rows: list[dict[str, Any]]) -> dict[int, tuple[str, str]]:
    out: dict[int, tuple[str, str]] = {}
    for r in rows:
        key = r["human_key"]
        if not isinstance(key, str) or not key.startswith("/"):
            p.skip("projects", r["id"], "invalid_field", f"human_key {key!r} is not an absolute path")
            continue
        root = os.path.normpath(key)
        slug = names.slugify(root)
        out[r["id"]] = (slug, root)
        p.projects.setdefault(slug, root)
        p.imported["projects"] += 1
    return out


def _agents(p: Plan, rows: list[dict[str, Any]], slugs: dict[int, tuple[str, str]]) -> dict[int, tuple[str, str]]:
    """Agent id -> (entity, project slug); each agent's profile letters planned."""
    out: dict[int, tuple[str, str]] = {}
    for r in rows:
        try:
            if r["project_id"] not in slugs:
                raise _Bad("unknown_project", f"agent {r['name']!r} names project {r['project_id']}, "
                                              "which the database lacks")
            slug, root = slugs[r["project_id"]]
            try:
                eid = names.entity_id(slug, str(r["name"]))
            except Refusal as e:
                raise _Bad(e.reason, e.detail) from None
            born = _need_ts(r, "inception_ts")
        except _Bad as e:
            p.skip("agents", r["id"], e.reason, e.detail)
            continue
        out[r["id"]] = (eid, slug)
        p.entities.append(eid)
        p.imported["agents"] += 1
        fields = {"entity": eid, "project": slug, "human_key": root, "name": str(r["name"]),
                  "program": str(r["program"]), "model": str(r["model"]),
                  "task_description": str(r["task_description"] or ""),
                  "attachments_policy": str(r["attachments_policy"] or "auto"),
                  "contact_policy": str(r["contact_policy"] or "auto")}
        extra: dict[str, Any] = {"imported": MARK, "agentmail_id": r["id"]}
        retired = _retired(r)
        if retired is not None:
            extra["retired_at"] = retired
            p.retired.append(eid)
        times = [born]
        last = _ts(r["last_active_ts"])
        if last is not None and last > born:  # one format (format_ts): text order is time order
            times.append(last)
        for ts in times:
            p.add(entity(eid), {"ts": ts, "agent": eid, "kind": profiles.KIND, **fields, **extra})
    return out


def _retired(r: dict[str, Any]) -> str | None:
    """When the agent was retired, or None: upstream's ``retired_at``, else the fork's ``deleted_ts`` of an
    agent it made inactive (its last activity when that time is missing: inactive is still retired)."""
    retired = _ts(r["retired_at"])
    if retired is None and r["is_active"] is not None and not r["is_active"]:
        retired = _ts(r["deleted_ts"]) or _ts(r["last_active_ts"])
    return retired


def _attachments(raw: object) -> list[dict[str, Any]]:
    try:
        value = orjson.loads(raw) if isinstance(raw, str | bytes) else raw
    except orjson.JSONDecodeError:
        raise _Bad("invalid_field", "attachments is not JSON") from None
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(a, dict) for a in value):
        raise _Bad("invalid_field", "attachments is not a list of objects")
    return [{k: v for k, v in a.items() if k not in DROPPED} for a in value]


def _message(p: Plan, m: dict[str, Any], slugs: dict[int, tuple[str, str]], agents: dict[int, tuple[str, str]],
             recipients: list[dict[str, Any]]) -> None:
    try:
        if m["project_id"] not in slugs:
            raise _Bad("unknown_project", f"project {m['project_id']} is not in the database")
        slug = slugs[m["project_id"]][0]
        if m["sender_id"] not in agents:
            raise _Bad("unknown_entity", f"sender {m['sender_id']} is not an agent of the database")
        sender, sender_slug = agents[m["sender_id"]]
        if sender_slug != slug:
            raise _Bad("unsupported", f"sender {sender} belongs to another project than {slug} "
                                      "(cross-project messages are not imported)")
        created = _need_ts(m, "created_ts")
        subject = m["subject"]
        if not isinstance(subject, str) or not subject.strip():
            raise _Bad("invalid_field", "the subject is empty")
        body = m["body_md"] if isinstance(m["body_md"], str) else ""
        attachments = _attachments(m["attachments"])
    except _Bad as e:
        p.skip("messages", m["id"], e.reason, e.detail)
        for r in recipients:
            p.skip("message_recipients", f"{m['id']}/{r['agent_id']}", e.reason, f"its message: {e.detail}")
        return
    lists: dict[str, list[str]] = {k: [] for k in KINDS}
    for r in recipients:
        split = names.split_entity(agents[r["agent_id"]][0]) if r["agent_id"] in agents else None
        if r["kind"] in lists:
            lists[r["kind"]].append(split[1] if split else f"#{r['agent_id']}")
    importance = str(m["importance"])
    block: dict[str, Any] = {"id": m["id"], "project": slug, "to": lists["to"], "cc": lists["cc"],
                             "bcc": lists["bcc"], "topic": m["topic"], "importance": importance,
                             "ack_required": bool(m["ack_required"]), "created_ts": str(m["created_ts"]),
                             "attachments": attachments}
    if len(subject) > SUBJECT_MAX:
        block["subject"] = subject
    p.imported["messages"] += 1
    for r in recipients:
        key = f"{m['id']}/{r['agent_id']}"
        try:
            _delivery(p, r, m, sender, agents, block, created, subject[:SUBJECT_MAX], body,
                      importance if importance in PRIORITIES else "normal")
        except _Bad as e:
            p.skip("message_recipients", key, e.reason, e.detail)


def _delivery(p: Plan, r: dict[str, Any], m: dict[str, Any], sender: str, agents: dict[int, tuple[str, str]],
              block: dict[str, Any], created: str, subject: str, body: str, priority: str) -> None:
    """One recipient row: its message letter, and its seen and claim links when it was read and acknowledged."""
    if r["agent_id"] not in agents:
        raise _Bad("unknown_entity", f"recipient {r['agent_id']} is not an agent of the database")
    if r["kind"] not in KINDS:
        raise _Bad("invalid_field", f"kind {r['kind']!r} is not to, cc or bcc")
    read = _ts(r["read_ts"]) if r["read_ts"] is not None else None
    acked = _ts(r["ack_ts"]) if r["ack_ts"] is not None else None
    if (r["read_ts"] is not None and read is None) or (r["ack_ts"] is not None and acked is None):
        raise _Bad("invalid_field", f"read_ts {r['read_ts']!r} or ack_ts {r['ack_ts']!r} is not a time")
    who = agents[r["agent_id"]][0]
    try:
        letter = build_message(ts=created, sender=sender, recipient=who, subject=subject, body=body,
                               priority=priority, thread_id=str(m["thread_id"] or m["id"]),
                               response_expected=bool(m["ack_required"]),
                               message_id=f"agentmail_{block['project']}_{m['id']}")
    except Refusal as e:
        raise _Bad("invalid_field", e.detail) from None
    letter["agentmail"] = {**block, "kind": r["kind"]}
    box = entity(who)
    item = p.add(box, letter)
    p.imported["message_recipients"] += 1
    head = item
    if read is not None or acked is not None:
        head = p.add(box, {"ts": read or acked, "agent": who, "kind": LetterKind.seen.value, "ref": item,
                           "prev": item, "from": "WAIT", "imported": MARK})
    if acked is not None:
        p.add(box, {"ts": acked, "agent": who, "kind": LetterKind.claim.value, "ref": item, "prev": head,
                    "from": "WAIT", "imported": MARK})


def _reservation(p: Plan, r: dict[str, Any], slugs: dict[int, tuple[str, str]],
                 agents: dict[int, tuple[str, str]]) -> None:
    if r["project_id"] not in slugs:
        raise _Bad("unknown_project", f"project {r['project_id']} is not in the database")
    if r["agent_id"] not in agents:
        raise _Bad("unknown_entity", f"agent {r['agent_id']} is not an agent of the database")
    slug, who = slugs[r["project_id"]][0], agents[r["agent_id"]][0]
    taken, expires = _need_ts(r, "created_ts"), _need_ts(r, "expires_ts")
    released = _ts(r["released_ts"]) if r["released_ts"] is not None else None
    if r["released_ts"] is not None and released is None:
        raise _Bad("invalid_field", f"released_ts {r['released_ts']!r} is not a time")
    try:
        globs = normal_globs((str(r["path_pattern"]),))
    except Refusal as e:
        raise _Bad(e.reason, e.detail) from None
    obj: dict[str, Any] = {"kind": LetterKind.lease.value, "ts": taken, "agent": who, "entity": who, "project": slug,
                           "globs": globs, "exclusive": bool(r["exclusive"]), "expires": expires,
                           "imported": MARK, "agentmail_id": r["id"]}
    if r["reason"]:
        obj["reason"] = str(r["reason"])
    lid = p.add(project(slug), obj)
    if released is not None:
        p.add(project(slug), {"kind": LetterKind.lease_release.value, "ts": released, "agent": who, "entity": who,
                              "ref": lid, "imported": MARK})
    p.imported["file_reservations"] += 1


def row_counts(archive: Archive) -> dict[str, int]:
    """How many rows each table an import reads holds."""
    return {t: len(archive.rows.get(t, ())) for t in TABLES}


__all__ = ["MARK", "Plan", "Skipped", "plan", "row_counts"]

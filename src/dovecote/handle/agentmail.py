"""The agent-mail profile's calls: mcp_agent_mail's projects, agents and contact policies over dovecote's own.

Law: each call is a thin mapping onto dovecote's verbs, and who may do it is the
one rule every face uses (``remote``, ``model.credentials.authorize``). Who a call
is (``caller``): the token it carries (``registration_token`` or ``sender_token``,
a real ``dovecote token``), else the connection's own principal (its bearer token;
``dovecote mcp`` on stdio: the one it was started as). None is a tokenless
connection on a loopback server, the person at this machine: it reads as
``remote`` lets it and writes nothing, but it may enrol (``may_enrol``).

Enrolment (a new project, a new agent and its token) edits the roster, which is
an operator's: an operator token, the local operator (stdio without a token) or a
tokenless loopback connection, as mcp_agent_mail lets any local caller enrol. An
agent's token enrols nobody (``forbidden``); it may register itself again.

Names and integer ids are ``ops.agentmail.names``' (one rule, shared with the
importer of their archives); profiles are letters in the agent's own box
(``ops.agentmail.profiles``). Their results' field names are kept, so a client
written for mcp_agent_mail reads these unchanged.
"""

from __future__ import annotations

import os
from typing import Any

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle.api import Dovecote, Principal
from dovecote.handle.remote import actor_of
from dovecote.ops.agentmail import names, profiles
from dovecote.roster.config import Project

#: The contact policies accepted (dovecote lets any registered agent write to any other), and those refused.
POLICIES = ("open", "auto")
REFUSED_POLICIES = ("contacts_only", "block_all")
#: How many generated names a registration draws before it gives up (each taken by a concurrent one).
GENERATE_TRIES = 8


def caller(dc: Dovecote, connection: Principal | None, token: str | None) -> Principal | None:
    """Who a call is: its token's principal (``unauthorized`` for a bad one), else the connection's."""
    if token:
        return dc.authenticate(token)
    return connection


def may_enrol(p: Principal | None, what: str) -> None:
    """Enrolment is an operator's, the local operator's or a tokenless loopback caller's (module doc)."""
    if p is not None and p.role != "operator":
        raise Refusal("forbidden", f"{p.entity} may not {what}: enrolment is an operator's (an operator token, "
                                   "or a tokenless connection to a loopback server)")


def find_project(dc: Dovecote, key: str) -> Project:
    """The project ``key`` names: its slug, a key whose slug it is, or its root path."""
    slug = names.slugify(key)
    norm = os.path.normpath(key) if key.startswith("/") else None
    for p in dc.roster.projects:
        if p.name == slug or p.name == key or (norm is not None and p.root == norm):
            return p
    raise Refusal("unknown_project", f"Project '{key}' not found (ensure_project creates it)")


def project_row(p: Project) -> dict[str, Any]:
    return {"id": names.hashed_int(p.name), "slug": p.name, "human_key": p.root, "created_at": None}


def ensure_project(dc: Dovecote, p: Principal | None, human_key: str) -> dict[str, Any]:
    """The project of an absolute path, added to the roster (named by its slug) if it is not there."""
    if not human_key.startswith("/"):
        raise Refusal("invalid_field", f"human_key must be an absolute directory path, not {human_key!r}")
    root = os.path.normpath(human_key)
    slug = names.slugify(root)
    known = next((x for x in dc.roster.projects if x.name == slug), None)
    if known is None:
        may_enrol(p, "add a project")
        try:
            known = dc.add_project(verbs.ProjectAdd(name=slug, root=root))
        except Refusal as e:  # another call added it meanwhile: that one stands
            dc.refresh()
            known = next((x for x in dc.roster.projects if x.name == slug), None)
            if known is None:
                raise e from None
    return project_row(known)


def agent_entity(dc: Dovecote, project: Project, name: str) -> str:
    """The registered entity of agent ``name`` in ``project`` (case-insensitive, as theirs); ``unknown_entity``."""
    found = dc.roster.entity_like(names.entity_id(project.name, name))
    if found is None:
        raise Refusal("unknown_entity", f"Agent '{name}' not found in project '{project.root}' (register_agent)")
    return found.id


def agent_row(pr: profiles.Profile, project: Project) -> dict[str, Any]:
    """An agent as their results show one (no token, no contact policy)."""
    return {"id": names.hashed_int(pr.entity), "name": pr.name, "program": pr.program, "model": pr.model,
            "task_description": pr.task_description, "inception_ts": iso(pr.inception_ts),
            "last_active_ts": iso(pr.last_active_ts), "project_id": names.hashed_int(project.name),
            "attachments_policy": pr.attachments_policy}


def iso(ts: str | None) -> str | None:
    """A dovecote time (``...Z``) as theirs are shown (``...+00:00``)."""
    return ts[:-1] + "+00:00" if ts and ts.endswith("Z") else ts


def _profile(dc: Dovecote, entity: str) -> profiles.Profile:
    found = profiles.profile(dc.context, entity)
    if found is None:
        raise Refusal("unknown_entity", f"{entity} has no agent profile (register_agent makes one)")
    return found


def register_agent(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> dict[str, Any]:
    """Register an agent (an entity, a token, a profile letter), or update one (its own token, or an operator)."""
    for field in ("program", "model"):
        if not str(a.get(field) or "").strip():
            raise Refusal("invalid_field", f"{field} cannot be empty")
    project = find_project(dc, a["project_key"])
    token = a.get("registration_token")
    p = caller(dc, conn, token)
    name = a.get("name")
    existing = dc.roster.entity_like(names.entity_id(project.name, name)) if name else None
    if existing is not None:
        if p is None or (p.role != "operator" and p.entity != existing.id):
            raise Refusal("forbidden" if p else "unauthorized", f"register_agent requires registration_token "
                                                                f"for agent '{name}' to update it")
        entity, policy = existing.id, _profile(dc, existing.id).contact_policy
        if not token:  # an operator or the local operator registers it again: a new token, the old one still works
            token = dc.token_issue(verbs.TokenIssue(entity_id=entity), actor=actor_of(p) if p else None).token
    else:
        may_enrol(p, "register a new agent")
        entity, policy = _enrol(dc, project, name), "auto"
        name = _name_in(entity, name or "")
        token = dc.token_issue(verbs.TokenIssue(entity_id=entity)).token
    pr = profiles.record(dc._ctx(actor=actor_of(p) if p else None), {
        "entity": entity, "project": project.name, "human_key": project.root,
        "name": _name_in(entity, name or ""),
        "program": a["program"], "model": a["model"], "task_description": a.get("task_description") or "",
        "attachments_policy": a.get("attachments_policy") or "auto", "contact_policy": policy})
    return {**agent_row(pr, project), "registration_token": token}


def _name_in(entity: str, given: str) -> str:
    """The agent name an entity holds (as first registered: a later call may spell it in another case)."""
    split = names.split_entity(entity)
    return split[1] if split else given


def _enrol(dc: Dovecote, project: Project, name: str | None) -> str:
    """Add the agent's entity to the roster; a generated name another call took meanwhile is drawn again."""
    for _ in range(GENERATE_TRIES):
        if name:
            given = names.entity_id(project.name, name)
            dc.add_entity(verbs.EntityAdd(entity_id=given))  # a name taken meanwhile: duplicate_entity
            return given
        taken = {split[1] for e in dc.roster.entities if (split := names.split_entity(e.id)) and
                 split[0] == project.name}
        entity = names.entity_id(project.name, names.generated_name(taken, int.from_bytes(os.urandom(2), "big")))
        try:
            dc.add_entity(verbs.EntityAdd(entity_id=entity))
            return entity
        except Refusal as e:
            if e.reason != "duplicate_entity":
                raise
            dc.refresh()
    raise Refusal("duplicate_entity", f"{GENERATE_TRIES} generated names were taken meanwhile; give a name")


def whois(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> dict[str, Any]:
    """An agent's profile (no token, no mail): anyone the server admits may read it; no git commits here."""
    project = find_project(dc, a["project_key"])
    caller(dc, conn, a.get("registration_token"))  # a bad token is refused, as on every call
    entity = agent_entity(dc, project, a["agent_name"])
    return {**agent_row(_profile(dc, entity), project), "recent_commits": []}


def set_contact_policy(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> dict[str, Any]:
    """``open`` and ``auto`` (unknown: ``auto``, as theirs) are recorded; ``contacts_only`` and ``block_all`` are
    ``unsupported``: dovecote lets any registered agent write to any other, and does not pretend otherwise."""
    policy = str(a["policy"])
    if policy in REFUSED_POLICIES:
        raise Refusal("unsupported", f"contact policy {policy!r} is not supported: dovecote lets any registered "
                                     "agent write to any other (open and auto are accepted)")
    policy = policy if policy in POLICIES else "auto"
    project = find_project(dc, a["project_key"])
    entity = agent_entity(dc, project, a["agent_name"])
    p = caller(dc, conn, a.get("registration_token"))
    if p is None:
        raise Refusal("unauthorized", f"set_contact_policy requires registration_token for agent '{a['agent_name']}'")
    Dovecote.authorize(p, "seen", entity)  # a change of the agent's own: its own box's, as a move is
    old = _profile(dc, entity)
    fields = {f: getattr(old, f) for f in profiles.FIELDS}
    profiles.record(dc._ctx(actor=actor_of(p)), {**fields, "contact_policy": policy})
    return {"agent": old.name, "policy": policy}


def health_check(dc: Dovecote, where: str) -> dict[str, Any]:
    """Their health answer: no live check, where the server is."""
    host, _, port = where.rpartition(":")
    return {"status": "ok", "environment": "dovecote", "http_host": host or None,
            "http_port": int(port) if port.isdigit() else None, "database_url": f"dovecote:{dc.layout.root}"}

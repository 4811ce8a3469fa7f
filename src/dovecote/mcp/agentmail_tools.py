"""The agent-mail profile's catalog: mcp_agent_mail's core tools, their names, arguments and defaults.

Law: one table (``CATALOG``), each row a tool: its arguments as a typed struct
(the input schema is generated from it, and a call is decoded by it), a one-line
description, and its call in ``handle.agentmail`` (identity, projects, agents) or
``handle.agentmail_mail`` (mail), which map it onto dovecote's own verbs through
``remote``, or ``handle.agentmail_leases`` (file reservations, over dovecote's
advisory file leases through ``remote_leases``). Every tool also takes their
``format`` argument; only ``json`` is answered.

The whole catalog stays under 4,000 tokens (``tools/list``, characters / 4):
descriptions are one line, and the schemas carry types and defaults only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from dovecote.handle import agentmail as am
from dovecote.handle import agentmail_leases as leases
from dovecote.handle import agentmail_mail as mail
from dovecote.mcp import schemas

Names = list[str]


class Args(msgspec.Struct, kw_only=True):
    format: str | None = None


class EnsureProject(Args, kw_only=True):
    human_key: str
    identity_mode: str | None = None


class Project(Args, kw_only=True):
    project_key: str


class RegisterAgent(Project, kw_only=True):
    program: str
    model: str
    name: str | None = None
    task_description: str = ""
    attachments_policy: str = "auto"
    registration_token: str | None = None


class Agent(Project, kw_only=True):
    agent_name: str
    registration_token: str | None = None


class Whois(Agent, kw_only=True):
    include_recent_commits: bool = True
    commit_limit: int = 5


class Recipients(Project, kw_only=True):
    sender_name: str
    body_md: str
    to: Names | None = None
    cc: Names | None = None
    bcc: Names | None = None
    sender_token: str | None = None


class SendMessage(Recipients, kw_only=True):
    to: Names
    subject: str
    attachment_paths: Names | None = None
    convert_images: bool | None = None
    importance: str = "normal"
    ack_required: bool = False
    thread_id: str | None = None
    broadcast: bool = False
    topic: str | None = None
    auto_contact_if_blocked: bool | None = None


class ReplyMessage(Recipients, kw_only=True):
    message_id: int
    subject_prefix: str = "Re:"


class FetchInbox(Agent, kw_only=True):
    limit: int = 20
    urgent_only: bool = False
    include_bodies: bool = False
    since_ts: str | None = None
    topic: str | None = None


class MessageRef(Agent, kw_only=True):
    message_id: int


class SearchMessages(Project, kw_only=True):
    query: str
    limit: int = 20
    agent_name: str | None = None
    registration_token: str | None = None


class ContactPolicy(Agent, kw_only=True):
    policy: str


class Reserve(Agent, kw_only=True):
    paths: Names
    ttl_seconds: int = 3600
    exclusive: bool = True
    reason: str = ""


class Reservations(Agent, kw_only=True):
    paths: Names | None = None
    file_reservation_ids: list[int] | None = None


class Renew(Reservations, kw_only=True):
    extend_seconds: int = 1800


Call = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class AmTool:
    """One tool: its name, argument struct, one line, its call (dovecote, principal, arguments), and whether its
    answer is a list (their wire shape for lists: ``{"result": [...]}``)."""

    name: str
    args: type[Args]
    description: str
    call: Call
    listing: bool = False

    def input_schema(self) -> dict[str, Any]:
        out = schemas.inline(msgspec.json.schema(self.args))
        out.get("properties", {}).pop("format", None)
        out["properties"]["format"] = {"type": "string", "default": "json"}
        return out


def _health(dc: Any, p: Any, a: dict[str, Any]) -> dict[str, Any]:
    return am.health_check(dc, a.pop("_where", ""))


CATALOG: dict[str, AmTool] = {t.name: t for t in (
    AmTool("health_check", Args, "Server health (no live check).", _health),
    AmTool("ensure_project", EnsureProject, "Create or get the project of an absolute path (its slug).",
           lambda dc, p, a: am.ensure_project(dc, p, a["human_key"])),
    AmTool("register_agent", RegisterAgent, "Register (or update) an agent; answers its registration_token.",
           am.register_agent),
    AmTool("whois", Whois, "An agent's profile.", am.whois),
    AmTool("send_message", SendMessage, "Send a message to agents of the project (durable when this returns).",
           mail.send_message),
    AmTool("reply_message", ReplyMessage, "Reply in a message's thread (to its sender by default).",
           mail.reply_message),
    AmTool("fetch_inbox", FetchInbox, "An agent's inbox, newest first (changes nothing).", mail.fetch_inbox,
           listing=True),
    AmTool("mark_message_read", MessageRef, "Mark a message read (first time kept).", mail.mark_message_read),
    AmTool("acknowledge_message", MessageRef, "Acknowledge a message (and mark it read).",
           mail.acknowledge_message),
    AmTool("search_messages", SearchMessages, "Full-text search of an agent's inbox.", mail.search_messages,
           listing=True),
    AmTool("set_contact_policy", ContactPolicy, "Set an agent's contact policy: open or auto.",
           am.set_contact_policy),
    AmTool("file_reservation_paths", Reserve, "Reserve paths (advisory: granted with any conflicts listed).",
           leases.file_reservation_paths),
    AmTool("renew_file_reservations", Renew, "Extend your active reservations (all, or those named).",
           leases.renew_file_reservations),
    AmTool("release_file_reservations", Reservations, "Release your active reservations (all, or those named).",
           leases.release_file_reservations),
)}

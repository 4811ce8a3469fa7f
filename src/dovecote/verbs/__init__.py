"""The typed verb definitions: each verb's input, defined once.

Law: a verb's input is one frozen ``msgspec.Struct`` below, and every face
derives from it (DESIGN 7): the CLI's options are checked against these fields
(``tests/handle/test_verb_drift.py``), MCP tool schemas and the OpenAPI come from
``schema``, and the handle (``api.Dovecote``) takes these types, so a library
caller meets the same types, ranges and names as a remote one. Each field
carries its one-line doc, its range, its enum and its bound (the one table in
``limits``) in ``msgspec.Meta``, so the JSON schema carries them too.

Two ways in, one set of checks:

- ``decode(Verb, mapping)``: what MCP and REST receive (a plain dict) becomes
  the Struct, or a ``Refusal`` naming the field (``missing_field``,
  ``unknown_field``, ``invalid_field``, ``invalid_name``...), never a msgspec
  error.
- ``checked(value)``: a Struct built in Python (msgspec checks no ranges at
  construction) is passed through the same decoder. The handle calls it.

Names (entity ids, project names, a sender) are checked by ``names.check_name``
in ``__post_init__``, so the one rule for names stays in ``names.py``. This
package imports msgspec and the leaf modules only: the CLI's start-up path loads it.
"""

from __future__ import annotations

from dovecote.model.addresses import SPOOL
from dovecote.model.vocab import (
    Category,
    Direction,
    Disposition,
    Fate,
    HookAgent,
    MisdeliveryKind,
    MoveKind,
    Priority,
    ReportClass,
    SentinelExpect,
    Symptom,
    TokenRole,
    TrustLevel,
)
from dovecote.model.vocab_delivery import ACK_TIMEOUT_S, MAX_REPINGS, REPING_INTERVAL_S
from dovecote.verbs.agentmail_import import ImportAgentMail
from dovecote.verbs.agents import HooksInstall, TokenIssue, TokenList, TokenRevoke
from dovecote.verbs.base import (
    LETTER_ID_SCHEMA_PATTERN,
    MAX_INT,
    NAME_SCHEMA_PATTERN,
    Verb,
    checked,
    choices,
    decode,
    decode_many,
    doc,
    load_json,
    over_bound,
    schema,
)
from dovecote.verbs.cases import Case, Cases, Claims, HookEvent, MonitorAdd, Monitors, Receipt, Sentinels
from dovecote.verbs.delivery import MAX_SECONDS, Ack, Intake, Mailman, Presence, PresenceBeat, Send, Status, Trackers
from dovecote.verbs.leases import LeaseCheck, LeaseGuardInstall, LeaseRelease, LeaseRenew, Leases, LeaseTake
from dovecote.verbs.limits import MAX_BODY, MAX_DEPTH, MAX_HEAD, MAX_QUERY
from dovecote.verbs.mail import (
    MAX_WAIT,
    MOVE_OPTIONS,
    ImportInboxTree,
    Inbox,
    Message,
    Move,
    Organize,
    OutboxSend,
    Search,
    Show,
    StaleCheck,
    View,
    Wait,
)
from dovecote.verbs.missions import (
    BlockAdd,
    BlockBump,
    Blocks,
    Mission,
    MissionArchive,
    MissionPost,
    Missions,
    ReceiptImport,
)
from dovecote.verbs.reports import Box, Distribute, Doctor, Report, Sweep, Verify
from dovecote.verbs.roster import EntityAdd, EntityList, EntityRemove, ProjectAdd, ProjectList, ProjectRemove
from dovecote.verbs.vnext import ImportVnext

__all__ = [
    "ACK_TIMEOUT_S",
    "LETTER_ID_SCHEMA_PATTERN",
    "MAX_BODY",
    "MAX_DEPTH",
    "MAX_HEAD",
    "MAX_INT",
    "MAX_QUERY",
    "MAX_REPINGS",
    "MAX_SECONDS",
    "MAX_WAIT",
    "MOVE_OPTIONS",
    "NAME_SCHEMA_PATTERN",
    "REPING_INTERVAL_S",
    "SPOOL",
    "VERBS",
    "WRITES",
    "WRITES_WHEN",
    "Ack",
    "BlockAdd",
    "BlockBump",
    "Blocks",
    "Box",
    "Case",
    "Cases",
    "Category",
    "Claims",
    "Direction",
    "Disposition",
    "Distribute",
    "Doctor",
    "EntityAdd",
    "EntityList",
    "EntityRemove",
    "Fate",
    "HookAgent",
    "HookEvent",
    "HooksInstall",
    "ImportAgentMail",
    "ImportInboxTree",
    "ImportVnext",
    "Inbox",
    "Intake",
    "LeaseCheck",
    "LeaseGuardInstall",
    "LeaseRelease",
    "LeaseRenew",
    "LeaseTake",
    "Leases",
    "Mailman",
    "Message",
    "MisdeliveryKind",
    "Mission",
    "MissionArchive",
    "MissionPost",
    "Missions",
    "MonitorAdd",
    "Monitors",
    "Move",
    "MoveKind",
    "Organize",
    "OutboxSend",
    "Presence",
    "PresenceBeat",
    "Priority",
    "ProjectAdd",
    "ProjectList",
    "ProjectRemove",
    "Receipt",
    "ReceiptImport",
    "Report",
    "ReportClass",
    "Search",
    "Send",
    "SentinelExpect",
    "Sentinels",
    "Show",
    "StaleCheck",
    "Status",
    "Sweep",
    "Symptom",
    "TokenIssue",
    "TokenList",
    "TokenRevoke",
    "TokenRole",
    "Trackers",
    "TrustLevel",
    "Verb",
    "Verify",
    "View",
    "Wait",
    "checked",
    "choices",
    "decode",
    "decode_many",
    "doc",
    "load_json",
    "over_bound",
    "schema",
    "writes",
]

#: Every verb of the handle, by name: what the faces publish (MCP tools, REST routes).
#: ``send`` and ``draft`` take one definition; the six lifecycle moves are one verb.
VERBS: dict[str, type[Verb]] = {
    "report": Report,
    "distribute": Distribute,
    "sweep": Sweep,
    "box": Box,
    "doctor": Doctor,
    "verify": Verify,
    "send": Send,
    "draft": Message,
    "outbox_send": OutboxSend,
    "move": Move,
    "inbox": Inbox,
    "show": Show,
    "view": View,
    "import_inbox_tree": ImportInboxTree,
    "search": Search,
    "stale_check": StaleCheck,
    "organize": Organize,
    "wait": Wait,
    "project_add": ProjectAdd,
    "project_remove": ProjectRemove,
    "project_list": ProjectList,
    "entity_add": EntityAdd,
    "entity_remove": EntityRemove,
    "entity_list": EntityList,
    "token_issue": TokenIssue,
    "token_list": TokenList,
    "token_revoke": TokenRevoke,
    "hooks_install": HooksInstall,
    # reading vNext mailbox directories
    "import_vnext": ImportVnext,
    "import_agent_mail": ImportAgentMail,
    # -- delivery --
    "intake": Intake,
    "mailman": Mailman,
    "ack": Ack,
    "trackers": Trackers,
    "presence_beat": PresenceBeat,
    "presence": Presence,
    "status": Status,
    # case intelligence
    "receipt": Receipt,
    "cases": Cases,
    "case": Case,
    "sentinels": Sentinels,
    "claims": Claims,
    "monitor_add": MonitorAdd,
    "monitors": Monitors,
    "hook_event": HookEvent,
    # missions; mission_archive and receipt_import are human gestures: no token reaches them
    "block_add": BlockAdd,
    "block_bump": BlockBump,
    "blocks": Blocks,
    "mission_post": MissionPost,
    "missions": Missions,
    "mission": Mission,
    "mission_archive": MissionArchive,
    "receipt_import": ReceiptImport,
    # advisory file leases; the guard's install writes into a repository on this machine (a terminal's)
    "lease_take": LeaseTake,
    "lease_renew": LeaseRenew,
    "lease_release": LeaseRelease,
    "leases": Leases,
    "lease_check": LeaseCheck,
    "lease_guard_install": LeaseGuardInstall,
}

#: The verbs that always write (a letter, a roster entry, a cache file): the one deny list
#: ``--read-only`` applies, on every face (MCP tools, REST routes).
WRITES: frozenset[str] = frozenset({
    "report", "distribute", "verify", "send", "draft", "outbox_send", "move", "view", "import_inbox_tree",
    "project_add", "project_remove", "entity_add", "entity_remove", "token_issue", "token_revoke", "hooks_install",
    # -- delivery --
    "intake", "mailman", "ack", "presence_beat",
    # case intelligence: a sentinel run mints engine letters when a state changes
    "receipt", "sentinels", "monitor_add", "hook_event",
    # missions
    "block_add", "block_bump", "mission_post", "mission_archive", "receipt_import",
    # leases
    "lease_take", "lease_renew", "lease_release", "lease_guard_install",
})
#: The verbs that write only when one of their fields is true, and that field.
WRITES_WHEN: dict[str, str] = {
    "sweep": "distribute", "stale_check": "emit_signals", "organize": "apply",
    "claims": "write_labels",  # case intelligence
    "import_vnext": "write",  # the dry run reads the directory only
    "import_agent_mail": "write",  # the dry run reads their database only
}


def writes(name: str, v: Verb | None = None) -> bool:
    """Whether the call ``name`` with input ``v`` would write (a read-only face refuses it)."""
    field = WRITES_WHEN.get(name)
    if field is not None:
        return v is None or bool(getattr(v, field))
    return name in WRITES

"""The verbs of entity mail: send and draft (one ``Message``), the outbox, the lifecycle moves,
the readings of an inbox, and search and hygiene."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from msgspec import Meta

from dovecote.errors import Refusal
from dovecote.model.vocab import Category, Direction, MoveKind, Priority, TrustLevel
from dovecote.verbs.base import MAX_INT, Count, CurrentTic, Name, Ref, Verb
from dovecote.verbs.limits import ITEMS, SUBJECT, Body, Id, PathText, Text


class Message(Verb, frozen=True):
    """A message: what ``send`` delivers and ``draft`` keeps for the outbox (envelope schema 1.0 names)."""

    NAMES: ClassVar[Mapping[str, str]] = {"recipient": "recipient", "sender": "sender"}

    recipient: Annotated[Name, Meta(description="The recipient entity.")]
    subject: Annotated[str, Meta(max_length=SUBJECT, description=f"At most {SUBJECT} characters.")]
    body: Annotated[Body | None, Meta(description="The body text.")] = None
    body_file: Annotated[PathText | None, Meta(description="Read the body from this file.")] = None
    sender: Annotated[Name | None, Meta(description="Default: the actor's entity.")] = None
    priority: Annotated[Priority, Meta(description="Urgency.")] = Priority.normal
    category: Annotated[Category, Meta(description="Kind of message.")] = Category.notification
    trust_level: Annotated[TrustLevel, Meta(description="Trust to grant.")] = TrustLevel.peer
    thread_id: Annotated[Id | None, Meta(description="The thread id (replies inherit it).")] = None
    reply_to: Annotated[
        Id | None, Meta(description="The item answered, or entity:<id>.")
    ] = None
    expires_at_tic: Annotated[Count | None, Meta(description="Expiry (flagged, never enforced).")] = None
    defer_until_tic: Annotated[Count | None, Meta(description="Arrives DEFERred until this tic.")] = None
    reminder_tic: Annotated[Count | None, Meta(description="Flag OVERDUE after this tic.")] = None
    artifact_paths: Annotated[
        tuple[PathText, ...], Meta(max_length=ITEMS, description="Files to attach (paths on this machine).")
    ] = ()
    response_expected: Annotated[
        bool | None, Meta(description="Default: yes for query and directive.")
    ] = None
    current_tic: CurrentTic = None
    idempotency_key: Annotated[
        Id | None, Meta(description="A retry with this key is the same message.")
    ] = None


class OutboxSend(Verb, frozen=True):
    """Deliver every pending draft, verifying each recipient."""

    NAMES: ClassVar[Mapping[str, str]] = {"sender": "sender"}

    sender: Annotated[Name | None, Meta(description="Only this entity's drafts (default: every entity's).")] = None


#: Which options each move takes besides the common ones (a due only on defer, ...).
MOVE_OPTIONS: dict[MoveKind, frozenset[str]] = {
    MoveKind.claim: frozenset(),
    MoveKind.complete: frozenset({"result_ref", "reason"}),
    MoveKind.defer: frozenset({"until_tic", "until", "reason"}),
    MoveKind.undefer: frozenset({"reason"}),
    MoveKind.nack: frozenset({"reason"}),
    MoveKind.seen: frozenset(),
    MoveKind.unseen: frozenset(),
}


class Move(Verb, frozen=True):
    """One lifecycle move on an item, as a compare-and-swap (``MOVE_OPTIONS`` says which options each takes)."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    kind: Annotated[MoveKind, Meta(description="The move.")]
    entity_id: Annotated[Name, Meta(description="Whose inbox.")]
    ref: Ref
    until_tic: Annotated[Count | None, Meta(description="Defer until this tic.")] = None
    until: Annotated[Id | None, Meta(description="Defer until this ISO-8601 time.")] = None
    reason: Annotated[Text | None, Meta(description="Why.")] = None
    result_ref: Annotated[PathText | None, Meta(description="Where the result is.")] = None
    current_tic: CurrentTic = None

    def __post_init__(self) -> None:
        super().__post_init__()
        allowed = MOVE_OPTIONS[MoveKind(self.kind)]
        for option in ("until_tic", "until", "reason", "result_ref"):
            if getattr(self, option) is not None and option not in allowed:
                takes = ", ".join(sorted(allowed)) or "no options"
                raise Refusal("invalid_field", f"{option} is not an option of {self.kind} (it takes {takes})")

    def options(self) -> dict[str, Any]:
        """The move's own options that were given."""
        return {k: getattr(self, k) for k in ("until_tic", "until", "reason", "result_ref")
                if getattr(self, k) is not None}


class Inbox(Verb, frozen=True):
    """The audit of one entity's inbox: counts, flags, and open items by priority then age."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    entity_id: Annotated[
        Name | None, Meta(description="Whose inbox (default: yours, else the only one).")
    ] = None
    current_tic: CurrentTic = None
    direction: Annotated[Direction, Meta(description="Inbound items, the outbox, or both.")] = Direction.inbound
    include_terminal: Annotated[bool, Meta(description="Include DONE and NACK items.")] = False


class Show(Verb, frozen=True):
    """One message whole: envelope, body, thread and lifecycle history."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    entity_id: Annotated[Name, Meta(description="Whose inbox.")]
    ref: Ref
    current_tic: CurrentTic = None


class View(Verb, frozen=True):
    """Write the /inbox folder layout of an entity's ledger (a cache)."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    entity_id: Annotated[Name | None, Meta(description="The entity (default: every entity).")] = None
    current_tic: Annotated[Count | None, Meta(description="The tic now (a DEFER past its due shows as WAIT).")] = None
    rebuild: Annotated[bool, Meta(description="Rewrite every owned file, even unchanged ones.")] = False


class ImportInboxTree(Verb, frozen=True):
    """Adopt an existing /inbox tree: flat, directory and bare-drop envelopes, with their states."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    path: Annotated[
        PathText,
        Meta(min_length=1, description="One mailbox (with entity_id) or an agent-mailboxes root of ent_* folders."),
    ]
    entity_id: Annotated[Name | None, Meta(description="The entity the path is the mailbox of.")] = None
    current_tic: CurrentTic = None


#: The longest a ``wait`` blocks, in seconds: a face's worker is never held longer than this.
MAX_WAIT = 300


class Wait(Verb, frozen=True):
    """Block until new mail arrives in an entity's box after a cursor, or the timeout passes."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    entity_id: Annotated[Name, Meta(description="Whose box to watch.")]
    timeout: Annotated[
        float, Meta(ge=0, le=MAX_WAIT, description=f"Seconds (at most {MAX_WAIT}).")
    ] = MAX_WAIT
    after: Annotated[
        Id | None,
        Meta(description="A cursor from wait or inbox (default: now)."),
    ] = None


# -- search and hygiene -----------------------------------------------------------------


class Search(Verb, frozen=True):
    """Full-text search over subjects, bodies and text artifacts, newest first."""

    NOT_BLANK: ClassVar[tuple[str, ...]] = ("query",)

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    query: Annotated[Text, Meta(min_length=1, description="Plain words; every one must occur.")]
    entity_id: Annotated[Name | None, Meta(description="Only this entity's inbox.")] = None
    include_terminal: Annotated[bool, Meta(description="Include DONE and NACK items.")] = False
    limit: Annotated[int, Meta(ge=1, le=MAX_INT, description="Show the newest N matches.")] = 50


class StaleCheck(Verb, frozen=True):
    """Attention debt across every entity: items stale in WAIT or ACTIVE."""

    current_tic: CurrentTic = None
    emit_signals: Annotated[
        bool, Meta(description="Append one attention signal per entity per UTC day to home.")
    ] = False


class Organize(Verb, frozen=True):
    """Report loose files, expired items, duplicate threads and large files, with proposals."""

    NAMES: ClassVar[Mapping[str, str]] = {"entity_id": "entity id"}

    entity_id: Annotated[Name, Meta(description="Whose inbox.")]
    apply: Annotated[
        bool, Meta(description="Group loose files into inbound/REF_<category>/ (never deletes).")
    ] = False
    current_tic: Annotated[Count | None, Meta(description="The tic now (for EXPIRED).")] = None

"""Errors: every refusal carries a stable snake_case keyword.

A refusal is data, not prose. The keyword table below is the only place a
keyword is defined; the CLI, MCP and HTTP faces render a ``Refusal`` from it
(exit code, ``isError``, HTTP status) and the docs test checks that every
keyword is documented.

Hierarchy::

    DovecoteError
     +-- Refusal          the request broke a rule; nothing was written
     +-- StoreError       the storage could not be read or written (I/O)
          +-- PartialWrite  a two-ledger write stopped halfway; says what was written
          +-- DiskFull      (also a Refusal, ``disk_full``) no space; nothing was written
"""

from __future__ import annotations

import os

# keyword -> (HTTP status hint, one-line meaning). Sorted by keyword.
REASONS: dict[str, tuple[int, str]] = {
    "absolute_path": (400, "a mission letter carries an absolute path; the public contract has none"),
    "already_acked": (409, "the delivery was already acked or rejected; the first ack stands"),
    "already_claimed": (409, "the item is already ACTIVE (claimed by someone)"),
    "ambiguous_name": (409, "the name matches more than one project; nothing is guessed"),
    "bad_request": (400, "the HTTP request itself is malformed (its request line, headers or content type)"),
    "brain_mismatch": (409, "the mission letter's brain_ref is not the project the caller is bound to"),
    "csrf_failed": (403, "a page's form came without this session's CSRF token, or from another origin"),
    "disk_full": (507, "the disk (or quota) is full: the append was taken back whole; free space and retry"),
    "driver_missing": (500, "the store is a PostgreSQL database and this install has no driver for it: "
                            "install dovecote[postgres]"),
    "duplicate_entity": (409, "an entity with that id is already in the roster"),
    "duplicate_project": (409, "a project with that name is already in the roster"),
    "duplicate_root": (409, "another project already has that root (one root, one box)"),
    "forbidden": (403, "the token's entity may not do this in another entity's box"),
    "human_gesture_required": (403, "only a person may do this: no token reaches it, and a mission gesture "
                                    "needs the gesture passphrase"),
    "idempotency_conflict": (409, "the idempotency key already names a different message"),
    "illegal_transition": (409, "the lifecycle table has no such move from the current state"),
    "in_use": (409, "letters still route to that project or entity (--force drops the entry, keeps the ledger)"),
    "incomplete_evidence": (
        400, "a gate or receipt candidate lacks its evidence (command, artifact_hash, exit 0, evidence_refs)",
    ),
    "insecure_tokens": (409, "the token file is readable by others than its owner (chmod 600 it)"),
    "invalid_address": (400, "a box address is not home, project:<name> or entity:<id>"),
    "invalid_config": (500, "config.toml is not valid (a typo must not silently change routing)"),
    "invalid_field": (400, "a field has the wrong type or an illegal value"),
    "invalid_json": (400, "the input is not a JSON object"),
    "invalid_login": (403, "the login link is unknown or was already used (each link opens one session)"),
    "invalid_mission_id": (400, "a mission_id is not msn_ followed by 12 lowercase hex digits"),
    "invalid_name": (400, "a name is empty, too long, or has path tricks (/, .., NUL)"),
    "invalid_phase": (400, "the mission letter's phase is unknown or carries what its phase forbids"),
    "invalid_seq": (400, "mission_seq is below 1, or seq 1 names a prev_letter_id (or a later one names none)"),
    "invalid_transition": (409, "the phase graph has no move from the mission head's phase to that one"),
    "landed_law": (409, "a landed letter needs a person's import of its candidate, at the store_version it names"),
    "lease_conflict": (409, (
        "another agent holds an active lease on an overlapping path (exclusive, or any lease when yours is);"
        " its holders and their expiry are named"
    )),
    "method_not_allowed": (405, "the route exists but not with that HTTP method"),
    "missing_field": (400, "a required field is absent or empty"),
    "no_due": (400, "a defer needs a due tic or time; a DEFER with no due is a dead end"),
    "no_home": (404, "no dovecote home here; run `dovecote init`"),
    "not_found": (404, "no page or API route at that path"),
    "not_recipient": (403, "only the recipient of a delivery may ack it"),
    "not_seen": (409, "the item must be marked seen before it is completed"),
    "password_in_config": (400, "a store URL carries a password; give it in PGPASSWORD or ~/.pgpass, not config.toml"),
    "read_only": (403, "this face was started --read-only: it changes nothing, and this request would"),
    "remote_not_allowed": (400, "a non-loopback bind needs --allow-remote (and then every request needs a token)"),
    "reserved_agent": (403, "the agent name dovecote:engine is reserved for the engine"),
    "response_required": (409, "the item expects a response and none has been sent to its sender yet"),
    "schema_mismatch": (400, "the mission letter's schema is neither dovecote-mission-v1 nor m1nd-mission-letter-v0"),
    "schema_too_new": (409, "the database's dovecote schema is newer than this dovecote knows; upgrade dovecote"),
    "schema_unmigrated": (409, "the database has no (or an older) dovecote schema; run `dovecote db migrate`"),
    "server_file": (403, "a remote caller named a file on the server (body_file, artifact_paths): send the text"),
    "stale_head": (409, "the mission head moved; re-read and post against the new head"),
    "stale_scope": (409, "the receipt candidate proves a block boundary the live block has moved past"),
    "too_large": (413, "the input is over the configured size limit"),
    "trust_violation": (403, "plane-a envelopes may not carry intent execute"),
    "unauthorized": (401, "the request needs a bearer token dovecote issued (none, unknown or revoked)"),
    "unknown_block": (404, "the block_id is neither a block of the project nor its skeleton"),
    "unknown_box": (404, "the box address names no project or entity in the roster"),
    "unknown_case": (404, "no case has that fingerprint or case id"),
    "unknown_delivery": (404, "no delivery (task or response) with that id or envelope id"),
    "unknown_entity": (404, "no entity with that id is in the roster"),
    "unknown_field": (400, "a field is not part of the letter schema"),
    "unknown_letter": (404, "no letter with that id is in the box"),
    "unknown_mission": (404, "no reachable box has a letter of that mission"),
    "unknown_parent": (404, "a response's parent_id names no task delivered to its sender"),
    "unknown_project": (404, "no project with that name is in the roster"),
    "unknown_recipient": (404, "the recipient is not a registered entity"),
    "unknown_symptom": (400, "the symptom is not in the closed vocabulary (there is no other)"),
    "unknown_token": (404, "no token with that id was issued"),
    "unsafe_path": (409, (
        "a folder or file dovecote writes (a view, a hook configuration, the roster, an intake envelope) is a"
        " symbolic link or a file; nothing is read or written through it"
    )),
    "unsupported": (400, "dovecote cannot do that (here): a subscription when serve --workers N keeps no MCP "
                         "session; an agent-mail contact policy, topic or cross-project send it has no notion of"),
    "unverified_mode": (400, "the notifier mode session-inject is reserved: no session injection was ever verified"),
}
# import vnext
REASONS["vnext_malformed"] = (
    422, "a file of the vNext directory cannot be read as what its place holds; nothing was imported",
)
# a server face: a request naming another server (after vnext_malformed: the table stays sorted)
REASONS["wrong_host"] = (
    421, "the Host (or Origin) header names another server: a loopback server answers loopback names",
)


class DovecoteError(Exception):
    """Base of every error dovecote raises on purpose."""


class Refusal(DovecoteError):
    """A request broke a rule. Nothing was written."""

    def __init__(self, reason: str, detail: str, **extra: object) -> None:
        if reason not in REASONS:
            raise ValueError(f"unregistered refusal keyword {reason!r}")
        self.reason = reason
        self.detail = detail
        self.extra = extra
        super().__init__(f"{reason}: {detail}")

    @property
    def status(self) -> int:
        """The HTTP status a web face answers with."""
        return REASONS[self.reason][0]

    def message(self) -> str:
        """One line for a human: what was refused, why, and that nothing was written."""
        return f"{self.reason}: {self.detail} (nothing was written)"

    def body(self) -> dict[str, object]:
        """The one JSON error shape of a server face: ``to_dict`` and the ``detail`` alone."""
        return {**self.to_dict(), "detail": self.detail}

    def to_dict(self) -> dict[str, object]:
        """The one JSON error shape every face uses."""
        return {
            "ok": False,
            "error": self.message(),
            "reason": self.reason,
            "status": self.status,
            **({"details": self.extra} if self.extra else {}),
        }


class StoreError(DovecoteError):
    """The store could not be read or written (an I/O failure, not a rule)."""


class PartialWrite(StoreError):
    """A write spanning two ledgers failed after the first part was durable.

    The message says exactly what was written (e.g. "delivered <id> to
    entity:<x>; the sent record was not written"); ``details`` holds the same
    as data. Nothing is rolled back (ledgers never shrink): a retry completes it.
    """

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.details = details


class DiskFull(Refusal, StoreError):
    """No space was left for an append; it was truncated back, so nothing was written.

    Both a refusal (each face names ``disk_full``: exit 2, HTTP 507, MCP
    ``isError``) and a ``StoreError`` (callers that catch I/O failures, such as a
    sweep that names an unwritable box, still do).
    """

    def __init__(self, path: str, error: OSError) -> None:
        why = error.strerror or os.strerror(error.errno or 0)
        super().__init__("disk_full", f"cannot append to {path}: {why}")

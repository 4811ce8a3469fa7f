"""Tokens: the identity a connection is bound to, and the one authorization rule.

Law: a token is shown once, when it is issued, and never stored; the token
file keeps only its SHA-256 (``token_hash``), so reading the file does not let
anyone act. Issuing and revoking are records appended to that file (a revoke
never deletes), and ``fold`` turns the records into the current table. The
rule (``authorize``) is a table a server calls before each verb: an agent may
send to anyone but may move, and read the bodies of, only its own box's items;
an operator may read everything. The same table caps how far a message's
recipient may trust it by its sender's role (``cap_trust``): an agent cannot
raise its own word to an operator's. Nothing here touches a file or a clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from dovecote.errors import Refusal
from dovecote.model.vocab import PERSON_ROLE, MoveKind, TokenRole, TrustLevel
from dovecote.util.digests import sha256

#: Every token starts with this, so a leaked one is recognizable (secret scanners, logs).
PREFIX = "dct_"
ROLES = tuple(r.value for r in TokenRole)
#: How many hex digits of the hash name a token in ``list`` and ``revoke``.
ID_DIGITS = 12

ISSUE, REVOKE = "token_issue", "token_revoke"

#: verb -> whose items it touches: "any" (a send may go to anyone) or "own" (the caller's box only).
VERBS: dict[str, str] = {
    "send": "any",
    "draft": "any",
    "inbox": "own",
    "wait": "own",
    "show": "own",
    "search": "own",
    **{kind.value: "own" for kind in MoveKind},  # every lifecycle move, from the one vocabulary
    # -- delivery --
    "ack": "own",
    "trackers": "own",
    "presence_beat": "own",
    # -- leases: an agent takes, renews and releases its own; an operator anyone's
    "lease_take": "own",
    "lease_renew": "own",
    "lease_release": "own",
}

#: role -> the highest trust level a message its entity sends may claim. The person at this machine (the CLI,
#: ``dovecote mcp`` with no token) acts as an operator; only the person's page session reaches ``human``.
TRUST_CAP: dict[str, TrustLevel] = {"agent": TrustLevel.peer, "operator": TrustLevel.operator,
                                    PERSON_ROLE: TrustLevel.human}


def new_token() -> str:
    """A fresh token: the prefix and 32 random bytes, URL-safe."""
    import secrets  # here: it imports hashlib (via hmac), which a cold hook through the handle never needs

    return PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """What the token file keeps of a token: its SHA-256, in hex."""
    return sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def token_id(digest: str) -> str:
    """The short public name of a token: the first digits of its hash (never the token)."""
    return digest[:ID_DIGITS]


class Principal(msgspec.Struct, frozen=True):
    """Who a connection acts as: the token's entity and role.

    ``local`` marks the person at this machine (``dovecote mcp`` on stdio with no
    token): the one caller that may name a folder on it (``import vnext``), as
    their own terminal could. No token ever makes a principal local.
    """

    entity: str
    role: str
    local: bool = False


class TokenRow(msgspec.Struct, frozen=True):
    """One issued token as ``list`` shows it: never the token, only its hash."""

    id: str
    hash: str
    entity: str
    role: str
    created: str | None
    revoked: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "entity": self.entity, "role": self.role, "created": self.created,
                "revoked": self.revoked}


def issue_record(digest: str, entity: str, role: str, ts: str, by: str) -> dict[str, Any]:
    return {"ts": ts, "agent": by, "kind": ISSUE, "entity": entity, "role": role, "hash": digest}


def revoke_record(tid: str, ts: str, by: str) -> dict[str, Any]:
    return {"ts": ts, "agent": by, "kind": REVOKE, "ref": tid}


def _text(d: Mapping[str, Any], key: str) -> str | None:
    v = d.get(key)
    return v if isinstance(v, str) else None


def fold(records: Iterable[Mapping[str, Any]]) -> dict[str, TokenRow]:
    """The token table from its records, by id, in issue order.

    A record that is not well formed is skipped (the file is ours, but a hand
    edit must not lock everyone out); a revoke of an unknown id changes
    nothing; the first revoke stands.
    """
    rows: dict[str, TokenRow] = {}
    for d in records:
        kind = d.get("kind")
        if kind == ISSUE:
            digest, entity, role = _text(d, "hash"), _text(d, "entity"), _text(d, "role")
            if digest and entity and role is not None and role in ROLES and len(digest) == 64:
                tid = token_id(digest)
                if tid not in rows:
                    rows[tid] = TokenRow(tid, digest, entity, role, _text(d, "ts"))
        elif kind == REVOKE:
            row = rows.get(_text(d, "ref") or "")
            if row is not None and row.revoked is None:
                rows[row.id] = TokenRow(row.id, row.hash, row.entity, row.role, row.created, _text(d, "ts") or "?")
    return rows


def check_role(role: str) -> str:
    if role not in ROLES:
        raise Refusal("invalid_field", f"--role must be one of {', '.join(ROLES)}, not {role!r}")
    return role


def principal_of(rows: Mapping[str, TokenRow], token: str) -> Principal:
    """The principal a token stands for; ``unauthorized`` for a malformed, unknown or revoked one.

    The comparison is constant-time over the hash, so timing tells nothing about
    how close a guess came.
    """
    if not isinstance(token, str) or not token.startswith(PREFIX):
        raise Refusal("unauthorized", f"not a dovecote token (they start with {PREFIX})")
    import hmac  # here, as ``secrets`` above

    digest = token_hash(token)
    row = rows.get(token_id(digest))
    if row is None or not hmac.compare_digest(row.hash, digest):
        raise Refusal("unauthorized", "unknown token")
    if row.revoked is not None:
        raise Refusal("unauthorized", f"token {row.id} was revoked at {row.revoked}")
    return Principal(row.entity, row.role)


def authorize(principal: Principal, verb: str, target_entity: str) -> None:
    """Allow ``verb`` on ``target_entity``'s box, or refuse ``forbidden``.

    An operator may do every verb here (human gestures are not verbs a token
    reaches); an agent may send to anyone, and do the rest only in its own box.
    """
    scope = VERBS.get(verb)
    if scope is None:
        raise ValueError(f"authorize: unknown verb {verb!r}")
    if principal.role == "operator" or scope == "any" or target_entity == principal.entity:
        return
    raise Refusal(
        "forbidden", f"{principal.entity} may {verb} only in its own box, not in {target_entity}'s",
    )


def cap_trust(role: str, level: str) -> None:
    """Allow a message of trust ``level`` from a sender of ``role``, or refuse ``forbidden`` above its cap.

    ``TrustLevel`` lists the levels most trusted first; a level at or below the role's cap
    (``TRUST_CAP``) passes. A role the table does not know is capped as an agent: never more.
    """
    order = list(TrustLevel)
    cap = TRUST_CAP.get(role, TRUST_CAP["agent"])
    if order.index(TrustLevel(level)) < order.index(cap):
        raise Refusal("forbidden", f"trust_level {level} is above what a sender with the {role} role may claim "
                                   f"(at most {cap})")

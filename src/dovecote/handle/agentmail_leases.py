"""The agent-mail profile's file reservations: reserve, renew and release, over dovecote's advisory file leases.

Law: each call is a thin mapping onto a lease verb made through
``remote_leases`` with the caller's principal (``agentmail.caller``), so an
agent reserves, renews and releases only its own, an operator anyone's, as on
every other face. How their notions map:

- A reservation is a lease on one path in the project's box: each path asked
  for is its own lease, so each granted row has its own id. Their integer ids
  are the lease ids (letter ids) read as integers (``names.int_id``), and
  ``file_reservation_ids`` go back the same way.
- As theirs, a reservation is advisory: a path another agent holds is granted
  all the same and the conflicts are answered (the lease is taken
  ``advisory``; the letter records that). ``exclusive=false`` is a shared lease.
- Asking again for a path the agent holds renews that lease (same id,
  expiring at the later of its old time and now + ``ttl_seconds``), as theirs
  updates that row; a changed ``exclusive`` or ``reason`` is not rewritten.
- A renewal extends each lease from its old expiry (or now, if later) by at
  least 60 s, as theirs; ``paths`` select the agent's active leases by their
  path, in dovecote's one spelling of a glob (``./src/a.py`` is ``src/a.py``).
- A release is a letter; nothing is deleted, and releasing again releases 0.
"""

from __future__ import annotations

import math
from typing import Any

from dovecote import verbs
from dovecote.errors import Refusal
from dovecote.handle import remote_leases as rl
from dovecote.handle.agentmail import agent_entity, caller, find_project, iso
from dovecote.handle.api import Dovecote, Principal
from dovecote.model.letters import format_ts
from dovecote.model.vocab_delivery import MAX_POLICY_S
from dovecote.ops.agentmail import names
from dovecote.ops.leases.take import LeaseRow, normal_globs
from dovecote.util.timeutil import parse_time

#: The least a renewal extends by, in seconds (theirs: 60).
MIN_EXTEND = 60


def _seconds(a: dict[str, Any], field: str) -> int:
    """A duration argument, refused ``invalid_field`` past the longest a lease may run (``verbs.leases.Ttl``)."""
    n = int(a[field])
    if n > MAX_POLICY_S:
        raise Refusal("invalid_field", f"{field} {n} is over {MAX_POLICY_S} seconds")
    return n


def _who(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> tuple[Principal | None, str, str]:
    """The caller, the agent's entity and its project's name."""
    project = find_project(dc, a["project_key"])
    return caller(dc, conn, a.get("registration_token")), agent_entity(dc, project, a["agent_name"]), project.name


def _name(entity: str) -> str:
    split = names.split_entity(entity)
    return split[1] if split else entity


def _may(p: Principal | None, verb: str, entity: str, tool: str, name: str) -> None:
    """A write nothing matched is still refused to a caller the one rule refuses (no token, another's)."""
    if p is None:
        raise Refusal("unauthorized", f"{tool} requires registration_token for agent '{name}'")
    Dovecote.authorize(p, verb, entity)


def _mine(dc: Dovecote, entity: str, project: str) -> list[LeaseRow]:
    """The agent's active leases in the project (reading them is anyone's: ``remote_leases.leases``)."""
    return list(rl.leases(dc, None, verbs.Leases(project=project, entity_id=entity)).leases)


def file_reservation_paths(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> dict[str, Any]:
    """Reserve each path (granted even when another holds it; the conflicts answered beside)."""
    paths: list[str] = list(a.get("paths") or ())
    if not paths:
        raise Refusal("invalid_field", "paths list cannot be empty")
    ttl = max(1, _seconds(a, "ttl_seconds"))  # theirs grants under 60 s too
    p, entity, project = _who(dc, conn, a)
    held = {tuple(x.globs): x for x in _mine(dc, entity, project)}
    granted: list[dict[str, Any]] = []
    conflicts: list[dict[str, Any]] = []
    for path in paths:
        glob = normal_globs((path,))[0]
        mine = held.get((glob,))
        if mine is not None:
            row = rl.lease_renew(dc, p, verbs.LeaseRenew(entity_id=entity, lease_ids=(mine.id,),
                                                         ttl=ttl, project=project)).leases[0]
            granted.append(_granted(row))
            continue
        taken = rl.lease_take(dc, p, verbs.LeaseTake(
            entity_id=entity, globs=(path,), ttl=ttl, shared=not a["exclusive"],
            reason=a.get("reason") or None, project=project, advisory=True))
        granted.append(_granted(taken.lease))
        held[(glob,)] = taken.lease
        if taken.conflicts:
            conflicts.append({"path": path, "holders": [
                {"agent": _name(c.holder), "path_pattern": c.glob, "exclusive": c.exclusive,
                 "expires_ts": iso(c.expires)} for c in taken.conflicts]})
    return {"granted": granted, "conflicts": conflicts}


def _granted(row: LeaseRow) -> dict[str, Any]:
    return {"id": names.int_id(row.id), "path_pattern": row.globs[0] if len(row.globs) == 1 else row.globs,
            "exclusive": row.exclusive, "reason": row.reason or "", "expires_ts": iso(row.expires)}


def _chosen(rows: list[LeaseRow], a: dict[str, Any]) -> list[LeaseRow]:
    """The agent's active leases the filters name (``paths``, ``file_reservation_ids``; none given: all)."""
    paths, ids = a.get("paths"), a.get("file_reservation_ids")
    for field, given in (("paths", paths), ("file_reservation_ids", ids)):
        if given is not None and not given:
            raise Refusal("invalid_field", f"{field} cannot be an empty list (leave it out for all)")
    globs = set(normal_globs(tuple(paths))) if paths else None
    wanted = {names.letter_id(n) for n in ids} if ids else None
    return [x for x in rows if (globs is None or set(x.globs) <= globs) and (wanted is None or x.id in wanted)]


def renew_file_reservations(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> dict[str, Any]:
    """Extend the agent's active reservations (all, or those named) from their old expiry."""
    p, entity, project = _who(dc, conn, a)
    extend = max(MIN_EXTEND, _seconds(a, "extend_seconds"))
    out: list[dict[str, Any]] = []
    chosen = _chosen(_mine(dc, entity, project), a)
    if not chosen:
        _may(p, "lease_renew", entity, "renew_file_reservations", a["agent_name"])
    for x in chosen:
        old = parse_time(x.expires)
        left = math.ceil((old - dc.context.now()).total_seconds()) if old else 0
        row = rl.lease_renew(dc, p, verbs.LeaseRenew(entity_id=entity, lease_ids=(x.id,),
                                                     ttl=min(MAX_POLICY_S, max(0, left) + extend),
                                                     project=project)).leases[0]
        out.append({"id": names.int_id(x.id), "path_pattern": x.globs[0] if len(x.globs) == 1 else x.globs,
                    "old_expires_ts": iso(x.expires), "new_expires_ts": iso(row.expires)})
    return {"renewed": len(out), "file_reservations": out}


def release_file_reservations(dc: Dovecote, conn: Principal | None, a: dict[str, Any]) -> dict[str, Any]:
    """Release the agent's active reservations (all, or those named); again, 0."""
    p, entity, project = _who(dc, conn, a)
    chosen = _chosen(_mine(dc, entity, project), a)
    if not chosen:
        _may(p, "lease_release", entity, "release_file_reservations", a["agent_name"])
        return {"released": 0, "released_at": iso(format_ts(dc.context.now()))}
    done = rl.lease_release(dc, p, verbs.LeaseRelease(entity_id=entity, lease_ids=tuple(x.id for x in chosen),
                                                      project=project))
    at = next((r.released_at for r in done.leases if r.released_at), None)
    return {"released": done.count, "released_at": iso(at or format_ts(dc.context.now()))}

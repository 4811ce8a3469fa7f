"""Agent profiles of the agent-mail profile: what ``register_agent`` and ``set_contact_policy`` record.

Law: a profile is a letter (kind ``agent_profile``) in the agent's own entity box,
appended and fsynced like any letter; the profile now is derived by reading them
(``profile``): the first one's time is the agent's inception, the last one's
fields are its program, model, task and contact policy now, and its time the last
(re)registration. The inbox fold leaves letters of this kind alone, so they are
never mail. Nothing is rewritten: a change is one more letter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from dovecote.errors import StoreError
from dovecote.model.addresses import entity
from dovecote.model.letters import canonical_line, format_ts

if TYPE_CHECKING:
    from dovecote.ops.context import Context

KIND = "agent_profile"
#: The fields a profile letter carries besides ts, agent and kind.
FIELDS = ("entity", "project", "human_key", "name", "program", "model", "task_description", "attachments_policy",
          "contact_policy")


class Profile(msgspec.Struct, frozen=True):
    """An agent's profile now: the last profile letter's fields, the first one's time, the last one's time."""

    entity: str
    project: str
    human_key: str
    name: str
    program: str
    model: str
    task_description: str
    attachments_policy: str
    contact_policy: str
    inception_ts: str
    last_active_ts: str


def profile(ctx: Context, entity_id: str) -> Profile | None:
    """The profile of ``entity_id`` from its box's profile letters; None when it has none."""
    found = [d for d in (x.data() for x in ctx.store.read(entity(entity_id)).letters) if d.get("kind") == KIND]
    if not found:
        return None
    last = found[-1]
    return Profile(**{f: str(last.get(f) or "") for f in FIELDS},
                   inception_ts=str(found[0].get("ts")), last_active_ts=str(last.get("ts")))


def record(ctx: Context, fields: dict[str, Any]) -> Profile:
    """Append a profile letter with ``fields`` (every one of ``FIELDS``) to the agent's box; the profile after."""
    letter = {"ts": format_ts(ctx.now()), "agent": ctx.actor.author(), "kind": KIND,
              **{f: fields[f] for f in FIELDS}}
    where = entity(fields["entity"])
    try:
        ctx.store.append(where, [canonical_line(letter)])
    except OSError as e:
        raise StoreError(f"cannot append to {where}: {e.strerror or e}") from e
    found = profile(ctx, fields["entity"])
    assert found is not None  # just appended
    return found
